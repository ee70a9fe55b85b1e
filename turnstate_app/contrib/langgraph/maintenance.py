"""Deleting, copying and pruning threads: every statement bounded, each operation one transaction.

Channel values are shared between the checkpoints that saw the same version, so a value
row goes only when no checkpoint left in its (thread, namespace) refers to it. A copied row's
MAC names its new thread: it is made again for each row whose own MAC verifies, and a row
whose MAC does not stays unreadable in the copy (it is copied without one).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

from django.db import transaction
from django.db.models import Model, Q, Sum
from django.db.models.functions import Coalesce, Length
from langgraph.checkpoint.serde.base import SerializerProtocol

from turnstate_app.contrib.langgraph import integrity
from turnstate_app.contrib.langgraph.models import ChannelBlob, Checkpoint, CheckpointWrite
from turnstate_app.contrib.langgraph.rows import BODY_WHAT, loads

CHUNK = 500  # ids per IN (...): far under every database's parameter limit
COPIED = (  # each table, its MAC's spec and its value column
    (Checkpoint, integrity.CHECKPOINT, "checkpoint"),
    (ChannelBlob, integrity.BLOB, "blob"),
    (CheckpointWrite, integrity.WRITE, "blob"),
)
STRATEGIES = ("keep_latest", "delete")
T = TypeVar("T")


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def stored_bytes(alias: str, thread_id: str) -> int:
    """What one thread takes in the saver's tables: serialized checkpoints, values and writes."""
    total = 0
    for model, column in ((Checkpoint, "checkpoint"), (ChannelBlob, "blob"), (CheckpointWrite, "blob")):
        found = model._default_manager.using(alias).filter(thread_id=thread_id)
        total += found.aggregate(n=Coalesce(Sum(Length(column)), 0))["n"]
    return total


def delete_threads(alias: str, thread_ids: Sequence[str]) -> int:
    """Every row of these threads; returns how many rows went."""
    deleted = 0
    with transaction.atomic(using=alias):
        for part in chunks(sorted(set(thread_ids))):
            for model in (CheckpointWrite, ChannelBlob, Checkpoint):
                deleted += model._default_manager.using(alias).filter(thread_id__in=part).delete()[0]
    return deleted


def copy_thread(alias: str, source: str, target: str) -> None:
    """Every checkpoint, value and write of ``source`` again under ``target`` (which must be empty)."""
    if source == target:
        return
    with transaction.atomic(using=alias):
        if Checkpoint.objects.using(alias).filter(thread_id=target).exists():
            raise ValueError(
                f"cannot copy thread {source!r} onto {target!r}: the target already has checkpoints"
            )
        for model, table, value in COPIED:
            _copy_rows(alias, model, table, value, source, target)


def _copy_rows(
    alias: str, model: type[Model], table: integrity.Table, value: str, source: str, target: str
) -> None:
    """The rows of ``source`` in ``model``'s table again under ``target``, in batches, each with the
    MAC of its new identity when its own verifies (else none: it stays unreadable)."""
    names = [f.name for f in model._meta.concrete_fields if not f.primary_key]
    rows = model._default_manager.using(alias).filter(thread_id=source).order_by("pk").values(*names)
    batch: list[Model] = []
    for row in rows.iterator(chunk_size=CHUNK):
        key_id, stored = row["encryption_key_id"], row[value]
        verifies = integrity.verifies(
            table, [row[n] for n in table.identity], key_id, stored, row["value_mac"]
        )
        row["thread_id"] = target
        identity = [row[n] for n in table.identity]
        row["value_mac"] = integrity.mac(table, identity, key_id, stored) if verifies else None
        batch.append(model(**row))
        if len(batch) == CHUNK:
            model._default_manager.using(alias).bulk_create(batch)
            batch = []
    if batch:
        model._default_manager.using(alias).bulk_create(batch)


def delete_for_runs(
    alias: str, run_ids: Sequence[str], serde: SerializerProtocol
) -> list[tuple[str, str, str]]:
    """The checkpoints these runs made, their writes, and the values nothing else refers to.

    Returns the ``(thread_id, ns_hash, checkpoint_id)`` of each checkpoint deleted."""
    if not run_ids:
        return []
    with transaction.atomic(using=alias):
        doomed: list[tuple[str, str, str]] = []
        for part in chunks(sorted(set(run_ids))):
            doomed += (
                Checkpoint.objects.using(alias)
                .filter(run_id__in=part)
                .values_list("thread_id", "ns_hash", "checkpoint_id")
            )
        _delete_checkpoints(alias, doomed)
        _delete_unreferenced_values(alias, {(t, n) for t, n, _ in doomed}, serde)
    return doomed


