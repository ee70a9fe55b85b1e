"""What the person was shown, as a digest, so an answer continues the run only while the stored
state still asks exactly that. Nullable, no default: adding it rewrites no row, and a pause
minted before has none and is not checked."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("turnstate_app", "0007_pause_answer_traceparent"),
    ]

    operations = [
        migrations.AddField(
            model_name="pause",
            name="shown_digest",
            field=models.CharField(
                blank=True,
                help_text="SHA-256 of what the person was shown (canonical JSON); the run continues only while the stored state still asks exactly that. Empty: minted before it was recorded, not checked.",
                max_length=64,
                null=True,
                verbose_name="shown digest",
            ),
        ),
    ]
