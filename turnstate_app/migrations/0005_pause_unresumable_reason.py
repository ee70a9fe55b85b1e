"""Why a pending pause can no longer be continued, when something other than the turn state's
absence says so: its checkpoints were deleted (LangGraph's ``delete_thread``, ``delete_for_runs``,
``prune(strategy="delete")``). Nullable, no default: adding it rewrites no row."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("turnstate_app", "0004_pause_identity"),
    ]

    operations = [
        migrations.AddField(
            model_name="pause",
            name="unresumable_reason",
            field=models.TextField(
                blank=True,
                help_text=(
                    "Why the run can no longer be continued though the pause is pending (its "
                    "checkpoints were deleted); empty: nothing known against it."
                ),
                null=True,
                verbose_name="unresumable reason",
            ),
        ),
    ]
