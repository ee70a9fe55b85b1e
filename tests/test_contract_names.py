"""Every public name the contract fixes imports from the path the contract gives it."""

from __future__ import annotations

import importlib

import pytest

CONTRACT = {
    "turnstate_app.errors": [
        "TurnStateError",
        "InteractionConfigurationError",
        "PauseCheckpointNotFoundError",
        "CheckpointLostError",
        "PayloadBindingError",
        "PauseAlreadyAnsweredError",
        "PauseExpiredError",
        "AnswerValidationError",
    ],
    "turnstate_app.checkpoints": [
        "ASK_USER_REQUEST_KEY_PREFIX",
        "INTERRUPT_PAYLOAD_KEY_PREFIX",
        "payload_key",
    ],
    "turnstate_app.contracts": ["PauseClaims", "CheckpointCommandPort"],
    "turnstate_app.turnstate": [
        "TURN_STATE_KEY_PREFIX",
        "turn_state_key",
        "TurnCheckpoint",
        "TurnCheckpointStore",
        "stamped_turn",
    ],
    "turnstate_app.durability": ["require_durable_consumption"],
    "turnstate_app.ports": [
        "ModelCheckpointCommandPort",
        "InMemoryCheckpointCommandPort",
        "get_default_store",
    ],
    "turnstate_app.models": ["CheckpointMetadata", "Pause", "UnresumablePause"],
    "turnstate_app.pauses": [
        "mint_pause",
        "amint_pause",
        "resume_pause",
        "aresume_pause",
        "MintedPause",
        "ResumedPause",
        "pause_minted",
        "pause_answered",
        "ContinueResult",
    ],
    "turnstate_app.contrib.langgraph": [
        "DjangoCheckpointSaver",
        "pause_interrupts",
        "apause_interrupts",
        "continue_graph",
        "acontinue_graph",
    ],
    "turnstate_app.contrib.pydantic_ai": [
        "DjangoConversationStore",
        "pause_deferred",
        "continue_agent",
        "acontinue_agent",
    ],
    "turnstate_app.contrib.openai_agents": [
        "DjangoSession",
        "pause_approvals",
        "apause_approvals",
        "continue_run",
        "acontinue_run",
    ],
}


@pytest.mark.parametrize(
    ("module", "name"), [(module, name) for module, names in CONTRACT.items() for name in names]
)
def test_contract_name_imports_from_its_contract_path(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name), f"{module}.{name}"


def test_the_frozen_keys_keep_their_values() -> None:
    from turnstate_app.checkpoints import ASK_USER_REQUEST_KEY_PREFIX, INTERRUPT_PAYLOAD_KEY_PREFIX
    from turnstate_app.turnstate import TURN_STATE_KEY_PREFIX

    assert ASK_USER_REQUEST_KEY_PREFIX == "ask_user_request:"
    assert INTERRUPT_PAYLOAD_KEY_PREFIX == "interrupt_payload:"
    assert TURN_STATE_KEY_PREFIX == "turn_state:"


def test_the_keys_module_and_the_contract_paths_agree() -> None:
    from turnstate_app import checkpoints, keys, turnstate

    assert checkpoints.payload_key is keys.payload_key
    assert turnstate.turn_state_key is keys.turn_state_key
    assert checkpoints.ASK_USER_REQUEST_KEY_PREFIX is keys.ASK_USER_REQUEST_KEY_PREFIX


def test_every_integration_returns_the_one_continue_result() -> None:
    """One ``ContinueResult`` class, shared by every integration (contract section 3)."""
    import typing

    from turnstate_app.contrib.langgraph import acontinue_graph, continue_graph
    from turnstate_app.contrib.openai_agents import acontinue_run, continue_run
    from turnstate_app.contrib.pydantic_ai import acontinue_agent, continue_agent
    from turnstate_app.pauses import ContinueResult

    for continues in (
        continue_graph,
        acontinue_graph,
        continue_agent,
        acontinue_agent,
        continue_run,
        acontinue_run,
    ):
        assert typing.get_type_hints(continues)["return"] is ContinueResult, continues


def test_answer_validation_error_is_a_turnstate_error_and_a_value_error() -> None:
    from turnstate_app.errors import AnswerValidationError, TurnStateError

    assert issubclass(AnswerValidationError, TurnStateError)
    assert issubclass(AnswerValidationError, ValueError)
