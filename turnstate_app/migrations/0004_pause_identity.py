"""A pause records the graph or agent that paused (its name), so that only it continues the run.

Nullable: pauses minted before recorded none, and are continued by any graph or agent, as before.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("turnstate_app", "0003_pause_lifecycle")]

    operations = [
        migrations.AddField(
            model_name="pause",
            name="agent",
            field=models.CharField(
                blank=True,
                help_text=(
                    "The name of the graph or agent that paused; only it may continue the run. "
                    "Empty: none recorded, any may."
                ),
                max_length=255,
                null=True,
                verbose_name="agent",
            ),
        ),
    ]
