"""Every name the public contract fixes is there and is what the contract says it is.

The names live in ``tests/contract_names.py``, with the project. When the contract page is
at hand (``../shared/CONTRACT.md``), one more test checks that the list names every word the
page puts in backticks, so a name added to the contract cannot go unchecked.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import json
import re
import tomllib
import typing
from collections.abc import Callable, Iterable, Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management import ManagementUtility, call_command, get_commands, load_command_class
from django.db import models
from django.dispatch import Signal
from django.template.loader import get_template
from django.test import RequestFactory
from django.urls import include, reverse

from tests import contract_names as contract
from tests.factories import UserFactory
from tests.pause_helpers import mint

ROOT = Path(__file__).resolve().parent.parent
CONTRACT_PAGES = (ROOT.parent / "shared" / "CONTRACT.md", Path("/work/shared/CONTRACT.md"))


def resolve(dotted: str) -> Any:
    """The object at ``dotted``: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ModuleNotFoundError(dotted)


def params(items: Iterable[Any], *names: Callable[[Any], str]) -> list[Any]:
    """``items`` as pytest params, expected to fail (strictly) where the contract's part is not provided."""
    out = []
    for item in items:
        values = item if isinstance(item, tuple) else (item,)
        keys = [str(v) for v in values if isinstance(v, str)] + [name(item) for name in names]
        reason = contract.not_provided(*keys)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(*values, marks=marks, id="-".join(keys[:2])))
    return out


# -- the contract page, when it is at hand ----------------------------------------------------

TOKEN = re.compile(r"-{0,2}[A-Za-z_<][\w.\-/:<>]*")


def tokens(text: str) -> set[str]:
    stripped = (match.strip(".:/-<>") for match in TOKEN.findall(text))
    return {token for token in stripped if re.search(r"[A-Za-z]", token)}


def contract_words(page: str) -> set[str]:
    """Every word the page puts in code: inline spans, and the names of its code blocks.

    A block of error classes gives each class and its bases (the text after it is prose); a
    block of settings gives each key and value (the comments are prose).
    """
    fence = r"^```[^\n]*\n(.*?)^```"
    words: set[str] = set()
    for block in re.findall(fence, page, flags=re.S | re.M):
        classes = re.findall(r"^(\w+\([^)]*\))", block, flags=re.M)
        lines = classes or [line.split("#")[0] for line in block.splitlines()]
        for line in lines:
            words |= tokens(line)
    for span in re.findall(r"`([^`]+)`", re.sub(fence, "", page, flags=re.S | re.M)):
        words |= tokens(span)
    return words


