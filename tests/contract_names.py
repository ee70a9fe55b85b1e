"""Every name the public contract fixes, kept with the project (``tests/test_contract_names.py`` checks each).

Grouped by what a name is, so each group is checked as what it is: imports that resolve,
callables with the contract's parameters, error classes with their bases, settings with their
defaults, URL names that reverse, commands with their options, status codes, metric names.
``NOT_PROVIDED`` names the parts of the contract this release does not ship yet: their
checks are expected to fail until it does (and then fail the run, so they are moved back).
"""

from __future__ import annotations

from typing import Any

# -- section 1: the pure core --------------------------------------------------------------

# module -> the public names it exports.
MODULE_NAMES: dict[str, tuple[str, ...]] = {
    "turnstate_app.errors": (
        "TurnStateError",
        "InteractionConfigurationError",
        "PauseCheckpointNotFoundError",
        "CheckpointLostError",
        "PayloadBindingError",
        "PauseAlreadyAnsweredError",
        "PauseExpiredError",
        "AnswerValidationError",
        "PauseNotAnsweredError",
        "ContinuationRefused",
    ),
    "turnstate_app.checkpoints": (
        "ASK_USER_REQUEST_KEY_PREFIX",
        "INTERRUPT_PAYLOAD_KEY_PREFIX",
        "payload_key",
    ),
    "turnstate_app.contracts": ("PauseClaims", "CheckpointCommandPort"),
    "turnstate_app.turnstate": (
        "TURN_STATE_KEY_PREFIX",
        "turn_state_key",
        "TurnCheckpoint",
        "TurnCheckpointStore",
        "stamped_turn",
    ),
    "turnstate_app.durability": ("require_durable_consumption",),
    "turnstate_app.ports": (
        "ModelCheckpointCommandPort",
        "InMemoryCheckpointCommandPort",
        "get_default_store",
    ),
    "turnstate_app.models": ("CheckpointMetadata", "Pause", "UnresumablePause"),
    "turnstate_app.pauses": (
        "mint_pause",
        "amint_pause",
        "resume_pause",
        "aresume_pause",
        "MintedPause",
        "ResumedPause",
        "pause_minted",
        "pause_answered",
        "resumed",
        "aresumed",
        "continue_once",
        "acontinue_once",
        "Continuation",
        "ContinuationRefused",
        "ContinueResult",
    ),
    "turnstate_app.handoff": ("enqueue_continuation",),
    "turnstate_app.tasks": ("continue_pause",),
    "turnstate_app.contrib.langgraph": (
        "DjangoCheckpointSaver",
        "pause_interrupts",
        "apause_interrupts",
        "continue_graph",
        "acontinue_graph",
    ),
    "turnstate_app.contrib.pydantic_ai": (
        "DjangoConversationStore",
        "pause_deferred",
        "continue_agent",
        "acontinue_agent",
    ),
    "turnstate_app.contrib.openai_agents": (
        "DjangoSession",
        "pause_approvals",
        "apause_approvals",
        "continue_run",
        "acontinue_run",
    ),
    "turnstate_app.contrib.google_adk": (
        "DjangoSessionService",
        "pause_confirmations",
        "apause_confirmations",
        "continue_invocation",
        "acontinue_invocation",
    ),
    "turnstate_app.notify": ("email_owner",),
    "turnstate_app.pages.urls": ("urlpatterns",),
}

# error class -> its bases, as the contract gives them (names in turnstate_app.errors or builtins).
ERRORS: dict[str, tuple[str, ...]] = {
    "turnstate_app.errors.TurnStateError": ("Exception",),
    "turnstate_app.errors.InteractionConfigurationError": ("TurnStateError",),
    "turnstate_app.errors.PauseCheckpointNotFoundError": ("TurnStateError",),
    "turnstate_app.errors.CheckpointLostError": ("TurnStateError",),
    "turnstate_app.errors.PayloadBindingError": ("TurnStateError",),
    "turnstate_app.errors.PauseAlreadyAnsweredError": ("TurnStateError",),
    "turnstate_app.errors.PauseExpiredError": ("TurnStateError",),
    "turnstate_app.errors.AnswerValidationError": ("TurnStateError", "ValueError"),
    "turnstate_app.errors.PauseNotAnsweredError": ("TurnStateError",),
    "turnstate_app.pauses.ContinuationRefused": ("TurnStateError",),
}

