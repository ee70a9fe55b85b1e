"""Make the contrib's ids compare byte for byte on MariaDB/MySQL and PostgreSQL.

MariaDB's and MySQL's default utf8mb4 collations fold case and accents and ignore
trailing spaces, so two sessions (or two runs) could share one key; the id columns get a binary, no-pad collation there, as the core's migration 0002
does. On PostgreSQL they get the "C" collation, so the unique key and the thread lookups
compare bytes whatever the database's locale. SQLite compares bytes
already. A later migration that alters these columns must repeat this step.
"""

from django.db import migrations

ID_COLUMNS = {
    "StoredSessionItem": ("session_id",),
    "StoredRunState": ("run_id", "thread_id", "session_id", "revision"),
}


def _set_collation(apps, schema_editor, *, exact):
    connection = schema_editor.connection
    quote = schema_editor.quote_name
    for model_name, names in ID_COLUMNS.items():
        meta = apps.get_model("turnstate_openai_agents", model_name)._meta
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
    dependencies = [("turnstate_openai_agents", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
