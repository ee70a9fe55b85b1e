"""schemathesis against the served schema on a live server, as staff, an ordinary user and anonymous.

Positive and negative cases (a fixed seed, 50 per operation and role) over real HTTP to
``live_server``: no 5xx, and every response conforms to the schema (status code, content
type, body). Runs on whichever database the suite runs on: SQLite, PostgreSQL and MariaDB in CI.
"""

from __future__ import annotations

import base64
from collections import Counter
from typing import Any

import pytest
import schemathesis
from django.contrib.auth import get_user_model
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api_support import API
from tests.factories import PauseFactory
from tests.pause_helpers import mint

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db(transaction=True)]

EXAMPLES_PER_OPERATION = 50
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
PASSWORD = "fuzz-password"
ROLES = {"staff": {"is_staff": True}, "user": {}, "anonymous": None}


@pytest.fixture
def credentials(settings: Any, request: pytest.FixtureRequest) -> dict[str, str]:
    """Basic auth headers for the role; pauses owned by the user, by nobody, by someone else."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast per request
    model = get_user_model()
    owner = model.objects.create_user("fuzz-user", password=PASSWORD)
    model.objects.create_user("fuzz-staff", password=PASSWORD, is_staff=True)
    other = model.objects.create_user("fuzz-other")
    mint(owner=owner)
    mint(owner=other)
    mint()
    PauseFactory.create(owner=owner, status="answered")
    role: str = request.param
    if ROLES[role] is None:
        return {}
    token = base64.b64encode(f"fuzz-{role}:{PASSWORD}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def fuzz(operation: Any, credentials: dict[str, str], cases: Counter[str], failures: list[str]) -> None:
    """50 cases of one operation, positive and negative, each sent and checked."""
    strategy = st.one_of(
        operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
    )

    @seed(13)
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: every failure is recorded below
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        cases[case.operation.label] += 1
        response = case.call(headers=credentials, timeout=30)
        try:
            case.validate_response(response, checks=CHECKS, headers=credentials)
        except Exception as exc:  # every kind of failure schemathesis raises, recorded for the report
            failures.append(f"{case.operation.label}: {type(exc).__name__}: {exc}"[:2000])

    run()


@pytest.mark.parametrize("credentials", list(ROLES), indirect=True)
def test_no_server_error_and_no_schema_violation(live_server: Any, credentials: dict[str, str]) -> None:
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/schema/?format=json", timeout=30)
    operations = [result.ok() for result in schema.get_all_operations() if isinstance(result, Ok)]
    ours = [operation for operation in operations if operation.path.startswith(API)]
    assert len(ours) == 7
    cases: Counter[str] = Counter()
    failures: list[str] = []

    for operation in ours:
        fuzz(operation, credentials, cases, failures)

    print(f"\nschemathesis {dict(cases)} ({sum(cases.values())} cases)")
    assert len(cases) == 7
    assert failures == []