# dotted name -> its value.
CONSTANTS: dict[str, Any] = {
    "turnstate_app.checkpoints.ASK_USER_REQUEST_KEY_PREFIX": "ask_user_request:",
    "turnstate_app.checkpoints.INTERRUPT_PAYLOAD_KEY_PREFIX": "interrupt_payload:",
    "turnstate_app.turnstate.TURN_STATE_KEY_PREFIX": "turn_state:",
}

# The stored keys of one pause, for claims with tool_call_id "call-1", interrupt_id "int-1", jti "j-1".
STORED_KEYS: dict[str, str] = {
    "ask_user_request:<tool_call_id>": "ask_user_request:call-1",
    "interrupt_payload:<interrupt_id>": "interrupt_payload:int-1",
    "turn_state:<jti>": "turn_state:j-1",
    "answer:<jti>": "answer:j-1",
}

# dotted callable -> its parameters and return as the contract writes them. A parameter the
# contract lists must be there, of the same kind, with the same default; any other must be
# optional, so every call the contract shows works.
SIGNATURES: dict[str, str] = {
    "turnstate_app.checkpoints.payload_key": "(claims) -> str",
    "turnstate_app.turnstate.turn_state_key": "(claims)",
    "turnstate_app.turnstate.TurnCheckpoint.encode": "() -> str",
    "turnstate_app.turnstate.TurnCheckpoint.decode": "(raw: str | bytes) -> TurnCheckpoint",
    "turnstate_app.turnstate.TurnCheckpointStore": "(*, commands=None)",
    "turnstate_app.turnstate.TurnCheckpointStore.find": "(claims)",
    "turnstate_app.turnstate.TurnCheckpointStore.load": "(claims)",
    "turnstate_app.turnstate.TurnCheckpointStore.record": "(claims, checkpoint) -> bool",
    "turnstate_app.turnstate.stamped_turn": "(state, claims) -> TurnCheckpoint",
    "turnstate_app.durability.require_durable_consumption": "(commands) -> None",
    "turnstate_app.ports.get_default_store": "() -> TurnCheckpointStore",
    "turnstate_app.pauses.mint_pause": (
        "(*, run_id, session_id, thread_id, checkpoint_id, scope_hash, tool_call_id=None, interrupt_id=None,"
        " name=None, request: dict, prompt: str, messages: list[dict], owner=None, answer_schema=None,"
        " group=None, shown=None) -> MintedPause"
    ),
    "turnstate_app.pauses.amint_pause": "(**kwargs) -> MintedPause",
    "turnstate_app.pauses.resume_pause": "(token, answer, *, user=None) -> ResumedPause",
    "turnstate_app.pauses.aresume_pause": "(token, answer, *, user=None) -> ResumedPause",
    "turnstate_app.pauses.resumed": "(jti) -> ResumedPause",
    "turnstate_app.pauses.aresumed": "(jti) -> ResumedPause",
    "turnstate_app.pauses.continue_once": "(resumed, run, *, store=None, still_shown=None) -> ContinueResult",
    "turnstate_app.pauses.acontinue_once": (
        "(resumed, run, *, store=None, still_shown=None) -> ContinueResult"
    ),
    "turnstate_app.pauses.Continuation.mint_next": "(**kwargs)",
    "turnstate_app.pauses.Continuation.amint_next": "(**kwargs)",
    "turnstate_app.pauses.ContinuationRefused": "(reason)",
    "turnstate_app.handoff.enqueue_continuation": "(resumed)",
    "turnstate_app.contracts.CheckpointCommandPort.read_metadata": (
        "(*, thread_id, checkpoint_id, key) -> str | None"
    ),
    "turnstate_app.contracts.CheckpointCommandPort.write_metadata": (
        "(*, thread_id, checkpoint_id, key, value: str, task_id: str | None) -> None"
    ),
    "turnstate_app.contracts.CheckpointCommandPort.claim_metadata": (
        "(*, thread_id, checkpoint_id, key, value: str, task_id: str | None) -> bool"
    ),
    "turnstate_app.contrib.langgraph.DjangoCheckpointSaver": "(*, using: str | None = None, serde=None)",
    "turnstate_app.contrib.langgraph.pause_interrupts": (
        "(graph, config, *, run_id, session_id, owner=None) -> list[MintedPause]"
    ),
    "turnstate_app.contrib.langgraph.apause_interrupts": (
        "(graph, config, *, run_id, session_id, owner=None) -> list[MintedPause]"
    ),
    "turnstate_app.contrib.langgraph.continue_graph": "(graph, resumed: ResumedPause) -> ContinueResult",
    "turnstate_app.contrib.langgraph.acontinue_graph": "(graph, resumed: ResumedPause) -> ContinueResult",
    "turnstate_app.contrib.pydantic_ai.DjangoConversationStore": "(*, using: str | None = None)",
    "turnstate_app.contrib.pydantic_ai.pause_deferred": (
        "(result, *, store, run_id, session_id, owner=None, owners=None, agent=None) -> list[MintedPause]"
    ),
    "turnstate_app.contrib.pydantic_ai.continue_agent": (
        "(agent, resumed: ResumedPause, *, store) -> ContinueResult"
    ),
    "turnstate_app.contrib.pydantic_ai.acontinue_agent": (
        "(agent, resumed: ResumedPause, *, store) -> ContinueResult"
    ),
    "turnstate_app.contrib.openai_agents.DjangoSession": "(session_id, *, using: str | None = None)",
    "turnstate_app.contrib.openai_agents.pause_approvals": (
        "(result, *, agent, run_id, session_id, owner=None, owners=None) -> list[MintedPause]"
    ),
    "turnstate_app.contrib.openai_agents.apause_approvals": (
        "(result, *, agent, run_id, session_id, owner=None, owners=None) -> list[MintedPause]"
    ),
    "turnstate_app.contrib.openai_agents.continue_run": (
        "(agent, resumed: ResumedPause, *, session=None) -> ContinueResult"
    ),
    "turnstate_app.contrib.openai_agents.acontinue_run": (
        "(agent, resumed: ResumedPause, *, session=None) -> ContinueResult"
    ),
    "turnstate_app.contrib.google_adk.DjangoSessionService": "(*, using: str | None = None)",
    "turnstate_app.contrib.google_adk.pause_confirmations": (
        "(events, *, agent, user_id, session_id, invocation_id, owner=None, owners=None) -> list[MintedPause]"
    ),
    "turnstate_app.contrib.google_adk.apause_confirmations": (
        "(events, *, agent, user_id, session_id, invocation_id, owner=None, owners=None) -> list[MintedPause]"
    ),
    "turnstate_app.contrib.google_adk.continue_invocation": (
        "(runner, resumed: ResumedPause) -> ContinueResult"
    ),
    "turnstate_app.contrib.google_adk.acontinue_invocation": (
        "(runner, resumed: ResumedPause) -> ContinueResult"
    ),
    "turnstate_app.notify.email_owner": "(pause, link)",
}

