"""The operators' commands, through call_command, as a script or cron job would run them."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from tests.pause_helpers import age, answered, legacy_request, lost, mint
from turnstate_app.managers import PauseQuerySet
from turnstate_app.models import UNRESUMABLE_NO_LEDGER, UNRESUMABLE_NO_TURN_STATE, CheckpointMetadata, Pause
from turnstate_app.pauses import MintedPause, resume_pause

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
        (
            ["--older-than", "-3"],
            "--older-than: must not be negative: a whole number from 1 to 36500 days, not -3",
        ),
        (["--older-than", "0"], "--older-than: must be a whole number from 1 to 36500 days, not 0"),
        (["--older-than", "ten"], "--older-than: must be a whole number from 1 to 36500 days, not 'ten'"),
        (["--older-than", "1.5"], "--older-than: must be a whole number from 1 to 36500 days, not '1.5'"),
        (
            ["--older-than", "3000000"],
            "--older-than: must be a whole number from 1 to 36500 days, not 3000000",
        ),
        (
            ["--older-than", "30", "--batch-size", "0"],
            "--batch-size: must be a whole number from 1 to 5000, not 0",
        ),
        (
            ["--older-than", "30", "--batch-size", "x"],
            "--batch-size: must be a whole number from 1 to 5000, not 'x'",
        ),
        (["--thread", "a\x00b"], "--thread: must not contain a NUL character, not 'a\\\\x00b'"),
        (["--thread", "\udcff"], "--thread: must be valid UTF-8 text"),
        ([], "one of the arguments --older-than --thread is required"),
        (["--older-than", "30", "--thread", "t"], "not allowed with argument"),
    ],
)
def test_purge_refuses_bad_input_and_deletes_nothing(args: list[str], message: str) -> None:
    age(answered(1), 40)
    with pytest.raises(CommandError, match=message):
        run("turnstate_purge", *args)
    assert Pause.objects.count() == 1 and CheckpointMetadata.objects.count() == 3


# -- turnstate_expire ---------------------------------------------------------------------


def overdue(n: int) -> MintedPause:
    """A pending pause whose age ended a minute ago, never marked expired."""
    minted = mint(n)
    Pause.objects.filter(jti=minted.claims.jti).update(expires_at=timezone.now() - timedelta(minutes=1))
    return minted


def statuses() -> dict[str, str]:
    return dict(Pause.objects.values_list("jti", "status"))


def test_expire_marks_overdue_pending_pauses_in_batches() -> None:
    late = [overdue(n).claims.jti for n in (1, 2, 3)]
    waiting = mint(4).claims.jti
    done = answered(5).claims.jti
    output = run("turnstate_expire", "--batch-size", "2")
    assert statuses() == {**dict.fromkeys(late, "expired"), waiting: "pending", done: "answered"}
    assert "batch 1: expired 2 pause(s)" in output and "batch 2: expired 1 pause(s)" in output
    assert "expired 3 pause(s) in 2 batch(es)" in output
    assert "expired 0 pause(s) in 0 batch(es)" in run("turnstate_expire")


def test_expire_dry_run_changes_nothing() -> None:
    late = overdue(1).claims.jti
    output = run("turnstate_expire", "--dry-run")
    assert "would expire 1 pause(s) in 1 batch(es) (dry run)" in output
    assert statuses() == {late: "pending"}


def test_an_answer_committed_during_a_batch_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch was read, then the answer committed, then the batch's UPDATE ran."""
    racing = overdue(1)
    late = overdue(2).claims.jti
    real_expire = PauseQuerySet.expire
    before_expiry = timezone.now() - timedelta(minutes=2)
    raced: list[str] = []

    def answer_first(self: PauseQuerySet, **kwargs: Any) -> int:
        if not raced:  # the resume read the clock before the pause's age ended, and commits now
            raced.append(racing.claims.jti)
            with monkeypatch.context() as clock:
                clock.setattr(timezone, "now", lambda: before_expiry)
                resume_pause(racing.token, "in time")
        return real_expire(self, **kwargs)

    monkeypatch.setattr(PauseQuerySet, "expire", answer_first)
    output = run("turnstate_expire")
    assert raced == [racing.claims.jti]
    assert statuses() == {racing.claims.jti: "answered", late: "expired"}
    assert "expired 1 pause(s) in 1 batch(es); 1 changed meanwhile and kept its status" in output