def prune(alias: str, thread_ids: Sequence[str], strategy: str, serde: SerializerProtocol) -> None:
    """``keep_latest``: each namespace's newest checkpoint with its writes and values; ``delete``: all."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown prune strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")
    if not thread_ids:
        return
    if strategy == "delete":
        delete_threads(alias, thread_ids)
        return
    with transaction.atomic(using=alias):
        newest: dict[tuple[str, str], str] = {}
        every: list[tuple[str, str, str]] = []
        for part in chunks(sorted(set(thread_ids))):
            for thread_id, ns_key, checkpoint_id in (
                Checkpoint.objects.using(alias)
                .filter(thread_id__in=part)
                .values_list("thread_id", "ns_hash", "checkpoint_id")
            ):
                every.append((thread_id, ns_key, checkpoint_id))
                if checkpoint_id > newest.get((thread_id, ns_key), ""):
                    newest[(thread_id, ns_key)] = checkpoint_id
        doomed = [(t, n, c) for t, n, c in every if newest[(t, n)] != c]
        _delete_checkpoints(alias, doomed)
        _delete_stray_writes(alias, thread_ids, newest)
        _delete_unreferenced_values(alias, set(newest), serde)


def _place_filter(places: Iterable[tuple[str, ...]], fields: tuple[str, ...]) -> Q:
    condition = Q()
    for place in places:
        condition |= Q(**dict(zip(fields, place, strict=True)))
    return condition


def _delete_checkpoints(alias: str, places: Sequence[tuple[str, str, str]]) -> None:
    fields = ("thread_id", "ns_hash", "checkpoint_id")
    for part in chunks(places, 100):
        condition = _place_filter(part, fields)
        CheckpointWrite.objects.using(alias).filter(condition).delete()
        Checkpoint.objects.using(alias).filter(condition).delete()


def _delete_stray_writes(alias: str, thread_ids: Sequence[str], newest: dict[tuple[str, str], str]) -> None:
    """Writes left against checkpoints that are gone (or never were stored)."""
    stray: list[Any] = []
    for part in chunks(sorted(set(thread_ids))):
        for pk, thread_id, ns_key, checkpoint_id in (
            CheckpointWrite.objects.using(alias)
            .filter(thread_id__in=part)
            .values_list("pk", "thread_id", "ns_hash", "checkpoint_id")
        ):
            if newest.get((thread_id, ns_key)) != checkpoint_id:
                stray.append(pk)
    for ids in chunks(stray):
        CheckpointWrite.objects.using(alias).filter(pk__in=ids).delete()


def _delete_unreferenced_values(alias: str, spaces: set[tuple[str, str]], serde: SerializerProtocol) -> None:
    """Value rows of these (thread, namespace) pairs that no remaining checkpoint's versions name."""
    if not spaces:
        return
    threads = sorted({thread_id for thread_id, _ in spaces})
    referenced: set[tuple[str, str, str, str]] = set()
    for part in chunks(threads):
        for thread_id, ns, ns_key, checkpoint_id, parent_id, type_, blob, key_id, mac in (
            Checkpoint.objects.using(alias)
            .filter(thread_id__in=part)
            .values_list(*integrity.CHECKPOINT.identity, "checkpoint", "encryption_key_id", "value_mac")
        ):
            if (thread_id, ns_key) not in spaces:
                continue
            identity = (thread_id, ns, ns_key, checkpoint_id, parent_id, type_)
            integrity.require(
                integrity.CHECKPOINT, identity, key_id, blob, mac, BODY_WHAT, checkpoint_id, thread_id
            )
            body = loads(
                serde, type_, blob, BODY_WHAT, checkpoint_id, thread_id, key_id=key_id, thread_id=thread_id
            )
            for channel, version in body["channel_versions"].items():
                referenced.add((thread_id, ns_key, channel, str(version)))
    unreferenced: list[Any] = []
    for part in chunks(threads):
        for pk, thread_id, ns_key, channel, version in (
            ChannelBlob.objects.using(alias)
            .filter(thread_id__in=part)
            .values_list("pk", "thread_id", "ns_hash", "channel", "version")
        ):
            if (thread_id, ns_key) in spaces and (thread_id, ns_key, channel, version) not in referenced:
                unreferenced.append(pk)
    for ids in chunks(unreferenced):
        ChannelBlob.objects.using(alias).filter(pk__in=ids).delete()
