"""URLs, clients and pauses for the page tests (``tests/test_pages_*.py``): a pause of every form
the answer page builds, minted with the request and ``answer_schema`` each integration mints."""

from __future__ import annotations

import re
from typing import Any

from django.test import Client

from tests.pause_helpers import mint
from turnstate_app.contrib.langgraph.hitl import batched_answer_schema
from turnstate_app.contrib.openai_agents.approvals import ANSWER_SCHEMA as OPENAI_APPROVAL
from turnstate_app.contrib.openai_agents.approvals import Approval
from turnstate_app.contrib.pydantic_ai.deferred import APPROVAL, DeferredCall
from turnstate_app.pauses import MintedPause, resumed

PAGES = "/answers/"
LOGIN = "/accounts/login/"


def pause_url(jti: str) -> str:
    return f"{PAGES}{jti}/"


def link_url(token: str) -> str:
    return f"{PAGES}t/{token}/"


def client_for(user: Any = None, **kwargs: Any) -> Client:
    """A browser, signed in as ``user`` (anonymous without one)."""
    client = Client(**kwargs)
    if user is not None:
        client.force_login(user)
    return client


def answer_of(minted: MintedPause) -> Any:
    """The answer the pause was given, as the worker reads it."""
    return resumed(minted.claims.jti).answer


def field_errors(html: str) -> list[str]:
    """The error texts the page shows beside its fields."""
    return re.findall(r'<p class="ts-error" role="alert">(.*?)</p>', html)


def error_beside(html: str, field: str) -> bool:
    """Whether an error is shown in the block of input ``field`` (after it, before the next block)."""
    after = html.rsplit(f'name="{field}"', 1)[1]
    ends = [after.find(mark) for mark in ('<div class="ts-field">', '<div class="ts-buttons">')]
    return 'class="ts-error"' in after[: min(end for end in ends if end >= 0)]


def labelled(html: str) -> bool:
    """Whether every input, text area and radio of the form has a label naming its id."""
    ids = re.findall(r'<(?:input|textarea) id="([^"]+)"', html)
    fields = re.findall(r'<(?:input|textarea)(?![^>]*type="hidden")[^>]*>', html)
    return len(ids) == len(fields) and all(f'<label for="{id_}">' in html for id_ in ids)


SEND_EMAIL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"to": {"type": "string"}, "body": {"type": "string"}, "retries": {"type": "integer"}},
    "required": ["to", "body"],
    "additionalProperties": False,
}
SEND_EMAIL_ARGS: dict[str, Any] = {"to": "ana@example.com", "body": "Hi Ana,\nsee you.", "retries": 2}

# LangChain's per-call review as ``HumanInTheLoopMiddleware(interrupt_mode="per_call")`` publishes it
# for a tool ``send_email(to: str, body: str)`` allowing approve, edit and reject (the JSON of its
# ``response_schema``, which ``pause_interrupts`` stores as the pause's answer_schema).
LANGCHAIN_PER_CALL: dict[str, Any] = {
    "$defs": {
        "ApproveDecision": {
            "properties": {"type": {"const": "approve", "title": "Type", "type": "string"}},
            "required": ["type"],
            "title": "ApproveDecision",
            "type": "object",
        },
        "EditDecision": {
            "properties": {
                "type": {"const": "edit", "title": "Type", "type": "string"},
                "edited_action": {"$ref": "#/$defs/EditedAction"},
            },
            "required": ["type", "edited_action"],
            "title": "EditDecision",
            "type": "object",
        },
        "EditedAction": {
            "properties": {
                "name": {"const": "send_email", "title": "Name", "type": "string"},
                "args": {"$ref": "#/$defs/send_email"},
            },
            "required": ["name", "args"],
            "title": "EditedAction",
            "type": "object",
        },
        "RejectDecision": {
            "properties": {
                "type": {"const": "reject", "title": "Type", "type": "string"},
                "message": {"title": "Message", "type": "string"},
            },
            "required": ["type"],
            "title": "RejectDecision",
            "type": "object",
        },
        "send_email": {
            "properties": {
                "to": {"title": "To", "type": "string"},
                "body": {"title": "Body", "type": "string"},
            },
            "required": ["to", "body"],
            "title": "send_email",
            "type": "object",
        },
    },
    "discriminator": {
        "mapping": {
            "approve": "#/$defs/ApproveDecision",
            "edit": "#/$defs/EditDecision",
            "reject": "#/$defs/RejectDecision",
        },
        "propertyName": "type",
    },
    "oneOf": [
        {"$ref": "#/$defs/ApproveDecision"},
        {"$ref": "#/$defs/EditDecision"},
        {"$ref": "#/$defs/RejectDecision"},
    ],
}
LANGCHAIN_PER_CALL_REQUEST: dict[str, Any] = {
    "type": "tool_approval",
    "tool_call_id": "call-1",
    "name": "send_email",
    "args": {"to": "ana@example.com", "body": "hi"},
    "description": "Tool execution requires approval",
}


def batched_review(
    *names: str, allowed: tuple[str, ...] = ("approve", "edit", "reject", "respond")
) -> dict[str, Any]:
    """LangChain's batched review (``HITLRequest``) of one call per name."""
    return {
        "action_requests": [
            {"name": name, "args": {"path": f"/tmp/{name}"}, "description": f"Review {name}"}
            for name in names
        ],
        "review_configs": [{"action_name": name, "allowed_decisions": list(allowed)} for name in names],
    }


def pydantic_ai_approval(*, owner: Any = None, args: dict[str, Any] | None = None) -> MintedPause:
    """A PydanticAI approval, its request and answer_schema as ``pause_deferred`` mints them."""
    call = DeferredCall(
        tool_call_id="call-1",
        tool_name="send_email",
        args=SEND_EMAIL_ARGS if args is None else args,
        kind=APPROVAL,
        metadata={},
        parameters_json_schema=SEND_EMAIL_PARAMETERS,
    )
    return mint(owner=owner, request=call.request("conversation-1"), answer_schema=call.answer_schema())


def openai_approval(*, owner: Any = None) -> MintedPause:
    """An OpenAI Agents approval, its request and answer_schema as ``pause_approvals`` mints them."""
    approval = Approval(
        call_id="call-1", tool_name="refund", arguments={"order": "A-1", "amount": 30}, agent="payments"
    )
    return mint(
        owner=owner, request=approval.request("run-1"), answer_schema=OPENAI_APPROVAL, agent="payments"
    )


def langchain_per_call(*, owner: Any = None) -> MintedPause:
    return mint(owner=owner, request=LANGCHAIN_PER_CALL_REQUEST, answer_schema=LANGCHAIN_PER_CALL)


def langchain_batched(*names: str, owner: Any = None) -> MintedPause:
    review = batched_review(*names)
    return mint(owner=owner, request=review, answer_schema=batched_answer_schema(review))