@pytest.mark.parametrize("size", ["0", "5001", "x"])
def test_expire_refuses_a_bad_batch_size(size: str) -> None:
    late = overdue(1).claims.jti
    with pytest.raises(CommandError, match="batch"):
        run("turnstate_expire", "--batch-size", size)
    assert statuses() == {late: "pending"}


# -- turnstate_unresumable: pages and streams ----------------------------------------------

TIED = (timezone.now() - timedelta(hours=1)).replace(microsecond=0)
"""The instant of :func:`five_tied`: within ``TOKEN_MAX_AGE``, so its rows are listed."""


@pytest.fixture
def five_tied() -> list[str]:
    """Five request rows no ledger owns, written in the same instant: the pk breaks the tie."""
    for n in range(5):
        legacy_request(n)
    CheckpointMetadata.objects.update(created_at=TIED)
    return [f"legacy-{n}" for n in (4, 3, 2, 1, 0)]


def test_unresumable_pages_by_cursor_through_every_row_once(five_tied: list[str]) -> None:
    seen: list[str] = []
    after: list[str] = []
    for _ in range(3):
        document = json.loads(run("turnstate_unresumable", "--json", "--limit", "2", *after))
        seen += [row["thread_id"] for row in document["results"]]
        after = ["--after", document["next"]] if "next" in document else []
    assert seen == five_tied and after == []


def test_unresumable_streams_one_json_document_per_row(five_tied: list[str]) -> None:
    lines = run("turnstate_unresumable", "--jsonl").splitlines()
    assert [json.loads(line)["thread_id"] for line in lines] == five_tied


def test_a_limited_stream_names_the_next_page_on_stderr(five_tied: list[str]) -> None:
    err = StringIO()
    out = run("turnstate_unresumable", "--jsonl", "--limit", "3", stderr=err)
    assert [json.loads(line)["thread_id"] for line in out.splitlines()] == five_tied[:3]
    cursor = err.getvalue().split("--after ", 1)[1].strip()
    rest = run("turnstate_unresumable", "--jsonl", "--after", cursor).splitlines()
    assert [json.loads(line)["thread_id"] for line in rest] == five_tied[3:]


def test_a_limited_table_ends_with_the_next_cursor(five_tied: list[str]) -> None:
    text = run("turnstate_unresumable", "--limit", "4")
    assert "4 of 5 unresumable pause(s) shown" in text
    assert f"next page: --after {TIED.isoformat()}~" in text


def test_a_limited_table_says_how_many_are_shown_and_how_many_exist(both_kinds: dict[str, str]) -> None:
    text = run("turnstate_unresumable", "--limit", "2")
    assert "2 of 3 unresumable pause(s) shown" in text
    cursor = text.split("next page: --after ", 1)[1].strip()
    assert "1 of 3 unresumable pause(s) shown" in run("turnstate_unresumable", "--after", cursor)
    assert "3 unresumable pause(s)\n" in run("turnstate_unresumable", "--limit", "3")


def test_the_legend_explains_only_the_reasons_of_the_rows_listed(both_kinds: dict[str, str]) -> None:
    newest = run("turnstate_unresumable", "--limit", "1")  # thread-5: its turn state failed at mint
    assert "thread-5" in newest and "no turn state: " + UNRESUMABLE_NO_TURN_STATE in newest
    assert UNRESUMABLE_NO_LEDGER not in newest
    CheckpointMetadata.objects.filter(thread_id="legacy-4").update(
        created_at=timezone.now() + timedelta(days=1)
    )
    legacy = run("turnstate_unresumable", "--limit", "1")
    assert "legacy-4" in legacy and "no ledger: " + UNRESUMABLE_NO_LEDGER in legacy
    assert UNRESUMABLE_NO_TURN_STATE not in legacy


@pytest.mark.parametrize("args", [["--after", "yesterday"], ["--after", "1"], ["--limit", "0"]])
def test_unresumable_refuses_a_bad_page(five_tied: list[str], args: list[str]) -> None:
    with pytest.raises(CommandError):
        run("turnstate_unresumable", *args)
