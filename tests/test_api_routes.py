"""The app's routes inside a host's URLconf: its 404 covers its own paths and nothing else."""

from __future__ import annotations

from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from tests.api_support import API, CHECKPOINTS, PAUSES
from tests.factories import PauseFactory

pytestmark = pytest.mark.django_db

OPERATION_IDS = {
    ("/api/turnstate/pauses/", "get"): "turnstate_pauses_list",
    ("/api/turnstate/pauses/{jti}/", "get"): "turnstate_pauses_retrieve",
    ("/api/turnstate/pauses/resume/", "post"): "turnstate_pauses_resume",
    ("/api/turnstate/pauses/unresumable/", "get"): "turnstate_pauses_unresumable",
    ("/api/turnstate/checkpoints/", "get"): "turnstate_checkpoints_list",
    ("/api/turnstate/checkpoints/{id}/", "get"): "turnstate_checkpoints_retrieve",
    ("/api/turnstate/status/", "get"): "turnstate_status",
}


@pytest.mark.parametrize(
    "path",
    [
        f"{PAUSES}%0A",
        f"{PAUSES}a%0Ab",
        f"{PAUSES}a%0Ab/",
        f"{PAUSES}%0A/",
        f"{API}pauses%0A",
        f"{CHECKPOINTS}1%0A",
        f"{CHECKPOINTS}%0A1/",
        f"{PAUSES}resume/%0A",
        f"{PAUSES}x/%0A/y",
    ],
)
def test_a_newline_in_a_path_is_a_json_404_not_a_redirect(staff: APIClient, path: str) -> None:
    PauseFactory.create()
    for method in ("get", "post"):
        response = getattr(staff, method)(path)
        assert response.status_code == 404, (path, response.status_code)
        assert response["Content-Type"] == "application/json"
        assert response.json()["code"] == "not_found"


@pytest.mark.urls("tests.urls_host")
def test_host_routes_under_the_same_prefix_are_reached(staff: APIClient) -> None:
    assert staff.get(f"{API}host-report/").json() == {"host": "report"}
    assert staff.get(f"{API}pausesreport/").json() == {"host": "report"}
    unknown = staff.get(f"{PAUSES}nope/x/")
    assert unknown.status_code == 404 and unknown.json()["code"] == "not_found"
    assert staff.get(PAUSES).status_code == 200


def operation_ids(urlconf: str) -> dict[tuple[str, str], str]:
    spec: dict[str, Any] = SchemaGenerator(urlconf=urlconf).get_schema(request=None, public=True)
    return {
        (path, method): operation["operationId"]
        for path, operations in spec["paths"].items()
        if path.startswith(API)
        for method, operation in operations.items()
    }


@pytest.mark.parametrize("urlconf", ["tests.urls", "tests.urls_host"])
def test_operation_ids_are_namespaced_and_do_not_move_with_the_hosts_routes(urlconf: str) -> None:
    assert operation_ids(urlconf) == OPERATION_IDS