# Coroutine functions (``async def``, an "async twin").
ASYNC: tuple[str, ...] = (
    "turnstate_app.contracts.CheckpointCommandPort.read_metadata",
    "turnstate_app.contracts.CheckpointCommandPort.write_metadata",
    "turnstate_app.contracts.CheckpointCommandPort.claim_metadata",
    "turnstate_app.ports.ModelCheckpointCommandPort.read_metadata",
    "turnstate_app.ports.ModelCheckpointCommandPort.write_metadata",
    "turnstate_app.ports.ModelCheckpointCommandPort.claim_metadata",
    "turnstate_app.ports.InMemoryCheckpointCommandPort.read_metadata",
    "turnstate_app.ports.InMemoryCheckpointCommandPort.write_metadata",
    "turnstate_app.ports.InMemoryCheckpointCommandPort.claim_metadata",
    "turnstate_app.turnstate.TurnCheckpointStore.find",
    "turnstate_app.turnstate.TurnCheckpointStore.load",
    "turnstate_app.turnstate.TurnCheckpointStore.record",
    "turnstate_app.pauses.amint_pause",
    "turnstate_app.pauses.aresume_pause",
    "turnstate_app.pauses.aresumed",
    "turnstate_app.pauses.acontinue_once",
    "turnstate_app.pauses.Continuation.amint_next",
    "turnstate_app.contrib.langgraph.apause_interrupts",
    "turnstate_app.contrib.langgraph.acontinue_graph",
    "turnstate_app.contrib.pydantic_ai.acontinue_agent",
    "turnstate_app.contrib.openai_agents.apause_approvals",
    "turnstate_app.contrib.openai_agents.acontinue_run",
    "turnstate_app.contrib.google_adk.apause_confirmations",
    "turnstate_app.contrib.google_adk.acontinue_invocation",
)

