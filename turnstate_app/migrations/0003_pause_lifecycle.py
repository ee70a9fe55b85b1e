"""The pause lifecycle for agent frameworks: an answer's JSON Schema, pause groups, and how the
run's continuation ended.

``group`` is an id like the others: on MariaDB/MySQL it compares byte for byte, as migration
0002 makes the other id columns do (``G-1`` and ``g-1`` are two groups).
"""

from django.conf import settings
from django.db import migrations, models


def _group_collation(apps, schema_editor, *, binary):
    connection = schema_editor.connection
    if connection.vendor != "mysql":
        return
    collation = "utf8mb4_nopad_bin" if connection.mysql_is_mariadb else "utf8mb4_0900_bin"
    quote = schema_editor.quote_name
    field = apps.get_model("turnstate_app", "Pause")._meta.get_field("group")
    table = apps.get_model("turnstate_app", "Pause")._meta.db_table
    schema_editor.execute(
        f"ALTER TABLE {quote(table)} MODIFY {quote(field.column)} varchar({field.max_length}) "
        f"CHARACTER SET utf8mb4{f' COLLATE {collation}' if binary else ''} NULL"
    )


def exact_groups(apps, schema_editor):
    _group_collation(apps, schema_editor, binary=True)


def folded_groups(apps, schema_editor):
    _group_collation(apps, schema_editor, binary=False)


class Migration(migrations.Migration):
    dependencies = [
        ("turnstate_app", "0002_exact_ids_on_mysql"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="pause",
            name="answer_schema",
            field=models.JSONField(
                blank=True,
                help_text="The JSON Schema an answer must conform to; empty: any JSON answer.",
                null=True,
                verbose_name="answer schema",
            ),
        ),
        migrations.AddField(
            model_name="pause",
            name="continuation_failure",
            field=models.TextField(
                blank=True,
                help_text="Why the continuation refused to run; empty: it did not refuse.",
                null=True,
                verbose_name="continuation failure",
            ),
        ),
        migrations.AddField(
            model_name="pause",
            name="continued_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When the run continued from this pause (its group) returned; empty: not (yet).",
                null=True,
                verbose_name="continued at",
            ),
        ),
        migrations.AddField(
            model_name="pause",
            name="group",
            field=models.CharField(
                blank=True,
                help_text="Pauses of one group are answered one by one; their run continues once, after the last.",
                max_length=255,
                null=True,
                verbose_name="group",
            ),
        ),
        # MySQL cannot roll DDL back, and Django refuses DDL inside a transaction there.
        migrations.RunPython(exact_groups, folded_groups, atomic=False, elidable=False),
        migrations.AddIndex(
            model_name="pause",
            index=models.Index(fields=["group", "created_at"], name="turnstate_pause_group_idx"),
        ),
    ]
