"""Every run state and session item bound to its row by a MAC keyed from ``SECRET_KEY``.

The contrib now reads a state or an item only when its row's MAC (:mod:`turnstate_app.integrity`)
verifies, so the rows written before this are given theirs here, in batches by primary key through
the ORM: the MAC of the value exactly as stored (sealed or clear), its key id and the columns that
name the row, as the codec computes it (a state: its run, thread and revision; an item: its
session). Migrating back leaves the column's values to be dropped with it.
"""

from django.db import migrations, models

from turnstate_app.integrity import row_mac

BATCH = 500
LABEL = "turnstate_openai_agents"
MAC_HELP = (
    "Binds the stored value to this row and its key id, keyed from SECRET_KEY: a value changed at "
    "rest no longer matches it and is not read."
)
# The model, the columns that name a row in its MAC (as codec.py takes them), the value's column.
TABLES = (
    ("StoredRunState", ("run_id", "thread_id", "revision"), "state"),
    ("StoredSessionItem", ("session_id",), "item"),
)


def mac_table(model, alias, identity, value):
    rows = model.objects.using(alias).filter(value_mac__isnull=True).order_by("pk")
    label = model._meta.label  # a historical model's label is the app's model's
    last = 0
    while True:
        batch = [
            model(pk=pk, value_mac=row_mac(label, named, key_id, stored))
            for pk, key_id, stored, *named in rows.filter(pk__gt=last)
            .values_list("pk", "encryption_key_id", value, *identity)[:BATCH]
            .iterator()
        ]
        if not batch:
            return
        last = batch[-1].pk
        model.objects.using(alias).bulk_update(batch, ["value_mac"])


def mac_existing_rows(apps, schema_editor):
    alias = schema_editor.connection.alias
    for name, identity, value in TABLES:
        mac_table(apps.get_model(LABEL, name), alias, identity, value)


class Migration(migrations.Migration):
    dependencies = [
        ("turnstate_openai_agents", "0003_encryption_key_id"),
    ]

    operations = [
        migrations.AddField(
            model_name="storedrunstate",
            name="value_mac",
            field=models.CharField(
                blank=True, help_text=MAC_HELP, max_length=64, null=True, verbose_name="value MAC"
            ),
        ),
        migrations.AddField(
            model_name="storedsessionitem",
            name="value_mac",
            field=models.CharField(
                blank=True, help_text=MAC_HELP, max_length=64, null=True, verbose_name="value MAC"
            ),
        ),
        migrations.RunPython(mac_existing_rows, migrations.RunPython.noop),
    ]
