"""The answer form a pause's ``answer_schema`` calls for, and the answer a filled form makes.

A person answers with buttons, choices and inputs, never JSON, wherever the schema allows:
the approval shapes of the integrations (PydanticAI and OpenAI Agents' ``approved``, LangChain's
review decisions, one call or a batched review of one call), a choice among constants, a
single scalar; any other shape is a JSON text. The form is only a convenience: what it makes
is checked against the schema by the lifecycle, exactly as an answer over REST is.

A form is plain data (:meth:`AnswerForm.as_data`), so the page keeps it in the session beside
the pause's token and the answer's POST needs no read of its own.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from django.utils.translation import gettext as _

from turnstate_app.pages.questions import call_arguments, tool_name

DECISION = "decision"
REASON = "reason"
ANSWER = "answer"
ANSWER_JSON = "answer_json"
ARGS_JSON = "args_json"
ARG_PREFIX = "arg-"
"""Form field names: the first four are the contract's; an edited argument is ``arg-<name>``, or
all of them at once ``args_json`` when one of them is not a plain value."""

APPROVE, REJECT, RESPOND, EDIT = "approve", "reject", "respond", "edit"
REVIEW_TYPES = (APPROVE, EDIT, REJECT, RESPOND)
SCALARS = ("string", "integer", "number", "boolean")
REF_DEPTH = 16


class FormError(ValueError):
    """What a filled form lacks, by field name: shown beside each field, nothing is answered."""

    def __init__(self, errors: Mapping[str, list[str]]) -> None:
        super().__init__(dict(errors))
        self.errors = dict(errors)


@dataclass(frozen=True)
class AnswerForm:
    """What the page asks for. ``kind``: ``decision``, ``choice``, ``scalar`` or ``json``."""

    kind: str
    style: str = ""
    """A decision's answer shape: ``approved`` (``{"approved": bool}``) or ``review`` (``{"type": ...}``)."""
    decisions: tuple[str, ...] = ()
    reason: bool = False
    batched: bool = False
    """LangChain's batched review of one call: the decision goes in ``{"decisions": [...]}``."""
    tool: str = ""
    edit: str = ""
    """How edited arguments are asked: ``fields`` (one input each), ``json`` (one text), or not at all."""
    arg_types: dict[str, str] = field(default_factory=dict)
    args_digest: str = ""
    choices: tuple[Any, ...] = ()
    type: str = ""

    @property
    def error_field(self) -> str:
        """The field an answer the schema refuses is reported beside."""
        return {"decision": DECISION, "json": ANSWER_JSON}.get(self.kind, ANSWER)

    def as_data(self) -> dict[str, Any]:
        """The form as JSON data, for the session."""
        data = asdict(self)
        data["decisions"], data["choices"] = list(self.decisions), list(self.choices)
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> AnswerForm:
        values = dict(data)
        values["decisions"], values["choices"] = tuple(values["decisions"]), tuple(values["choices"])
        return cls(**values)


def form_for(schema: Any, request: Any) -> AnswerForm:
    """The form ``schema`` (a pause's ``answer_schema``; None: any answer) calls for."""
    if not isinstance(schema, dict):
        return AnswerForm(kind="json")
    return (
        decision_form(schema, request)
        or choice_form(schema)
        or scalar_form(schema)
        or AnswerForm(kind="json")
    )


# -- reading the schema -------------------------------------------------------------------------


def resolved(root: dict[str, Any], node: Any) -> dict[str, Any]:
    """``node`` with its local ``$ref`` followed (``{}`` when it is not an object schema)."""
    for _depth in range(REF_DEPTH):
        if not isinstance(node, dict):
            return {}
        ref = node.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#"):
            return node
        node = root
        for part in filter(None, ref[1:].split("/")):
            part = part.replace("~1", "/").replace("~0", "~")
            node = node.get(part) if isinstance(node, dict) else None
    return {}


def branches(root: dict[str, Any], node: dict[str, Any]) -> list[dict[str, Any]]:
    """The alternatives of ``node`` (its ``oneOf`` or ``anyOf``), or ``node`` alone."""
    for key in ("oneOf", "anyOf"):
        if isinstance(node.get(key), list):
            return [resolved(root, branch) for branch in node[key]]
    return [node]


MISSING = object()


def const_of(root: dict[str, Any], node: Any) -> Any:
    """The one value ``node`` allows (``const``, or an ``enum`` of one), else :data:`MISSING`."""
    node = resolved(root, node)
    if "const" in node:
        return node["const"]
    if isinstance(node.get("enum"), list) and len(node["enum"]) == 1:
        return node["enum"][0]
    return MISSING


