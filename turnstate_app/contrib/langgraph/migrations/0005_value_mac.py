"""Each saver row gets its MAC (:mod:`turnstate_app.contrib.langgraph.integrity`): the column, then
the MAC of every row written before, in batches by id, so those rows stay readable."""

from typing import Any

from django.db import migrations, models

from turnstate_app.contrib.langgraph import integrity

BATCH = 500
MAC_HELP = (
    "The MAC (keyed from SECRET_KEY) of the row's identity, key id and stored value, written with the "
    "value; a row whose MAC is missing or wrong is unreadable."
)
TABLES = (
    ("Checkpoint", integrity.CHECKPOINT, "checkpoint"),
    ("ChannelBlob", integrity.BLOB, "blob"),
    ("CheckpointWrite", integrity.WRITE, "blob"),
)


def mac_every_row(apps: Any, schema_editor: Any) -> None:
    using = schema_editor.connection.alias
    for name, table, value in TABLES:
        model = apps.get_model("turnstate_langgraph", name)
        rows = model._default_manager.using(using).order_by("pk")
        columns = ("pk", *table.identity, "encryption_key_id", value)
        last = None
        while True:
            batch = list((rows if last is None else rows.filter(pk__gt=last)).values_list(*columns)[:BATCH])
            if not batch:
                break
            width = len(table.identity)
            keyed = [
                model(pk=row[0], value_mac=integrity.mac(table, row[1 : 1 + width], row[-2], row[-1]))
                for row in batch
            ]
            model._default_manager.using(using).bulk_update(keyed, ["value_mac"])
            last = batch[-1][0]


def mac_field() -> models.CharField:  # type: ignore[type-arg]
    return models.CharField(
        blank=True, help_text=MAC_HELP, max_length=64, null=True, verbose_name="value MAC"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("turnstate_langgraph", "0004_encryption_key_id"),
    ]

    operations = [
        migrations.AddField(model_name="channelblob", name="value_mac", field=mac_field()),
        migrations.AddField(model_name="checkpoint", name="value_mac", field=mac_field()),
        migrations.AddField(model_name="checkpointwrite", name="value_mac", field=mac_field()),
        migrations.RunPython(mac_every_row, migrations.RunPython.noop, elidable=False),
    ]
