"""Make ids compare byte for byte on MariaDB/MySQL, as they already do elsewhere.

MariaDB's and MySQL's default utf8mb4 collations fold case and accents and ignore
trailing spaces, so ``T-1`` and ``t-1`` would be one thread and the unique index would
merge them. The key columns get a binary, no-pad collation there. PostgreSQL and
SQLite compare text exactly by default: nothing to do. A later migration that alters
these columns must repeat this step.
"""

from django.db import migrations

KEY_COLUMNS = ("thread_id", "checkpoint_id", "key")


def _binary_collation(connection):
    return "utf8mb4_nopad_bin" if connection.mysql_is_mariadb else "utf8mb4_0900_bin"


def _set_collation(apps, schema_editor, *, binary):
    connection = schema_editor.connection
    if connection.vendor != "mysql":
        return
    model = apps.get_model("turnstate_app", "CheckpointMetadata")
    quote = schema_editor.quote_name
    collate = f" COLLATE {_binary_collation(connection)}" if binary else ""
    modifications = ", ".join(
        f"MODIFY {quote(model._meta.get_field(name).column)} varchar(255) "
        f"CHARACTER SET utf8mb4{collate} NOT NULL"
        for name in KEY_COLUMNS
    )
    schema_editor.execute(f"ALTER TABLE {quote(model._meta.db_table)} {modifications}")


def forwards(apps, schema_editor):
    _set_collation(apps, schema_editor, binary=True)


def backwards(apps, schema_editor):
    _set_collation(apps, schema_editor, binary=False)


class Migration(migrations.Migration):
    # MySQL cannot roll DDL back, and Django refuses DDL inside a transaction there.
    atomic = False
    dependencies = [("turnstate_app", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
