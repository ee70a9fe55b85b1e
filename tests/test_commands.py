"""The operators' commands, through call_command, as a script or cron job would run them."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from tests.pause_helpers import age, answered, legacy_request, lost, mint
from turnstate_app.models import UNRESUMABLE_NO_LEDGER, UNRESUMABLE_NO_TURN_STATE, CheckpointMetadata, Pause

pytestmark = pytest.mark.django_db


def run(*args: str, **options: Any) -> str:
    out = StringIO()
    call_command(*args, stdout=out, **options)
    return out.getvalue()


@pytest.fixture
def both_kinds() -> dict[str, str]:
    """One pause of each unresumable kind, next to pauses that must never be listed."""
    mint(1)
    answered(2)
    stranded = lost(3)
    legacy_request(4)
    failed = mint(5, failing=True)
    return {"lost": stranded.claims.jti, "failed": failed.claims.jti}


def test_unresumable_prints_a_table_of_both_kinds(both_kinds: dict[str, str]) -> None:
    text = run("turnstate_unresumable")

    lines = text.splitlines()
    assert lines[0].split() == ["AGE", "THREAD", "CHECKPOINT", "REQUEST", "KEY", "JTI", "WHY"]
    body = "\n".join(lines[1:4])
    assert both_kinds["lost"] in body and both_kinds["failed"] in body
    assert "legacy-4" in body and "interrupt_payload:int-4" in body
    assert "thread-1" not in text and "thread-2" not in text
    assert "3 unresumable pause(s)" in text
    assert UNRESUMABLE_NO_LEDGER in text and UNRESUMABLE_NO_TURN_STATE in text


def test_unresumable_json_is_one_parseable_document(both_kinds: dict[str, str]) -> None:
    document = json.loads(run("turnstate_unresumable", "--json"))

    assert document["count"] == 3
    by_thread = {row["thread_id"]: row for row in document["results"]}
    assert set(by_thread) == {"thread-3", "legacy-4", "thread-5"}
    assert by_thread["thread-3"]["jti"] == both_kinds["lost"]
    assert by_thread["thread-5"]["jti"] == both_kinds["failed"]
    assert by_thread["legacy-4"] | {"created_at": None, "age_seconds": None} == {
        "thread_id": "legacy-4",
        "checkpoint_id": "cp",
        "request_key": "interrupt_payload:int-4",
        "jti": None,
        "created_at": None,
        "age_seconds": None,
        "has_ledger": False,
        "reason": UNRESUMABLE_NO_LEDGER,
    }


def test_unresumable_says_so_when_there_are_none() -> None:
    mint(1)
    assert run("turnstate_unresumable").strip() == "no unresumable pauses"
    assert json.loads(run("turnstate_unresumable", "--json")) == {"count": 0, "results": []}


def test_purge_reports_each_batch_and_keeps_pending_pauses() -> None:
    for n in range(3):
        age(answered(n), 40)
    pending = mint(7)
    age(pending, 40)

    text = run("turnstate_purge", "--older-than", "30", "--batch-size", "2")

    assert text.splitlines() == [
        "batch 1: deleted 2 pause(s), 6 row(s)",
        "batch 2: deleted 1 pause(s), 3 row(s)",
        "deleted 3 pause(s) and 9 row(s) in 2 batch(es)",
    ]
    assert list(Pause.objects.values_list("jti", flat=True)) == [pending.claims.jti]
    assert CheckpointMetadata.objects.count() == 2


def test_purge_include_pending_takes_the_stale_pending_ones_too() -> None:
    age(mint(1), 40)
    run("turnstate_purge", "--older-than", "30", "--include-pending")
    assert not Pause.objects.exists() and not CheckpointMetadata.objects.exists()


def test_purge_dry_run_deletes_nothing() -> None:
    age(answered(1), 40)

    text = run("turnstate_purge", "--older-than", "30", "--dry-run")

    assert text.splitlines()[-1] == "would delete 1 pause(s) and 3 row(s) in 1 batch(es) (dry run)"
    assert Pause.objects.count() == 1 and CheckpointMetadata.objects.count() == 3


def test_purge_is_silent_at_verbosity_zero() -> None:
    age(answered(1), 40)
    assert run("turnstate_purge", "--older-than", "30", verbosity=0) == ""
    assert not Pause.objects.exists()


def test_purge_thread_erases_one_thread_whatever_its_state() -> None:
    mint(1)
    other = mint(2)

    text = run("turnstate_purge", "--thread", "thread-1")

    assert text.splitlines()[-1] == "deleted 1 pause(s) and 2 row(s) in 2 batch(es)"
    assert list(Pause.objects.values_list("jti", flat=True)) == [other.claims.jti]
    assert not CheckpointMetadata.objects.filter(thread_id="thread-1").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--older-than", "-3"], "--older-than: must be at least 1 day, not -3"),
        (["--older-than", "0"], "--older-than: must be at least 1 day, not 0"),
        (["--older-than", "ten"], "--older-than: must be a whole number of days, not 'ten'"),
        (["--older-than", "1.5"], "--older-than: must be a whole number of days, not '1.5'"),
        (["--older-than", "30", "--batch-size", "0"], "--batch-size: must be between 1 and 5000, not 0"),
        (["--older-than", "30", "--batch-size", "x"], "--batch-size: must be a whole number, not 'x'"),
        ([], "one of the arguments --older-than --thread is required"),
        (["--older-than", "30", "--thread", "t"], "not allowed with argument"),
    ],
)
def test_purge_refuses_bad_input_and_deletes_nothing(args: list[str], message: str) -> None:
    age(answered(1), 40)
    with pytest.raises(CommandError, match=message):
        run("turnstate_purge", *args)
    assert Pause.objects.count() == 1 and CheckpointMetadata.objects.count() == 3
