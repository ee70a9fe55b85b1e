"""The saver's ids become SQLite's plain rowid: ``integer PRIMARY KEY`` without ``AUTOINCREMENT``.

AUTOINCREMENT makes every insert read and update ``sqlite_sequence``; a plain rowid does
not (see ``turnstate_app.contrib.langgraph.fields``). On SQLite each table is rebuilt
(Django copies its rows, keeping their ids, and recreates its constraints and indexes);
going back rebuilds it with AUTOINCREMENT again. On PostgreSQL, MariaDB and MySQL the
column's definition does not change and nothing is run. The id columns' collations
(migration 0002) are untouched: only ``id`` is altered.
"""

from django.db import migrations

import turnstate_app.contrib.langgraph.fields


class Migration(migrations.Migration):
    dependencies = [("turnstate_langgraph", "0002_exact_ids")]

    operations = [
        migrations.AlterField(
            model_name=model_name,
            name="id",
            field=turnstate_app.contrib.langgraph.fields.RowId(
                primary_key=True, serialize=False, verbose_name="ID"
            ),
        )
        for model_name in ("channelblob", "checkpoint", "checkpointwrite")
    ]
