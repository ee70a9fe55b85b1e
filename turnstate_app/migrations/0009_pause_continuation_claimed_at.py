"""When a continuation was claimed, on the ledger row, so the stalled ones are found by an index.

Before, "stalled" probed the claim row in the store for every answered pause not continued: a
cost that grew with every answer a host continued its own way. The claimed continuations
still unfinished at migration time get the time of their claim row; a row without one stays
empty (nothing claimed it). The index replaces (status, continued_at), whose prefix it keeps.
"""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery, Value
from django.db.models.functions import Concat

CONTINUATION_KEY_PREFIX = "continuation:"  # as turnstate_app.keys spelled it at this migration


def record_open_claims(apps, schema_editor):
    alias = schema_editor.connection.alias
    Pause = apps.get_model("turnstate_app", "Pause")
    CheckpointMetadata = apps.get_model("turnstate_app", "CheckpointMetadata")
    claim_rows = CheckpointMetadata.objects.using(alias).filter(
        thread_id=OuterRef("thread_id"),
        checkpoint_id=OuterRef("checkpoint_id"),
        key=Concat(Value(CONTINUATION_KEY_PREFIX), OuterRef("jti")),
    )
    Pause.objects.using(alias).filter(
        status="answered", continued_at__isnull=True, continuation_failure__isnull=True
    ).update(continuation_claimed_at=Subquery(claim_rows.values("created_at")[:1]))


class Migration(migrations.Migration):
    dependencies = [
        ("turnstate_app", "0008_pause_shown_digest"),
    ]

    operations = [
        migrations.AddField(
            model_name="pause",
            name="continuation_claimed_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When a process last claimed the continuation of the run from this pause (its group's lead); with neither continued at nor a failure long after it, the continuation stalled.",
                null=True,
                verbose_name="continuation claimed at",
            ),
        ),
        migrations.RunPython(record_open_claims, migrations.RunPython.noop, elidable=True),
        migrations.RemoveIndex(
            model_name="pause",
            name="turnstate_pause_continued_idx",
        ),
        migrations.AddIndex(
            model_name="pause",
            index=models.Index(
                fields=["status", "continued_at", "continuation_claimed_at"],
                name="turnstate_pause_claimed_idx",
            ),
        ),
    ]