# class -> the attributes its instances offer (dataclass and pydantic fields, properties, methods).
ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "turnstate_app.contracts.CheckpointCommandPort": (
        "durable",
        "read_metadata",
        "write_metadata",
        "claim_metadata",
    ),
    "turnstate_app.turnstate.TurnCheckpoint": ("encode", "decode"),
    "turnstate_app.turnstate.TurnCheckpointStore": ("wired", "find", "load", "record"),
    "turnstate_app.pauses.MintedPause": ("token", "claims", "resumable"),
    "turnstate_app.pauses.ResumedPause": ("claims", "answer", "checkpoint"),
    "turnstate_app.pauses.Continuation": ("resumed", "members", "mint_next", "amint_next"),
    "turnstate_app.pauses.ContinuationRefused": ("reason",),
    "turnstate_app.pauses.ContinueResult": ("ran", "output", "minted", "reason"),
    "turnstate_app.contrib.langgraph.DjangoCheckpointSaver": (
        "delete_thread",
        "adelete_thread",
        "delete_for_runs",
        "adelete_for_runs",
        "copy_thread",
        "acopy_thread",
        "prune",
        "aprune",
    ),
}

# pydantic model -> {field: (annotation, default)}; REQUIRED marks a field without a default.
REQUIRED = "<required>"
PYDANTIC_FIELDS: dict[str, dict[str, tuple[str, Any]]] = {
    "turnstate_app.contracts.PauseClaims": {
        "jti": ("str", ""),
        "run_id": ("str", REQUIRED),
        "session_id": ("str", REQUIRED),
        "thread_id": ("str", REQUIRED),
        "checkpoint_id": ("str", REQUIRED),
        "scope_hash": ("str", REQUIRED),
        "tool_call_id": ("str | None", None),
        "interrupt_id": ("str | None", None),
        "name": ("str | None", None),
    },
    "turnstate_app.turnstate.TurnCheckpoint": {
        "run_id": ("str", REQUIRED),
        "session_id": ("str", REQUIRED),
        "thread_id": ("str", REQUIRED),
        "checkpoint_id": ("str", REQUIRED),
        "scope_hash": ("str", REQUIRED),
        "tool_call_id": ("str | None", REQUIRED),
        "interrupt_id": ("str | None", REQUIRED),
        "name": ("str | None", REQUIRED),
        "prompt": ("str", REQUIRED),
        "messages": ("list[dict[str, Any]]", REQUIRED),
    },
}

# Ports: dotted class -> ``durable``.
PORTS: dict[str, bool] = {
    "turnstate_app.ports.ModelCheckpointCommandPort": True,
    "turnstate_app.ports.InMemoryCheckpointCommandPort": False,
}

# -- section 2: the Django parts -----------------------------------------------------------

# TURNSTATE key -> its default.
SETTINGS: dict[str, Any] = {
    "PORT": "turnstate_app.ports.ModelCheckpointCommandPort",
    "REQUIRE_DURABLE": True,
    "TOKEN_MAX_AGE": 7 * 24 * 3600,
    "MAX_VALUE_BYTES": 8 * 1024 * 1024,
    "RESUME_HANDLER": None,
    "ENCRYPTION_KEYS": [],
    "ENCRYPTION_KEY_RING": None,
    "AGENTS": {},
    "HANDOFF_TIMEOUT": 5,
    "STALLED_AFTER": 900,
    "CONTINUATION_ATTEMPTS": 3,
    "NOTIFY": None,
    "PAGES_BASE_URL": None,
}

# A check id and the TURNSTATE that raises it.
CHECK_IDS: dict[str, Any] = {"turnstate.E001": "not a dict"}