def prop(root: dict[str, Any], node: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The schema of property ``name`` of ``node``; None when it names no such property."""
    properties = node.get("properties")
    if not isinstance(properties, dict) or name not in properties:
        return None
    return resolved(root, properties[name])


def decision_form(schema: dict[str, Any], request: Any) -> AnswerForm | None:
    """An approval: ``approved`` true / false, or LangChain's ``type`` of review, maybe batched."""
    node, batched = resolved(schema, schema), False
    decisions = prop(schema, node, "decisions")
    if decisions is not None and isinstance(decisions.get("prefixItems"), list):
        if len(decisions["prefixItems"]) != 1 or decisions.get("maxItems") != 1:
            return None  # several calls in one review: answered as JSON, one decision each
        node, batched = resolved(schema, decisions["prefixItems"][0]), True
    options = branches(schema, node)
    for style, key in (("approved", "approved"), ("review", "type")):
        consts = {const_of(schema, prop(schema, branch, key) or {}): branch for branch in options}
        if MISSING in consts:
            continue
        if style == "approved" and set(consts) <= {True, False}:
            return approved_form(schema, consts, request)
        if style == "review" and set(consts) <= set(REVIEW_TYPES):
            return review_form(schema, consts, request, batched=batched)
    return None


def approved_form(schema: dict[str, Any], consts: dict[Any, dict[str, Any]], request: Any) -> AnswerForm:
    """``{"approved": true}`` (with ``override_args`` where allowed) or ``{"approved": false, "message"}``."""
    approve, reject = consts.get(True), consts.get(False)
    decisions = tuple(name for name, branch in ((APPROVE, approve), (REJECT, reject)) if branch)
    args = prop(schema, approve, "override_args") if approve else None
    return AnswerForm(
        kind="decision",
        style="approved",
        decisions=decisions,
        reason=bool(reject and prop(schema, reject, "message") is not None),
        tool=tool_name(request) or "",
        **edit_fields(schema, args, request),
    )


def review_form(
    schema: dict[str, Any], consts: dict[Any, dict[str, Any]], request: Any, *, batched: bool
) -> AnswerForm:
    """LangChain's review: approve, edit (the arguments), reject or respond, as the schema allows."""
    edit = consts.get(EDIT)
    action = prop(schema, edit, "edited_action") if edit else None
    args = prop(schema, action, "args") if action else None
    return AnswerForm(
        kind="decision",
        style="review",
        # An edit is an approval with changed arguments: its button is "approve".
        decisions=tuple(
            name for name in (APPROVE, REJECT, RESPOND) if name in consts or (name == APPROVE and edit)
        ),
        reason=REJECT in consts or RESPOND in consts,
        batched=batched,
        tool=tool_name(request) or "",
        **edit_fields(schema, args, request),
    )


def edit_fields(schema: dict[str, Any], args: dict[str, Any] | None, request: Any) -> dict[str, Any]:
    """How the call's arguments are edited: nothing when the schema allows no edit."""
    current = call_arguments(request)
    if args is None or current is None:
        return {}
    digest = args_digest(current)
    properties = args.get("properties")
    declared: dict[str, Any] = properties if isinstance(properties, dict) else {}
    types: dict[str, str] = {}
    for name, value in current.items():
        declared_type = resolved(schema, declared.get(name)).get("type")
        kind = declared_type if declared_type in SCALARS else value_type(value)
        if kind is None:
            return {"edit": "json", "args_digest": digest}
        types[name] = kind
    return {"edit": "fields", "arg_types": types, "args_digest": digest}


def value_type(value: Any) -> str | None:
    """The scalar type of a plain argument value; None for anything else (null, lists, objects)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string" if isinstance(value, str) else None


def args_digest(args: Any) -> str:
    """What the arguments were, as a digest: an edit is told from an unchanged approval by it."""
    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def choice_form(schema: dict[str, Any]) -> AnswerForm | None:
    """An ``enum``, or a ``oneOf`` / ``anyOf`` of constants: one radio button each."""
    node = resolved(schema, schema)
    if isinstance(node.get("enum"), list) and node["enum"]:
        return AnswerForm(kind="choice", choices=tuple(node["enum"]))
    options = branches(schema, node)
    if options == [node]:
        return None
    consts = [const_of(schema, option) for option in options]
    if not consts or MISSING in consts:
        return None
    return AnswerForm(kind="choice", choices=tuple(consts))


def choice_labels(schema: Any) -> dict[str, str]:
    """The title a ``oneOf`` of constants gives each choice, by its form value."""
    if not isinstance(schema, dict):
        return {}
    labels: dict[str, str] = {}
    for option in branches(schema, resolved(schema, schema)):
        value = const_of(schema, option)
        title = option.get("title") or option.get("description")
        if value is not MISSING and isinstance(title, str):
            labels[choice_value(value)] = title
    return labels


def choice_value(choice: Any) -> str:
    """A choice as the form sends it: a string as itself, anything else as its JSON."""
    return choice if isinstance(choice, str) else json.dumps(choice, ensure_ascii=False)


def scalar_form(schema: dict[str, Any]) -> AnswerForm | None:
    node = resolved(schema, schema)
    kind = node.get("type")
    return AnswerForm(kind="scalar", type=kind) if kind in SCALARS else None


# -- reading a filled form ------------------------------------------------------------------------


def answer_from(form: AnswerForm, data: Mapping[str, Any]) -> Any:
    """The answer the filled form ``data`` (``request.POST``) gives; :class:`FormError` when it
    gives none. The schema's own check comes after, in the lifecycle."""
    if form.kind == "decision":
        return decided(form, data)
    if form.kind == "choice":
        return chosen(form, data)
    if form.kind == "scalar":
        return scalar(form.type, data, ANSWER)
    return parsed_json(data.get(ANSWER_JSON, ""), ANSWER_JSON)


def decided(form: AnswerForm, data: Mapping[str, Any]) -> Any:
    decision = data.get(DECISION)
    if decision not in form.decisions:
        raise FormError({DECISION: [_("Choose one of the buttons.")]})
    reason = text(data.get(REASON, "")).strip()
    if form.style == "approved":
        answer: dict[str, Any] = {"approved": decision == APPROVE}
        edited = edited_args(form, data) if decision == APPROVE else None
        if edited is not None:
            answer["override_args"] = edited
        elif decision == REJECT and reason and form.reason:
            answer["message"] = reason
        return answer
    if decision == RESPOND and not reason:
        raise FormError({REASON: [_("Write the response the tool should give.")]})
    answer = {"type": decision}
    edited = edited_args(form, data) if decision == APPROVE else None
    if edited is not None:
        answer = {"type": EDIT, "edited_action": {"name": form.tool, "args": edited}}
    elif decision in (REJECT, RESPOND) and reason:
        answer["message"] = reason
    return {"decisions": [answer]} if form.batched else answer


def edited_args(form: AnswerForm, data: Mapping[str, Any]) -> dict[str, Any] | None:
    """The arguments as edited; None when the form offers no edit or none was made."""
    if form.edit == "json":
        edited = parsed_json(data.get(ARGS_JSON, ""), ARGS_JSON)
        if not isinstance(edited, dict):
            raise FormError({ARGS_JSON: [_("The arguments are a JSON object.")]})
    elif form.edit == "fields":
        edited, errors = {}, {}
        for name, kind in form.arg_types.items():
            try:
                edited[name] = scalar(kind, data, ARG_PREFIX + name)
            except FormError as exc:
                errors.update(exc.errors)
        if errors:
            raise FormError(errors)
    else:
        return None
    return None if args_digest(edited) == form.args_digest else edited


def chosen(form: AnswerForm, data: Mapping[str, Any]) -> Any:
    picked = data.get(ANSWER)
    for choice in form.choices:
        if choice_value(choice) == picked:
            return choice
    raise FormError({ANSWER: [_("Choose one of the answers.")]})


def scalar(kind: str, data: Mapping[str, Any], name: str) -> Any:
    """The value of input ``name`` as the schema's ``kind``: a checkbox is false when unticked."""
    raw = text(data.get(name, ""))
    if kind == "boolean":
        return raw in ("true", "on")
    if kind == "string":
        return raw
    try:
        number = float(raw.strip()) if kind == "number" else int(raw.strip())
    except ValueError:
        message = _("Enter a whole number.") if kind == "integer" else _("Enter a number.")
        raise FormError({name: [message]}) from None
    if isinstance(number, float):
        if not math.isfinite(number):
            raise FormError({name: [_("Enter a number.")]})
        if number.is_integer() and "." not in raw and "e" not in raw.lower():
            return int(number)
    return number


def parsed_json(raw: Any, name: str) -> Any:
    """A JSON text as its value; :class:`FormError` beside ``name`` when it is not JSON."""

    def refuse(constant: str) -> Any:
        raise ValueError(constant)

    try:
        return json.loads(text(raw), parse_constant=refuse)
    except ValueError:
        raise FormError({name: [_('Enter valid JSON: text goes in double quotes, as "yes".')]}) from None


def text(raw: Any) -> str:
    """A submitted text with the browser's line breaks (CR LF) as the answer's (LF)."""
    return str(raw).replace("\r\n", "\n")
