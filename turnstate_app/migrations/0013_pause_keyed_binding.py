"""What was shown and what was answered, keyed: both MACs keyed from ``SECRET_KEY``.

``shown_digest`` now holds a MAC of the plain SHA-256 it held before (and of the pause's
identity), and ``answer_mac`` a MAC of the stored answer; a continuation refuses a pause whose
MACs do not verify, a missing one included. So every pause not yet continued (pending, or
answered and its continuation not ``continued``) is keyed here, in batches through the ORM:
- a plain digest recorded at mint is keyed as it is: it is what was shown, a bridge's own
  ``shown`` included, which nothing else here could recompute;
- a pause minted before digests were recorded is keyed from its stored request, which is what
  mint showed by default; a bridge that showed something else then refuses it, as changed;
- an answered pause's answer is keyed from its stored ``answer:<jti>`` row.
A record that cannot be read (absent, or its encryption key gone) stays unkeyed: its
continuation is refused. The MACs are computed here as :mod:`turnstate_app.pauses.binding`
computes them (a test continues pauses keyed by this migration). Migrating back leaves the MACs:
the earlier build compares them as plain digests and refuses those continuations, never runs one
unchecked.
"""

import hashlib
import json

from django.conf import settings
from django.db import migrations, models
from django.utils.crypto import salted_hmac

from turnstate_app.encryption import unseal_text

BATCH = 500
SHOWN_SALT = "turnstate_app.binding.shown"
ANSWER_SALT = "turnstate_app.binding.answer"
ANSWER_KEY_PREFIX = "answer:"


def _mac(salt, pause, value):
    message = json.dumps(
        [pause.jti, pause.thread_id, pause.checkpoint_id, value], ensure_ascii=False, separators=(",", ":")
    )
    return salted_hmac(salt, message, secret=settings.SECRET_KEY, algorithm="sha256").hexdigest()


def _plain_digest(value):
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _stored(rows, pause, key):
    """The text stored under ``key`` at ``pause``'s place; None when absent or unreadable."""
    row = rows.get((pause.thread_id, pause.checkpoint_id, key))
    if row is None:
        return None
    try:
        return unseal_text(row.value, row.encryption_key_id, thread_id=pause.thread_id)
    except Exception:  # a key that is gone: left unkeyed, and refused at continuation
        return None


def _shown(pause, rows):
    if pause.shown_digest:
        return _mac(SHOWN_SALT, pause, pause.shown_digest)
    request = _stored(rows, pause, pause.request_key)
    if request is None:
        return None
    try:
        return _mac(SHOWN_SALT, pause, _plain_digest(json.loads(request)))
    except ValueError:
        return None


def _answer(pause, rows):
    if pause.status != "answered":
        return None
    answer = _stored(rows, pause, f"{ANSWER_KEY_PREFIX}{pause.jti}")
    return None if answer is None else _mac(ANSWER_SALT, pause, answer)


def key_bindings(apps, schema_editor):
    alias = schema_editor.connection.alias
    Pause = apps.get_model("turnstate_app", "Pause")
    CheckpointMetadata = apps.get_model("turnstate_app", "CheckpointMetadata")
    open_ = (
        Pause.objects.using(alias)
        .filter(models.Q(status="pending") | models.Q(status="answered", answer_mac__isnull=True))
        .exclude(continuation="continued")
        .order_by("pk")
    )
    last = 0
    while True:
        batch = list(open_.filter(pk__gt=last)[:BATCH])
        if not batch:
            return
        last = batch[-1].pk
        wanted = {pause.request_key for pause in batch} | {f"{ANSWER_KEY_PREFIX}{p.jti}" for p in batch}
        rows = {
            (row.thread_id, row.checkpoint_id, row.key): row
            for row in CheckpointMetadata.objects.using(alias).filter(
                thread_id__in={pause.thread_id for pause in batch}, key__in=wanted
            )
        }
        for pause in batch:
            pause.shown_digest = _shown(pause, rows)
            pause.answer_mac = _answer(pause, rows)
        Pause.objects.using(alias).bulk_update(batch, ["shown_digest", "answer_mac"])


class Migration(migrations.Migration):
    dependencies = [
        ("turnstate_app", "0012_pause_state_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="pause",
            name="answer_mac",
            field=models.CharField(
                blank=True,
                help_text="MAC (keyed from SECRET_KEY) of the answer as stored and of the pause's identity, written as the answer is given; an answer read back that does not match it is refused. Empty: not answered.",
                max_length=64,
                null=True,
                verbose_name="answer MAC",
            ),
        ),
        migrations.AlterField(
            model_name="pause",
            name="shown_digest",
            field=models.CharField(
                blank=True,
                help_text="MAC (keyed from SECRET_KEY) of the SHA-256 of what the person was shown and of the pause's identity; the run continues only while the stored state still asks exactly that. Empty: nothing to confirm the question with, so a continuation that checks it is refused.",
                max_length=64,
                null=True,
                verbose_name="shown digest",
            ),
        ),
        migrations.RunPython(key_bindings, migrations.RunPython.noop),
    ]
