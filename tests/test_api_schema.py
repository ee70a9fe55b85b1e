"""The OpenAPI schema: valid, warning-free, and describing every endpoint with its errors."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command
from django.urls import reverse

from tests.api_support import API, client_for

OPERATIONS = {
    ("/api/turnstate/pauses/", "get"): {200, 400, 401, 403, 503},
    ("/api/turnstate/pauses/{jti}/", "get"): {200, 400, 401, 403, 404, 503},
    ("/api/turnstate/pauses/resume/", "post"): {200, 400, 401, 403, 404, 409, 410, 413, 415, 503},
    ("/api/turnstate/pauses/unresumable/", "get"): {200, 400, 401, 403, 503},
    ("/api/turnstate/checkpoints/", "get"): {200, 400, 401, 403, 503},
    ("/api/turnstate/checkpoints/{id}/", "get"): {200, 400, 401, 403, 404, 503},
    ("/api/turnstate/status/", "get"): {200, 400, 401, 403, 503},
}


@pytest.fixture(scope="module")
def schema(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Generated once by ``manage.py spectacular --validate --fail-on-warn``."""
    path = Path(tmp_path_factory.mktemp("schema")) / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(path), stdout=StringIO())
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def test_the_app_exposes_exactly_the_contracts_operations(schema: dict[str, Any]) -> None:
    ours = {
        (path, method)
        for path, operations in schema["paths"].items()
        if path.startswith(API)
        for method in operations
    }
    assert ours == set(OPERATIONS)


@pytest.mark.parametrize(("path", "method"), list(OPERATIONS))
def test_every_operation_documents_its_errors(schema: dict[str, Any], path: str, method: str) -> None:
    operation = schema["paths"][path][method]
    assert {int(code) for code in operation["responses"]} == OPERATIONS[(path, method)]
    for code, response in operation["responses"].items():
        assert response["content"]["application/json"]["schema"], code
        if int(code) >= 400:
            assert response["description"]
    assert operation["summary"] and operation["tags"] == ["turnstate"]


def test_lists_are_cursor_pages_with_their_filters(schema: dict[str, Any]) -> None:
    def parameters(path: str) -> set[str]:
        return {p["name"] for p in schema["paths"][path]["get"].get("parameters", [])}

    assert parameters("/api/turnstate/pauses/") == {
        "cursor",
        "page_size",
        "status",
        "resumable",
        "thread_id",
        "session_id",
        "run_id",
        "group",
    }
    assert parameters("/api/turnstate/checkpoints/") == {
        "cursor",
        "page_size",
        "thread_id",
        "checkpoint_id",
        "key_prefix",
    }
    assert parameters("/api/turnstate/pauses/unresumable/") == {"cursor", "page_size"}
    page = schema["components"]["schemas"]["PaginatedTurnstatePauseList"]
    assert set(page["properties"]) == {"next", "previous", "results"}


def test_the_list_schema_has_no_value_and_the_detail_has(schema: dict[str, Any]) -> None:
    components = schema["components"]["schemas"]
    assert "value" not in components["TurnstateCheckpointRow"]["properties"]
    assert "value" in components["TurnstateCheckpointDetail"]["properties"]


def test_component_names_cannot_collide_with_the_hosts(schema: dict[str, Any]) -> None:
    ours = {name for name in schema["components"]["schemas"] if "Turnstate" in name}
    assert "TurnstateError" in ours and "TurnstatePauseStatus" in ours
    assert not {"Error", "Pause", "StatusEnum", "CodeEnum"} & set(schema["components"]["schemas"])


@pytest.mark.django_db
def test_the_schema_is_served(users: dict[str, Any]) -> None:
    response = client_for(users["owner"]).get(
        reverse("schema"), HTTP_ACCEPT="application/vnd.oai.openapi+json"
    )
    assert response.status_code == 200
    assert "/api/turnstate/pauses/resume/" in response.json()["paths"]


def test_urls_are_namespaced() -> None:
    assert reverse("turnstate:pause-list") == "/api/turnstate/pauses/"
    assert reverse("turnstate:pause-detail", args=["abc"]) == "/api/turnstate/pauses/abc/"
    assert reverse("turnstate:pause-resume") == "/api/turnstate/pauses/resume/"
    assert reverse("turnstate:pause-unresumable") == "/api/turnstate/pauses/unresumable/"
    assert reverse("turnstate:checkpoint-list") == "/api/turnstate/checkpoints/"
    assert reverse("turnstate:checkpoint-detail", args=[7]) == "/api/turnstate/checkpoints/7/"


@pytest.mark.parametrize(
    "path", ["/api/turnstate/pauses/", "/api/turnstate/checkpoints/", "/api/turnstate/pauses/unresumable/"]
)
def test_page_size_is_described_with_its_bounds(schema: dict[str, Any], path: str) -> None:
    (page_size,) = [p for p in schema["paths"][path]["get"]["parameters"] if p["name"] == "page_size"]
    assert page_size["schema"] == {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}
    assert page_size["required"] is False


def test_a_pause_carries_its_request_and_never_a_transcript(schema: dict[str, Any]) -> None:
    pause = schema["components"]["schemas"]["TurnstatePause"]["properties"]
    assert pause["request"]["nullable"] is True and pause["request"]["readOnly"] is True
    assert not {"prompt", "messages", "token", "answer"} & set(pause)
