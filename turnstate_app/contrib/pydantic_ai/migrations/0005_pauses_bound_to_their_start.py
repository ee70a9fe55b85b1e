"""Pauses not yet continued, bound to the state their run starts from.

A PydanticAI pause's ``shown`` now also holds the start of its run (the messages up to the
deferred calls, and the calls: :mod:`turnstate_app.contrib.pydantic_ai.start`), and the
continuation compares it again. A pause minted before recorded the MAC of its tool and arguments
only, so every pause not yet continued (pending, or answered and its continuation neither
``continued`` nor ``refused``) is keyed here again: when its recorded MAC still verifies against
the call as the stored conversation holds it now, it is replaced by the MAC of that call with the
conversation's start. One that does not verify (the call changed, the conversation is gone or
unreadable) is left as it is, and refused at continuation as before. Backwards, the same pauses
are keyed again as the earlier build reads them.
"""

from django.db import migrations, models
from pydantic import TypeAdapter
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.tools import DeferredToolRequests

from turnstate_app.contrib.pydantic_ai.codec import entry_from, stored_requests
from turnstate_app.contrib.pydantic_ai.deferred import shown_call
from turnstate_app.contrib.pydantic_ai.start import start_of
from turnstate_app.errors import PayloadBindingError
from turnstate_app.pauses.binding import identity_of, shown_mac, shown_verifies
from turnstate_app.pauses.shown import shown_digest

BATCH = 500
ENTRY_COLUMNS = (
    "entry_id",
    "parent_id",
    "kind",
    "message",
    "conversation_id",
    "encryption_key_id",
    "value_mac",
)
MAX_DEPTH = 10_000_000
_requests = TypeAdapter(DeferredToolRequests)


def _history(entries, head_id):
    """The conversation's messages, oldest first, walking back from ``head_id``."""
    messages = []
    entry_id = head_id
    while entry_id is not None and len(messages) < MAX_DEPTH:
        row = entries.filter(entry_id=entry_id).values_list(*ENTRY_COLUMNS).first()
        if row is None:
            raise LookupError(entry_id)
        messages.append(entry_from(*row).message)
        entry_id = row[1]
    return list(reversed(messages))


def _calls_and_start(alias, conversations, entries, conversation_id):
    """Each call of the conversation's last response (as shown before: tool and arguments), and its start."""
    record = conversations.using(alias).filter(conversation_id=conversation_id).first()
    if record is None:
        return None
    try:
        text = stored_requests(
            conversation_id, record.deferred_tool_requests, record.encryption_key_id, record.value_mac
        )
        requests = None if text is None else _requests.validate_json(text)
        history = _history(entries.using(alias), record.head_id)
    except (PayloadBindingError, LookupError, ValueError):
        return None
    start = start_of(ModelMessagesTypeAdapter.dump_python(history, mode="json"), requests)
    response = next((message for message in reversed(history) if isinstance(message, ModelResponse)), None)
    calls = {} if response is None else {part.tool_call_id: part for part in response.tool_calls}
    return calls, start


def _rekeyed(pause, found, forwards):
    """The pause's new MAC, or None to leave it."""
    if found is None or pause.tool_call_id not in found[0]:
        return None
    calls, start = found
    part = calls[pause.tool_call_id]
    before = {"tool_name": part.tool_name, "args": part.args_as_dict()}
    after = shown_call(part.tool_name, part.args_as_dict(), start)
    old, new = (before, after) if forwards else (after, before)
    identity = identity_of(pause)
    if not shown_verifies(pause.shown_digest, identity, shown_digest(old)):
        return None
    return shown_mac(identity, shown_digest(new))


def rekey(apps, schema_editor, *, forwards=True):
    alias = schema_editor.connection.alias
    Pause = apps.get_model("turnstate_app", "Pause")
    conversations = apps.get_model("turnstate_pydantic_ai", "StoredConversation").objects
    entries = apps.get_model("turnstate_pydantic_ai", "StoredEntry").objects
    open_ = (
        Pause.objects.using(alias)
        .filter(models.Q(status="pending") | models.Q(status="answered"), tool_call_id__isnull=False)
        .filter(thread_id__in=conversations.using(alias).values("conversation_id"))
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
            thread_id: _calls_and_start(alias, conversations, entries, thread_id)
            for thread_id in {pause.thread_id for pause in batch}
        }
        changed = []
        for pause in batch:
            mac = _rekeyed(pause, found[pause.thread_id], forwards)
            if mac is not None:
                pause.shown_digest = mac
                changed.append(pause)
        Pause.objects.using(alias).bulk_update(changed, ["shown_digest"])


def rekey_backwards(apps, schema_editor):
    rekey(apps, schema_editor, forwards=False)


class Migration(migrations.Migration):
    dependencies = [
        ("turnstate_pydantic_ai", "0004_value_mac"),
        ("turnstate_app", "0013_pause_keyed_binding"),
    ]

    operations = [
        migrations.RunPython(rekey, rekey_backwards),
    ]
