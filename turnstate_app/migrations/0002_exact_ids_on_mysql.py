"""Make ids compare byte for byte on MariaDB/MySQL, as they already do elsewhere.

MariaDB's and MySQL's default utf8mb4 collations fold case and accents and ignore
trailing spaces, so ``T-1`` and ``t-1`` would be one thread and the unique index would
merge them. The id columns get a binary, no-pad collation there (the same on both
tables, so joins between them compare like with like). PostgreSQL and SQLite compare
text exactly by default: nothing to do. A later migration that alters these columns
must repeat this step.
"""

from django.db import migrations

ID_COLUMNS = {
    "CheckpointMetadata": ("thread_id", "checkpoint_id", "key"),
    "Pause": ("jti", "run_id", "session_id", "thread_id", "checkpoint_id", "request_key"),
}


def _set_collation(apps, schema_editor, *, binary):
    connection = schema_editor.connection
    if connection.vendor != "mysql":
        return
    collation = "utf8mb4_nopad_bin" if connection.mysql_is_mariadb else "utf8mb4_0900_bin"
    quote = schema_editor.quote_name
    for model_name, names in ID_COLUMNS.items():
        meta = apps.get_model("turnstate_app", model_name)._meta
        modifications = ", ".join(
            f"MODIFY {quote(meta.get_field(name).column)} "
            f"varchar({meta.get_field(name).max_length}) CHARACTER SET utf8mb4"
            f"{f' COLLATE {collation}' if binary else ''} NOT NULL"
            for name in names
        )
        schema_editor.execute(f"ALTER TABLE {quote(meta.db_table)} {modifications}")


def forwards(apps, schema_editor):
    _set_collation(apps, schema_editor, binary=True)


def backwards(apps, schema_editor):
    _set_collation(apps, schema_editor, binary=False)


class Migration(migrations.Migration):
    # MySQL cannot roll DDL back, and Django refuses DDL inside a transaction there.
    atomic = False
    dependencies = [("turnstate_app", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
