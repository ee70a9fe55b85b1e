"""Every stored message and every record's waiting tool calls bound to their row by a MAC.

The store now reads an entry's message, or a record's deferred tool requests, only when the row's
MAC (keyed from ``SECRET_KEY``, :mod:`turnstate_app.integrity`) verifies, so the rows written
before this are given theirs here, in batches by primary key through the ORM: the MAC of the
value exactly as stored (sealed or clear), its key id and the columns that name the row, as the
store computes it. Migrating back leaves the column's values to be dropped with it.
"""

from django.db import migrations, models

from turnstate_app.integrity import row_mac

BATCH = 500
MAC_HELP = (
    "Binds the stored value to this row and its key id, keyed from SECRET_KEY: a value changed at "
    "rest no longer matches it and is not read."
)
# The columns that name a row in its MAC, then the value's column (as codec.py takes them).
TABLES = (
    ("StoredEntry", ("conversation_id", "entry_id", "parent_id"), "message"),
    ("StoredConversation", ("conversation_id",), "deferred_tool_requests"),
)


def mac_table(model, alias, identity, value):
    rows = model.objects.using(alias).filter(value_mac__isnull=True).order_by("pk")
    label = model._meta.label
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
        mac_table(apps.get_model("turnstate_pydantic_ai", name), alias, identity, value)


class Migration(migrations.Migration):
    dependencies = [
        ("turnstate_pydantic_ai", "0003_encryption_key_id"),
    ]

    operations = [
        migrations.AddField(
            model_name="storedconversation",
            name="value_mac",
            field=models.CharField(
                blank=True, help_text=MAC_HELP, max_length=64, null=True, verbose_name="value MAC"
            ),
        ),
        migrations.AddField(
            model_name="storedentry",
            name="value_mac",
            field=models.CharField(
                blank=True, help_text=MAC_HELP, max_length=64, null=True, verbose_name="value MAC"
            ),
        ),
        migrations.RunPython(mac_existing_rows, migrations.RunPython.noop),
    ]