# model label -> its contract fields.
MODEL_FIELDS: dict[str, tuple[str, ...]] = {
    "turnstate_app.CheckpointMetadata": (
        "thread_id",
        "checkpoint_id",
        "key",
        "value",
        "task_id",
        "created_at",
        "updated_at",
    ),
    "turnstate_app.Pause": (
        "jti",
        "run_id",
        "session_id",
        "thread_id",
        "checkpoint_id",
        "scope_hash",
        "tool_call_id",
        "interrupt_id",
        "name",
        "request_key",
        "resumable",
        "status",
        "owner",
        "created_at",
        "answered_at",
        "expires_at",
        "handed_off_at",
        "answer_schema",
        "group",
    ),
}
PAUSE_STATUSES: tuple[str, ...] = ("pending", "answered", "expired")
UNIQUE_TOGETHER: dict[str, tuple[str, ...]] = {
    "turnstate_app.CheckpointMetadata": ("thread_id", "checkpoint_id", "key"),
}
PROXIES: dict[str, str] = {"turnstate_app.UnresumablePause": "turnstate_app.CheckpointMetadata"}
SIGNALS: tuple[str, ...] = ("turnstate_app.pauses.pause_minted", "turnstate_app.pauses.pause_answered")
TASKS: tuple[str, ...] = ("turnstate_app.tasks.continue_pause",)

# REST: path("api/turnstate/", include("turnstate_app.urls")), namespace "turnstate".
API_ROOT = "/api/turnstate/"
URLCONF = "turnstate_app.urls"
URL_NAMESPACE = "turnstate"
# URL name -> (path under the root, kwargs to reverse it).
API_URLS: dict[str, tuple[str, dict[str, Any]]] = {
    "pause-list": ("pauses/", {}),
    "pause-detail": ("pauses/<jti>/", {"jti": "j-1"}),
    "pause-resume": ("pauses/resume/", {}),
    "pause-unresumable": ("pauses/unresumable/", {}),
    "checkpoint-list": ("checkpoints/", {}),
    "checkpoint-detail": ("checkpoints/<id>/", {"pk": 7}),
    "status": ("status/", {}),
}
PAGE_KEYS: tuple[str, ...] = ("next", "previous", "results")
# view -> its filters.
API_FILTERS: dict[str, tuple[str, ...]] = {
    "turnstate_app.api.views.PauseViewSet": ("status", "resumable", "thread_id", "session_id", "run_id"),
    "turnstate_app.api.views.CheckpointViewSet": ("thread_id", "checkpoint_id", "key_prefix"),
}
RESUME_BODY: tuple[str, ...] = ("token", "answer")
RESUMED_BODY: dict[str, Any] = {"jti": str, "status": "answered", "resumable": bool}
PAUSE_DETAIL_KEYS: tuple[str, ...] = ("request", "answer_schema")
CHECKPOINT_DETAIL_KEYS: tuple[str, ...] = ("value",)
ERROR_CODE_KEY = "code"
# error -> (status, code); code None where the contract fixes only the status.
API_ERRORS: dict[str, tuple[int, str | None]] = {
    "turnstate_app.errors.TokenSignatureError": (400, "invalid_token"),
    "turnstate_app.errors.PayloadBindingError": (400, "record_mismatch"),
    "django.core.exceptions.PermissionDenied": (403, None),
    "turnstate_app.errors.PauseCheckpointNotFoundError": (404, None),
    "turnstate_app.errors.PauseAlreadyAnsweredError": (409, "already_answered"),
    "turnstate_app.errors.PauseExpiredError": (410, "expired"),
    "django.db.OperationalError": (503, "unavailable"),
    "turnstate_app.errors.AnswerValidationError": (400, None),
}

# Admin: model label -> its change list.
ADMIN_CHANGELISTS: dict[str, str] = {
    "turnstate_app.CheckpointMetadata": "/admin/turnstate_app/checkpointmetadata/",
    "turnstate_app.Pause": "/admin/turnstate_app/pause/",
    "turnstate_app.UnresumablePause": "/admin/turnstate_app/unresumablepause/",
}

