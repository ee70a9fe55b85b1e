"""Every store row bound to its place by a MAC keyed from ``SECRET_KEY`` (``value_mac``).

The port now reads a row only when its MAC verifies (:mod:`turnstate_app.integrity`), so the
rows written before this are given theirs here, in batches by primary key through the ORM: the
MAC of the value exactly as stored (sealed or clear), its key id and its place, as the port
computes it. Migrating back leaves the column's values to be dropped with it.
"""

from django.db import migrations, models

from turnstate_app.integrity import row_mac

BATCH = 500
STORE_TABLE = "turnstate_app.CheckpointMetadata"


def mac_existing_rows(apps, schema_editor):
    alias = schema_editor.connection.alias
    CheckpointMetadata = apps.get_model("turnstate_app", "CheckpointMetadata")
    rows = CheckpointMetadata.objects.using(alias).filter(value_mac__isnull=True).order_by("pk")
    columns = ("pk", "thread_id", "checkpoint_id", "key", "encryption_key_id", "value")
    last = 0
    while True:
        batch = [
            CheckpointMetadata(
                pk=pk, value_mac=row_mac(STORE_TABLE, (thread_id, checkpoint_id, key), key_id, value)
            )
            for pk, thread_id, checkpoint_id, key, key_id, value in rows.filter(pk__gt=last)
            .values_list(*columns)[:BATCH]
            .iterator()
        ]
        if not batch:
            return
        last = batch[-1].pk
        CheckpointMetadata.objects.using(alias).bulk_update(batch, ["value_mac"])


class Migration(migrations.Migration):
    dependencies = [
        ("turnstate_app", "0013_pause_keyed_binding"),
    ]

    operations = [
        migrations.AddField(
            model_name="checkpointmetadata",
            name="value_mac",
            field=models.CharField(
                blank=True,
                help_text="Binds the stored value to this row and its key id, keyed from SECRET_KEY: a value changed at rest no longer matches it and is not read.",
                max_length=64,
                null=True,
                verbose_name="value MAC",
            ),
        ),
        migrations.RunPython(mac_existing_rows, migrations.RunPython.noop),
    ]