def listed(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield from tokens(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from listed(key)
            yield from listed(item)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from listed(item)


def project_words() -> set[str]:
    return {
        word
        for name, value in vars(contract).items()
        if name.isupper() and name != "NOT_NAMES"
        for word in listed(value)
    }


def contract_page() -> str:
    for page in CONTRACT_PAGES:
        if page.is_file():
            return page.read_text()
    pytest.skip("the contract page is not at hand (../shared/CONTRACT.md)")


def test_the_project_list_names_every_word_the_contract_puts_in_code() -> None:
    words = contract_words(contract_page())
    assert sorted(words - project_words() - contract.NOT_NAMES) == []
    assert sorted(contract.NOT_NAMES - words) == [], "NOT_NAMES lists words the contract no longer has"


def test_every_group_of_the_list_is_checked_here() -> None:
    source = Path(__file__).read_text()
    groups = [name for name in vars(contract) if name.isupper() and name not in {"REQUIRED"}]
    assert [name for name in groups if f"contract.{name}" not in source] == []


def test_the_word_scan_reads_spans_blocks_and_signatures() -> None:
    page = (
        "Use `mint_pause(*, run_id, owner=None) -> MintedPause` and `pauses/<jti>/`.\n"
        "```\nTurnStateError(Exception)   base of everything, not a name\n```\n"
        '```\nTURNSTATE = {\n    "PORT": "a.b.C",  # a comment\n}\n```\n'
    )
    assert contract_words(page) == {
        "mint_pause",
        "run_id",
        "owner",
        "None",
        "MintedPause",
        "pauses/<jti",
        "TurnStateError",
        "Exception",
        "TURNSTATE",
        "PORT",
        "a.b.C",
    }


# -- section 1: the pure core ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "name"),
    params(((module, name) for module, names in contract.MODULE_NAMES.items() for name in names)),
)
def test_each_name_imports_from_its_contract_path(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name), f"{module}.{name}"


@pytest.mark.parametrize("dotted", params(contract.IMPORT_PATHS))
def test_each_dotted_path_the_contract_gives_imports(dotted: str) -> None:
    assert resolve(dotted) is not None


@pytest.mark.parametrize(("qualified", "module"), params(contract.QUALIFIED.items()))
def test_each_class_qualified_name_is_callable_on_its_class(qualified: str, module: str) -> None:
    assert callable(resolve(f"{module}.{qualified}"))


@pytest.mark.parametrize(("dotted", "bases"), params(contract.ERRORS.items()))
def test_each_error_class_subclasses_what_the_contract_says(dotted: str, bases: tuple[str, ...]) -> None:
    from turnstate_app import errors

    error = resolve(dotted)
    for base in bases:
        expected = getattr(errors, base, None) or resolve(f"builtins.{base}")
        assert issubclass(error, expected), f"{dotted} is not a {base}"


def test_the_frozen_keys_keep_their_values() -> None:
    for dotted, value in contract.CONSTANTS.items():
        assert resolve(dotted) == value, dotted


def claims(**overrides: Any) -> Any:
    from turnstate_app.contracts import PauseClaims

    fields = {"jti": "j-1", "run_id": "r", "session_id": "s", "thread_id": "t", "checkpoint_id": "c"}
    return PauseClaims(**{**fields, "scope_hash": "h", **overrides})


def test_the_stored_keys_are_spelled_as_the_contract_spells_them() -> None:
    from turnstate_app.checkpoints import payload_key
    from turnstate_app.errors import PayloadBindingError
    from turnstate_app.turnstate import turn_state_key

    keys = contract.STORED_KEYS
    assert payload_key(claims(tool_call_id="call-1")) == keys["ask_user_request:<tool_call_id>"]
    assert payload_key(claims(interrupt_id="int-1")) == keys["interrupt_payload:<interrupt_id>"]
    assert turn_state_key(claims()) == keys["turn_state:<jti>"]
    with pytest.raises(PayloadBindingError):
        payload_key(claims())
    with pytest.raises(PayloadBindingError):
        turn_state_key(claims(jti=""))


def contract_parameters(signature: str) -> tuple[list[inspect.Parameter], str | None]:
    """The parameters and return of a signature as the contract writes it."""
    tree = ast.parse(f"def f{signature}: pass")
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    arguments = function.args
    out: list[inspect.Parameter] = []
    positional = arguments.args
    defaults = [inspect.Parameter.empty] * (len(positional) - len(arguments.defaults)) + [
        ast.literal_eval(d) for d in arguments.defaults
    ]
    for arg, default in zip(positional, defaults, strict=True):
        out.append(inspect.Parameter(arg.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default))
    for arg, kw_default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        default = inspect.Parameter.empty if kw_default is None else ast.literal_eval(kw_default)
        out.append(inspect.Parameter(arg.arg, inspect.Parameter.KEYWORD_ONLY, default=default))
    if arguments.kwarg is not None:
        out.append(inspect.Parameter(arguments.kwarg.arg, inspect.Parameter.VAR_KEYWORD))
    returns = ast.unparse(function.returns) if function.returns is not None else None
    return out, returns


def actual_parameters(target: Any) -> tuple[list[inspect.Parameter], Any]:
    signature = inspect.signature(target)
    parameters = list(signature.parameters.values())
    if parameters and parameters[0].name in {"self", "cls"}:
        parameters = parameters[1:]
    return parameters, signature.return_annotation


@pytest.mark.parametrize(("dotted", "signature"), params(contract.SIGNATURES.items()))
def test_each_callable_takes_the_parameters_the_contract_gives(dotted: str, signature: str) -> None:
    kinds = inspect.Parameter
    promised, returns = contract_parameters(signature)
    actual, annotation = actual_parameters(resolve(dotted))
    by_name = {p.name: p for p in actual}
    takes_any_keyword = any(p.kind is kinds.VAR_KEYWORD for p in actual)
    positional = [p.name for p in actual if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    assert positional[: len([p for p in promised if p.kind is kinds.POSITIONAL_OR_KEYWORD])] == [
        p.name for p in promised if p.kind is kinds.POSITIONAL_OR_KEYWORD
    ]
    for want in promised:
        if want.kind is kinds.VAR_KEYWORD:
            assert takes_any_keyword, f"{dotted} takes no **{want.name}"
            continue
        if want.name not in by_name:
            assert want.kind is kinds.KEYWORD_ONLY and takes_any_keyword, f"{dotted} has no {want.name}"
            continue
        have = by_name[want.name]
        if want.kind is kinds.KEYWORD_ONLY:
            assert have.kind in (kinds.KEYWORD_ONLY, kinds.POSITIONAL_OR_KEYWORD), f"{dotted}({want.name})"
        assert have.default == want.default, f"{dotted}({want.name}) defaults to {have.default!r}"
    named = {p.name for p in promised}
    extra = [
        p for p in actual if p.name not in named and p.kind not in (kinds.VAR_KEYWORD, kinds.VAR_POSITIONAL)
    ]
    assert [p.name for p in extra if p.default is kinds.empty] == [], (
        f"{dotted} requires more than the contract"
    )
    if returns is not None:
        assert str(annotation).replace(" ", "") == returns.replace(" ", ""), f"{dotted} returns {annotation}"


@pytest.mark.parametrize("dotted", params(contract.ASYNC))
def test_each_async_twin_is_a_coroutine_function(dotted: str) -> None:
    assert inspect.iscoroutinefunction(resolve(dotted)), dotted


def has_attribute(cls: type, name: str) -> bool:
    if issubclass(cls, BaseException):
        return hasattr(cls("reason"), name)
    if dataclasses.is_dataclass(cls) and name in {f.name for f in dataclasses.fields(cls)}:
        return True
    fields = getattr(cls, "model_fields", None)
    return (
        hasattr(cls, name)
        or (isinstance(fields, dict) and name in fields)
        or name in typing.get_type_hints(cls)
    )


@pytest.mark.parametrize(("dotted", "names"), params(contract.ATTRIBUTES.items()))
def test_each_class_offers_the_attributes_the_contract_names(dotted: str, names: tuple[str, ...]) -> None:
    cls = resolve(dotted)
    assert [name for name in names if not has_attribute(cls, name)] == []


@pytest.mark.parametrize(("dotted", "fields"), params(contract.PYDANTIC_FIELDS.items()))
def test_each_pydantic_model_has_the_contracts_fields(
    dotted: str, fields: dict[str, tuple[str, Any]]
) -> None:
    model = resolve(dotted)
    assert model.model_config.get("frozen") is True, f"{dotted} is not frozen"
    assert set(model.model_fields) >= set(fields)
    for name, (annotation, default) in fields.items():
        field = model.model_fields[name]
        assert field.annotation == eval(annotation, {"Any": Any}), f"{dotted}.{name}: {field.annotation}"  # noqa: S307
        if default is contract.REQUIRED:
            assert field.is_required(), f"{dotted}.{name} has a default"
        else:
            assert not field.is_required() and field.default == default, f"{dotted}.{name}"


def test_the_turn_checkpoint_refuses_what_it_cannot_read_with_a_value_error() -> None:
    from turnstate_app.turnstate import TurnCheckpoint

    for raw in ("{", b"[]", '{"version": 999}'):
        with pytest.raises(ValueError):
            TurnCheckpoint.decode(raw)


def test_the_command_port_is_a_runtime_checkable_protocol() -> None:
    from turnstate_app.contracts import CheckpointCommandPort

    assert resolve(contract.EXTERNAL_NAMES["typing.Protocol"]) in CheckpointCommandPort.__mro__
    assert not isinstance(object(), CheckpointCommandPort)


@pytest.mark.parametrize(("dotted", "durable"), params(contract.PORTS.items()))
def test_each_port_says_whether_it_is_durable(dotted: str, durable: bool) -> None:
    from turnstate_app.contracts import CheckpointCommandPort
    from turnstate_app.durability import require_durable_consumption
    from turnstate_app.errors import InteractionConfigurationError

    port = resolve(dotted)()
    assert isinstance(port, CheckpointCommandPort)
    assert port.durable is durable
    if durable:
        require_durable_consumption(port)
    else:
        with pytest.raises(InteractionConfigurationError):
            require_durable_consumption(port)


def test_the_default_store_is_a_turn_checkpoint_store_wired_with_the_port() -> None:
    from turnstate_app.ports import get_default_store
    from turnstate_app.turnstate import TurnCheckpointStore

    store = get_default_store()
    assert isinstance(store, TurnCheckpointStore) and store.wired


# -- section 2: the Django parts -------------------------------------------------------------


@pytest.mark.parametrize(("key", "default"), params(contract.SETTINGS.items()))
def test_each_setting_has_the_contracts_default(key: str, default: Any, settings: Any) -> None:
    from turnstate_app.conf import DEFAULTS, conf

    assert key in DEFAULTS, f"{contract.SETTINGS_NAME}[{key!r}] is unknown"
    assert DEFAULTS[key] == default
    settings.TURNSTATE = {}
    assert getattr(conf, key) == default


def test_the_settings_live_in_one_dict(settings: Any) -> None:
    from turnstate_app.conf import conf

    setattr(settings, contract.SETTINGS_NAME, {"TOKEN_MAX_AGE": 60})
    assert conf.TOKEN_MAX_AGE == 60
    assert isinstance(resolve(contract.SETTINGS["PORT"]), type)


@pytest.mark.django_db(databases="__all__")  # Django 6's own checks look at every database
@pytest.mark.parametrize(("check_id", "value"), params(contract.CHECK_IDS.items()))
def test_each_check_id_is_raised_by_manage_py_check(check_id: str, value: Any, settings: Any) -> None:
    from django.core.checks import run_checks

    assert contract.DJANGO_COMMANDS == ("check",) and "check" in get_commands()
    settings.TURNSTATE = value
    assert check_id in {message.id for message in run_checks()}


@pytest.mark.parametrize(("label", "fields"), params(contract.MODEL_FIELDS.items()))
def test_each_model_has_the_contracts_fields(label: str, fields: tuple[str, ...]) -> None:
    model = apps.get_model(label)
    assert [name for name in fields if name not in {f.name for f in model._meta.get_fields()}] == []


def test_the_store_rows_and_the_ledger_are_shaped_as_the_contract_says() -> None:
    metadata = apps.get_model("turnstate_app.CheckpointMetadata")
    for name in ("thread_id", "checkpoint_id", "key"):
        field = metadata._meta.get_field(name)
        assert isinstance(field, models.CharField) and field.max_length == 255, name
    assert isinstance(metadata._meta.get_field("value"), models.TextField)
    assert metadata._meta.get_field("task_id").null
    for label, together in contract.UNIQUE_TOGETHER.items():
        constraints = apps.get_model(label)._meta.constraints
        assert any(
            isinstance(c, models.UniqueConstraint) and tuple(c.fields) == together for c in constraints
        ), label
    pause = apps.get_model("turnstate_app.Pause")
    assert pause._meta.get_field("jti").unique
    owner = pause._meta.get_field("owner")
    assert owner.null and owner.related_model is get_user_model()
    choices = pause._meta.get_field("status").choices or []
    assert tuple(value for value, _ in choices) == contract.PAUSE_STATUSES
    for proxy, concrete in contract.PROXIES.items():
        model = apps.get_model(proxy)
        assert model._meta.proxy and model._meta.proxy_for_model is apps.get_model(concrete)


@pytest.mark.parametrize("dotted", params(contract.SIGNALS))
def test_each_signal_is_a_django_signal(dotted: str) -> None:
    assert isinstance(resolve(dotted), Signal)


@pytest.mark.parametrize("dotted", params(contract.TASKS))
def test_each_task_is_a_task_of_djangos_tasks_framework(dotted: str) -> None:
    task = resolve(dotted)
    assert callable(task.enqueue) and callable(task.func)


@pytest.mark.parametrize(("call", "where"), params(contract.CALLBACKS.items()))
def test_each_callback_is_called_with_what_the_contract_says(call: str, where: tuple[str, str, str]) -> None:
    function, parameter, argument = where
    annotation = inspect.signature(resolve(function)).parameters[parameter].annotation
    assert f"Callable[[{argument}]" in str(annotation), f"{call}: {annotation}"


def test_the_api_mounts_under_its_namespace() -> None:
    assert f'path("{contract.API_ROOT.strip("/")}/", include("{contract.URLCONF}"))' == contract.API_INCLUDE
    _, app_name, namespace = include(contract.URLCONF)
    assert app_name == namespace == contract.URL_NAMESPACE


def filled(path: str, kwargs: dict[str, Any]) -> str:
    """``path`` with its one placeholder (``<jti>``) replaced by the value reversed with."""
    values = [str(value) for value in kwargs.values()]
    return re.sub(r"<\w+>", lambda _: values[0], path)


@pytest.mark.parametrize(("name", "where"), params(contract.API_URLS.items()))
def test_each_api_url_name_reverses_to_its_path(name: str, where: tuple[str, dict[str, Any]]) -> None:
    path, kwargs = where
    expected = contract.API_ROOT + filled(path, kwargs)
    assert reverse(f"{contract.URL_NAMESPACE}:{name}", kwargs=kwargs) == expected


@pytest.mark.parametrize(("view", "filters"), params(contract.API_FILTERS.items()))
def test_each_list_filters_on_the_contracts_fields(view: str, filters: tuple[str, ...]) -> None:
    assert set(filters) <= set(resolve(view).filterset_class.base_filters)


def test_the_bodies_carry_the_contracts_keys() -> None:
    from turnstate_app.api.serializers import PauseSerializer, ResumedSerializer, ResumeRequestSerializer

    assert tuple(ResumeRequestSerializer().fields) == contract.RESUME_BODY
    assert tuple(ResumedSerializer().fields) == tuple(contract.RESUMED_BODY)
    assert set(contract.PAUSE_DETAIL_KEYS) <= set(PauseSerializer().fields)


@pytest.mark.parametrize(("dotted", "answer"), params(contract.API_ERRORS.items()))
def test_each_error_answers_the_contracts_status_and_code(
    dotted: str, answer: tuple[int, str | None]
) -> None:
    from turnstate_app.api.exceptions import turnstate_exception_handler

    error_class = resolve(dotted)
    error = error_class(["no"]) if error_class.__name__ == "AnswerValidationError" else error_class("x")
    response = turnstate_exception_handler(error, {"request": None, "view": None})
    status, code = answer
    assert response.status_code == status
    if code is not None:
        assert response.data[contract.ERROR_CODE_KEY] == code


@pytest.mark.django_db
def test_the_rest_pages_and_bodies_on_the_database(admin_client: Any) -> None:
    staff = get_user_model().objects.get(is_superuser=True)
    minted = mint(owner=staff)
    listing = admin_client.get(reverse(f"{contract.URL_NAMESPACE}:pause-list")).json()
    assert tuple(listing) == contract.PAGE_KEYS
    detail = admin_client.get(
        reverse(f"{contract.URL_NAMESPACE}:pause-detail", kwargs={"jti": minted.claims.jti})
    )
    assert set(contract.PAUSE_DETAIL_KEYS) <= set(detail.json())
    row = apps.get_model("turnstate_app.CheckpointMetadata").objects.order_by("pk").first()
    assert row is not None
    one = admin_client.get(
        reverse(f"{contract.URL_NAMESPACE}:checkpoint-detail", kwargs={"pk": row.pk})
    ).json()
    assert set(contract.CHECKPOINT_DETAIL_KEYS) <= set(one)
    body = dict(zip(contract.RESUME_BODY, (minted.token, "yes"), strict=True))
    answered = admin_client.post(
        reverse(f"{contract.URL_NAMESPACE}:pause-resume"), body, content_type="application/json"
    ).json()
    assert set(answered) == set(contract.RESUMED_BODY)
    for key, expected in contract.RESUMED_BODY.items():
        assert (
            isinstance(answered[key], expected) if isinstance(expected, type) else answered[key] == expected
        )


@pytest.mark.django_db
def test_the_lifecycle_raises_the_contracts_errors_in_the_contracts_places() -> None:
    from turnstate_app.errors import (
        PauseAlreadyAnsweredError,
        PauseCheckpointNotFoundError,
        PauseNotAnsweredError,
    )
    from turnstate_app.pauses import ResumedPause, resume_pause, resumed

    owner, stranger = UserFactory(), UserFactory()
    minted = mint(owner=owner)
    assert isinstance(minted.token, str) and minted.claims.jti and isinstance(minted.resumable, bool)
    with pytest.raises(PauseCheckpointNotFoundError):
        resumed("no-such-pause")
    with pytest.raises(PauseNotAnsweredError):
        resumed(minted.claims.jti)
    with pytest.raises(PermissionDenied):
        resume_pause(minted.token, "yes", user=stranger)
    done = resume_pause(minted.token, "yes", user=owner)
    assert isinstance(done, ResumedPause) and done.answer == "yes"
    answer_key = contract.STORED_KEYS["answer:<jti>"].replace("j-1", minted.claims.jti)
    assert apps.get_model("turnstate_app.CheckpointMetadata").objects.filter(key=answer_key).exists()
    assert resumed(minted.claims.jti).answer == "yes"
    with pytest.raises(PauseAlreadyAnsweredError):
        resume_pause(minted.token, "again", user=owner)


@pytest.mark.parametrize(("label", "changelist"), params(contract.ADMIN_CHANGELISTS.items()))
def test_each_admin_page_is_read_only_at_its_url(label: str, changelist: str) -> None:
    model = apps.get_model(label)
    model_admin = admin.site.get_model_admin(model)
    meta = model._meta
    assert reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist") == changelist
    request = RequestFactory().get(changelist)
    request.user = get_user_model()(is_superuser=True, is_staff=True, is_active=True)
    assert not model_admin.has_add_permission(request)


@pytest.mark.parametrize(("name", "options"), params(contract.COMMANDS.items()))
def test_each_command_takes_its_options_and_prints_its_help(
    name: str, options: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    assert get_commands()[name] == "turnstate_app"
    command = load_command_class("turnstate_app", name)
    usage = command.create_parser("manage.py", name).format_usage()
    assert [option for option in options if option not in usage] == []
    manage, help_, dash_help = contract.HELP_ARGUMENTS
    ManagementUtility([manage, help_, name]).execute()
    shown = capsys.readouterr().out
    with pytest.raises(SystemExit):
        ManagementUtility([manage, name, dash_help]).execute()
    assert shown and shown == capsys.readouterr().out
    assert all(option in shown for option in options)


@pytest.mark.django_db
def test_the_status_command_prints_the_contracts_keys() -> None:
    out = StringIO()
    call_command("turnstate_status", "--json", stdout=out)
    figures = json.loads(out.getvalue())
    assert [key for key in contract.STATUS_KEYS if key not in figures] == []
    assert figures["oldest_pending_age_seconds"] is None or isinstance(
        figures["oldest_pending_age_seconds"], int | float
    )


@pytest.mark.parametrize("metric", params(contract.METRICS))
def test_each_metric_name_is_one_the_app_records(metric: str) -> None:
    from turnstate_app import telemetry

    assert metric in telemetry.METRICS


def test_the_refusals_carry_their_reason() -> None:
    from turnstate_app import telemetry

    for attribute in contract.METRIC_ATTRIBUTES:
        assert f"turnstate.{attribute}" in telemetry.ATTRIBUTES


@pytest.mark.parametrize("dotted", params(contract.EXTERNAL_NAMES.values()))
def test_each_name_of_django_python_or_a_framework_is_where_the_contract_says(dotted: str) -> None:
    assert resolve(dotted) is not None


# -- the pages -----------------------------------------------------------------------------------


def test_the_pages_mount_under_their_namespace_and_reverse() -> None:
    root = contract.PAGES_ROOT.strip("/")
    assert f'path("{root}/", include("{contract.PAGES_URLCONF}"))' == contract.PAGES_INCLUDE
    _, app_name, namespace = include(contract.PAGES_URLCONF)
    assert app_name == namespace == contract.PAGES_NAMESPACE
    for name, (path, kwargs) in contract.PAGE_URLS.items():
        expected = contract.PAGES_ROOT + filled(path, kwargs)
        assert reverse(f"{contract.PAGES_NAMESPACE}:{name}", kwargs=kwargs) == expected
    assert contract.PAGE_QUERY == ("?owner=<user id>",)


@pytest.mark.parametrize("template", contract.TEMPLATES)
def test_each_template_can_be_overridden_by_its_name(template: str) -> None:
    assert get_template(template) is not None


def test_the_answer_form_has_the_contracts_fields() -> None:
    form = get_template(contract.TEMPLATES[1]).template.source  # type: ignore[attr-defined]
    for field in contract.PAGE_FORM_FIELDS:
        assert f'name="{field}"' in form, field
    assert all(decision in form for decision in contract.PAGE_DECISIONS)
    assert all(key.split('"')[1 if '"' in key else 0] in form for key in contract.PAGE_REQUEST_KEYS)


def test_notify_e_mails_the_owner_through_its_dotted_path() -> None:
    assert callable(resolve(contract.NOTIFY_PATH))


# -- section 3: the integrations -------------------------------------------------------------


def extras() -> dict[str, list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    optional: dict[str, list[str]] = config["project"]["optional-dependencies"]
    return optional


@pytest.mark.parametrize(("app", "extra"), params(contract.INTEGRATIONS.items()))
def test_each_integration_is_an_app_with_its_extra(app: str, extra: str) -> None:
    assert apps.is_installed(app), f"{app} is not an app of the test project"
    assert extra in extras()


@pytest.mark.parametrize(("extra", "requirement"), params(contract.EXTRAS.items()))
def test_each_extra_names_its_requirement(extra: str, requirement: str) -> None:
    assert any(line.startswith(requirement) for line in extras()[extra])


@pytest.mark.parametrize(("ours", "theirs"), params(contract.FRAMEWORK_BASES.items()))
def test_each_integration_class_is_its_frameworks_class(ours: str, theirs: str) -> None:
    assert issubclass(resolve(ours), resolve(theirs))


def test_a_graph_keeping_langgraphs_default_name_is_refused_with_how_to_name_it() -> None:
    from types import SimpleNamespace

    from turnstate_app.contrib.langgraph.errors import UnnamedGraphError
    from turnstate_app.contrib.langgraph.identity import DEFAULT_NAME, required_name

    assert contract.GRAPH_NAME_ATTRIBUTE == "graph.name" and DEFAULT_NAME == contract.LANGGRAPH_DEFAULT_NAME
    assert required_name(SimpleNamespace(name="trip")) == "trip"
    with pytest.raises(UnnamedGraphError, match=re.escape(contract.LANGGRAPH_NAMING_HINT)):
        required_name(SimpleNamespace(name=contract.LANGGRAPH_DEFAULT_NAME))
    for method in contract.THREAD_ERASURE[1:]:
        assert callable(getattr(resolve("turnstate_app.contrib.langgraph.DjangoCheckpointSaver"), method))
    command, option = contract.THREAD_ERASURE[0].split()
    assert option in contract.COMMANDS[command]


def test_an_agent_is_known_by_its_name() -> None:
    from types import SimpleNamespace

    from turnstate_app.contrib.pydantic_ai.pausing import agent_name

    assert contract.AGENT_NAME_ATTRIBUTE == "agent.name"
    assert agent_name(SimpleNamespace(name="booking")) == "booking"
    with pytest.raises(ValueError):
        agent_name(SimpleNamespace(name=""))


def approvals_accepted(schema: dict[str, Any]) -> None:
    approve, reject = contract.APPROVAL_ANSWERS
    override_args, message = contract.APPROVAL_KEYS
    jsonschema.validate(approve, schema)
    jsonschema.validate({**reject, message: "not today"}, schema)
    jsonschema.validate({**approve, override_args: {"city": "Porto"}}, schema)


def test_pydantic_ais_approvals_take_the_contracts_shape() -> None:
    from turnstate_app.contrib.pydantic_ai.deferred import APPROVAL, answer_schema

    approvals_accepted(answer_schema(APPROVAL, None))


@pytest.mark.xfail(strict=True, reason=contract.NOT_PROVIDED["openai_agents.override_args"])
def test_openai_agents_approvals_take_the_contracts_shape() -> None:
    from turnstate_app.contrib.openai_agents.approvals import ANSWER_SCHEMA

    approvals_accepted(ANSWER_SCHEMA)


def test_google_adks_confirmations_take_the_contracts_shape() -> None:
    confirmations = importlib.import_module("turnstate_app.contrib.google_adk.confirmations")
    payload, request = contract.CONFIRMATION_KEYS
    assert request == confirmations.REQUEST_CONFIRMATION
    jsonschema.validate({"confirmed": True, payload: {}}, confirmations.answer_schema({}))
    assert {"confirmed": bool} == contract.CONFIRMATION_ANSWER


def test_every_integration_returns_the_one_continue_result() -> None:
    """One ``ContinueResult`` class, shared by every integration (contract section 3)."""
    from turnstate_app.pauses import ContinueResult

    continuing = [
        name
        for name, signature in contract.SIGNATURES.items()
        if name.startswith("turnstate_app.contrib.") and signature.endswith("-> ContinueResult")
    ]
    for name in continuing:
        if contract.not_provided(name) is None:
            assert typing.get_type_hints(resolve(name))["return"] is ContinueResult, name


def test_the_keys_module_and_the_contract_paths_agree() -> None:
    from turnstate_app import checkpoints, keys, turnstate

    assert checkpoints.payload_key is keys.payload_key
    assert turnstate.turn_state_key is keys.turn_state_key
    assert checkpoints.ASK_USER_REQUEST_KEY_PREFIX is keys.ASK_USER_REQUEST_KEY_PREFIX