# Management command -> its options.
COMMANDS: dict[str, tuple[str, ...]] = {
    "turnstate_unresumable": ("--json",),
    "turnstate_purge": ("--older-than", "--dry-run", "--include-pending", "--batch-size", "--thread"),
    "turnstate_redeliver": ("--older-than", "--jti", "--dry-run"),
    "turnstate_rotate_keys": ("--batch-size", "--dry-run"),
    "turnstate_status": ("--json", "--max-pending-age", "--max-stalled"),
}
STATUS_KEYS: tuple[str, ...] = (
    "pending",
    "oldest_pending_age_seconds",
    "awaiting_handoff",
    "stalled",
    "unresumable",
    "failed_groups",
    "failed_continuations",
)
# Django's own commands the contract sends people to: manage.py check, manage.py help NAME.
DJANGO_COMMANDS: tuple[str, ...] = ("check",)
HELP_ARGUMENTS: tuple[str, ...] = ("manage.py", "help", "--help")

# Observability: the metric names.
METRICS: tuple[str, ...] = (
    "turnstate.pauses.minted",
    "turnstate.pauses.answered",
    "turnstate.pauses.expired",
    "turnstate.pauses.refused",
    "turnstate.pause.answer_delay",
    "turnstate.continuation.delay",
    "turnstate.handoff.failures",
    "turnstate.continuations.stalled",
    "turnstate.notify.failures",
)
METRIC_ATTRIBUTES: tuple[str, ...] = ("reason",)

# The callables a project hands the lifecycle -> what each is called with.
CALLBACKS: dict[str, tuple[str, str, str]] = {
    "run(continuation)": ("turnstate_app.pauses.continue_once", "run", "Continuation"),
    "still_shown(resumed)": ("turnstate_app.pauses.continue_once", "still_shown", "ResumedPause"),
}

# Pages: path("answers/", include("turnstate_app.pages.urls")), namespace "turnstate_pages".
PAGES_ROOT = "/answers/"
PAGES_URLCONF = "turnstate_app.pages.urls"
PAGES_NAMESPACE = "turnstate_pages"
PAGE_URLS: dict[str, tuple[str, dict[str, Any]]] = {
    "inbox": ("", {}),
    "pause": ("<jti>/", {"jti": "j-1"}),
    "answer": ("t/<token>/", {"token": "t-1"}),
}
PAGE_QUERY: tuple[str, ...] = ("?owner=<user id>",)
PAGE_FORM_FIELDS: tuple[str, ...] = ("decision", "reason", "answer", "answer_json")
PAGE_DECISIONS: tuple[str, ...] = ("approve", "reject")
PAGE_REQUEST_KEYS: tuple[str, ...] = ('request["question"]', "message")
TEMPLATES: tuple[str, ...] = (
    "turnstate_app/pages/inbox.html",
    "turnstate_app/pages/pause.html",
    "turnstate_app/pages/outcome.html",
    "turnstate_app/email/pause_subject.txt",
    "turnstate_app/email/pause_body.txt",
)
NOTIFY_PATH = "turnstate_app.notify.email_owner"

# -- section 3: the integrations -------------------------------------------------------------

# app to add to INSTALLED_APPS -> its extra.
INTEGRATIONS: dict[str, str] = {
    "turnstate_app.contrib.langgraph": "langgraph",
    "turnstate_app.contrib.pydantic_ai": "pydantic-ai",
    "turnstate_app.contrib.openai_agents": "openai-agents",
    "turnstate_app.contrib.google_adk": "google-adk",
}
# extra -> a requirement it must name.
EXTRAS: dict[str, str] = {"otel": "opentelemetry-api"}
# our class -> the framework class it is.
FRAMEWORK_BASES: dict[str, str] = {
    "turnstate_app.contrib.langgraph.DjangoCheckpointSaver": "langgraph.checkpoint.base.BaseCheckpointSaver",
    "turnstate_app.contrib.pydantic_ai.DjangoConversationStore": (
        "pydantic_ai.conversation_store.ConversationStore"
    ),
    "turnstate_app.contrib.openai_agents.DjangoSession": "agents.memory.session.SessionABC",
    "turnstate_app.contrib.google_adk.DjangoSessionService": "google.adk.sessions.BaseSessionService",
}
LANGGRAPH_DEFAULT_NAME = "LangGraph"
LANGGRAPH_NAMING_HINT = "compile(name="
GRAPH_NAME_ATTRIBUTE = "graph.name"
AGENT_NAME_ATTRIBUTE = "agent.name"
APPROVAL_ANSWERS: tuple[dict[str, Any], ...] = ({"approved": True}, {"approved": False})
APPROVAL_KEYS: tuple[str, ...] = ("override_args", "message")
CONFIRMATION_ANSWER: dict[str, Any] = {"confirmed": bool}
CONFIRMATION_KEYS: tuple[str, ...] = ("payload", "adk_request_confirmation")
# The purge option that erases a thread whatever its pauses, and the saver methods that delete one.
THREAD_ERASURE: tuple[str, ...] = ("turnstate_purge --thread", "delete_thread", "delete_for_runs", "prune")

