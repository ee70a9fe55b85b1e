"""Pauses not yet continued, bound to the pending writes their run starts from.

A LangGraph pause's ``shown`` now also holds the start of its run (the pending writes of its
checkpoint: :mod:`turnstate_app.contrib.langgraph.start`), and the continuation compares it again.
A pause minted before recorded the MAC of its question only, so every pause not yet continued
(pending, or answered and its continuation neither ``continued`` nor ``refused``) is keyed here
again: when its recorded MAC still verifies against the question as its checkpoint holds it now,
it is replaced by the MAC of that question with the checkpoint's pending writes. One that does not
verify (the question changed, the checkpoint is gone or unreadable, another saver kept it) is left
as it is, and refused at continuation as before. Backwards, the same pauses are keyed again as the
earlier build reads them.
"""

from typing import Any

from django.db import migrations, models

BATCH = 500
INTERRUPT = "__interrupt__"


def _questions_and_writes(alias: str, thread_id: str, checkpoint_id: str) -> Any:
    """Each interrupt pending at the checkpoint, shown as at mint (by id), and its pending writes;
    None when the saver cannot read it."""
    from turnstate_app.contrib.langgraph.interrupts import json_value, shown_of
    from turnstate_app.contrib.langgraph.saver import DjangoCheckpointSaver, writes_read

    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": checkpoint_id}}
    try:
        with writes_read() as seen:
            found = DjangoCheckpointSaver(using=alias).get_tuple(config)  # type: ignore[arg-type]
    except Exception:  # an unreadable row: the pause stays as it is, and is refused when continued
        return None
    if found is None:
        return None
    values = found.checkpoint.get("channel_values") or {}
    questions = {}
    for _task, channel, value in found.pending_writes or []:
        if channel != INTERRUPT:
            continue
        for interrupt in value if isinstance(value, list | tuple) else [value]:
            try:
                as_json = json_value(interrupt.value, what="an interrupt's value")
            except (TypeError, ValueError):
                continue
            questions[interrupt.id] = shown_of(as_json, values)
    return questions, seen.get((thread_id, "", checkpoint_id), [])


def _rekeyed(pause: Any, found: Any, forwards: bool) -> str | None:
    """The pause's new MAC, or None to leave it."""
    from turnstate_app.contrib.langgraph.start import shown_with_start
    from turnstate_app.pauses.binding import identity_of, shown_mac, shown_verifies
    from turnstate_app.pauses.shown import shown_digest

    if found is None or pause.interrupt_id not in found[0]:
        return None
    question = found[0][pause.interrupt_id]
    before, after = question, shown_with_start(question, found[1])
    old, new = (before, after) if forwards else (after, before)
    identity = identity_of(pause)
    if not shown_verifies(pause.shown_digest, identity, shown_digest(old)):
        return None
    return shown_mac(identity, shown_digest(new))


def rekey(apps: Any, schema_editor: Any, *, forwards: bool = True) -> None:
    alias = schema_editor.connection.alias
    Pause = apps.get_model("turnstate_app", "Pause")
    open_ = (
        Pause.objects.using(alias)
        .filter(models.Q(status="pending") | models.Q(status="answered"), interrupt_id__isnull=False)
        .filter(scope_hash__startswith="langgraph:")
        .exclude(continuation__in=["continued", "refused"])
        .order_by("pk")
    )
    last = 0
    while True:
        batch = list(open_.filter(pk__gt=last)[:BATCH])
        if not batch:
            return
        last = batch[-1].pk
        found = {
            place: _questions_and_writes(alias, *place)
            for place in {(pause.thread_id, pause.checkpoint_id) for pause in batch}
        }
        changed = []
        for pause in batch:
            mac = _rekeyed(pause, found[(pause.thread_id, pause.checkpoint_id)], forwards)
            if mac is not None:
                pause.shown_digest = mac
                changed.append(pause)
        Pause.objects.using(alias).bulk_update(changed, ["shown_digest"])


def rekey_backwards(apps: Any, schema_editor: Any) -> None:
    rekey(apps, schema_editor, forwards=False)


class Migration(migrations.Migration):
    dependencies = [
        ("turnstate_langgraph", "0005_value_mac"),
        ("turnstate_app", "0013_pause_keyed_binding"),
    ]

    operations = [
        migrations.RunPython(rekey, rekey_backwards, elidable=False),
    ]
