"""Make the saver's ids compare and sort byte for byte on MariaDB/MySQL and PostgreSQL.

MariaDB's and MySQL's default utf8mb4 collations fold case and accents and ignore
trailing spaces, so two threads could share one key; the id columns get a binary,
no-pad collation there, as the core's own migration 0002 does. On PostgreSQL the
columns get the "C" collation: checkpoint ids are ordered (the newest is the head,
``before`` pages by them), and a locale's collation may order them otherwise than
their bytes. SQLite compares bytes already. A later migration that alters these
columns must repeat this step.
"""

from django.db import migrations

ID_COLUMNS = {
    "Checkpoint": ("thread_id", "ns_hash", "checkpoint_id", "parent_checkpoint_id", "run_id"),
    "ChannelBlob": ("thread_id", "ns_hash", "channel", "version"),
    "CheckpointWrite": ("thread_id", "ns_hash", "checkpoint_id", "task_id", "channel"),
}


def _set_collation(apps, schema_editor, *, exact):
    connection = schema_editor.connection
    quote = schema_editor.quote_name
    for model_name, names in ID_COLUMNS.items():
        meta = apps.get_model("turnstate_langgraph", model_name)._meta
        table = quote(meta.db_table)
        fields = [meta.get_field(name) for name in names]
        if connection.vendor == "mysql":
            collation = "utf8mb4_nopad_bin" if connection.mysql_is_mariadb else "utf8mb4_0900_bin"
            modifications = ", ".join(
                f"MODIFY {quote(f.column)} varchar({f.max_length}) CHARACTER SET utf8mb4"
                f"{f' COLLATE {collation}' if exact else ''} {'NULL' if f.null else 'NOT NULL'}"
                for f in fields
            )
            schema_editor.execute(f"ALTER TABLE {table} {modifications}")
        elif connection.vendor == "postgresql":
            collation = '"C"' if exact else '"default"'
            modifications = ", ".join(
                f"ALTER COLUMN {quote(f.column)} TYPE varchar({f.max_length}) COLLATE {collation}"
                for f in fields
            )
            schema_editor.execute(f"ALTER TABLE {table} {modifications}")


def forwards(apps, schema_editor):
    _set_collation(apps, schema_editor, exact=True)


def backwards(apps, schema_editor):
    _set_collation(apps, schema_editor, exact=False)


class Migration(migrations.Migration):
    # MySQL cannot roll DDL back, and Django refuses DDL inside a transaction there.
    atomic = False
    dependencies = [("turnstate_langgraph", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