# The names of Django, Python and the frameworks the contract builds on -> where each is.
EXTERNAL_NAMES: dict[str, str] = {
    "django.core.exceptions.PermissionDenied": "django.core.exceptions.PermissionDenied",
    "CaptureQueriesContext": "django.test.utils.CaptureQueriesContext",
    "execute_wrapper": "django.db.backends.base.base.BaseDatabaseWrapper.execute_wrapper",
    "SECRET_KEY": "django.conf.global_settings.SECRET_KEY",
    "SECRET_KEY_FALLBACKS": "django.conf.global_settings.SECRET_KEY_FALLBACKS",
    "DEBUG": "django.conf.global_settings.DEBUG",
    "INSTALLED_APPS": "django.conf.global_settings.INSTALLED_APPS",
    "typing.Protocol": "typing.Protocol",
    "ValueError": "builtins.ValueError",
    "BaseCheckpointSaver": "langgraph.checkpoint.base.BaseCheckpointSaver",
    "ConversationStore": "pydantic_ai.conversation_store.ConversationStore",
    "Session": "agents.memory.session.Session",
    "RunState": "agents.RunState",
    "BaseSessionService": "google.adk.sessions.BaseSessionService",
}

# Dotted paths the contract gives, each importable.
IMPORT_PATHS: tuple[str, ...] = (
    "turnstate_app.models.CheckpointMetadata",
    "turnstate_app.errors.AnswerValidationError",
    "turnstate_app.handoff.enqueue_continuation",
    "turnstate_app.tasks.continue_pause",
    "turnstate_app.ports.ModelCheckpointCommandPort",
    "turnstate_app.notify.email_owner",
)
# Class-qualified names the contract uses -> their module.
QUALIFIED: dict[str, str] = {"TurnCheckpoint.decode": "turnstate_app.turnstate"}
# The settings dict.
SETTINGS_NAME = "TURNSTATE"
# How a project mounts the REST API and the pages.
API_INCLUDE = 'path("api/turnstate/", include("turnstate_app.urls"))'
PAGES_INCLUDE = 'path("answers/", include("turnstate_app.pages.urls"))'

# -- what the contract does not ship yet -----------------------------------------------------

# Parts of the contract this release does not provide; their checks are expected to fail.
NOT_PROVIDED: dict[str, str] = {
    "openai_agents.override_args": (
        "the OpenAI Agents bridge refuses override_args: "
        "the SDK refuses a run state whose arguments were edited"
    ),
}

# Words the contract puts in backticks that name nothing: placeholders, Python's own words,
# literals, a note inside a code span, the path of the behaviour notes.
NOT_NAMES: frozenset[str] = frozenset(
    {
        "DAYS",
        "N",
        "S",
        "ID",
        "NAME",
        "None",
        "True",
        "False",
        "str",
        "bool",
        "dict",
        "list",
        "Any",
        "async",
        "def",
        "kwargs",
        "true",
        "false",
        "any",
        "JSON",
        "null",
        "when",
        "none",
        "shared/seed/turnstate-module.txt",
    }
)


def not_provided(*names: str) -> str | None:
    """Why one of ``names`` is not provided yet (a prefix of a dotted name counts), or None."""
    for name in names:
        for part, reason in NOT_PROVIDED.items():
            if name == part or name.startswith(f"{part}.") or name.startswith(f"{part}:"):
                return reason
    return None
