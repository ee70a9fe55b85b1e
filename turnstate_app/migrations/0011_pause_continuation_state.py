"""The life after the answer as one state: ``continuation`` replaces three columns and the claim rows.

Where each answered pause lands, from the old columns and ``continuation:<jti>`` rows:
- ``continued_at`` set: ``continued`` (since then);
- ``continuation_failure`` set: ``refused``, with it as the reason (every recorded failure was a refusal);
- claimed (``continuation_claimed_at``, or a claim row) and neither: ``running`` since the claim,
  so a dead one shows as stalled;
- none of these: ``queued`` (since the answer); ``handed_off_at`` keeps telling whether the
  hand-off succeeded.
A pending or expired pause has no continuation. The claim rows then go: the claim is the ledger
row's own transition from now on.
"""

import json

from django.db import migrations, models
from django.db.models import F, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce, Concat

CONTINUATION_KEY_PREFIX = "continuation:"  # as turnstate_app.keys spelled it before this migration


def to_states(apps, schema_editor):
    alias = schema_editor.connection.alias
    Pause = apps.get_model("turnstate_app", "Pause")
    CheckpointMetadata = apps.get_model("turnstate_app", "CheckpointMetadata")
    answered = Pause.objects.using(alias).filter(status="answered")
    answered.filter(continued_at__isnull=False).update(
        continuation="continued", continuation_since=F("continued_at")
    )
    answered.filter(continued_at__isnull=True, continuation_failure__isnull=False).update(
        continuation="refused",
        continuation_reason=F("continuation_failure"),
        continuation_since=Coalesce(F("continuation_claimed_at"), F("answered_at")),
    )
    claim_rows = CheckpointMetadata.objects.using(alias).filter(
        thread_id=OuterRef("thread_id"),
        checkpoint_id=OuterRef("checkpoint_id"),
        key=Concat(Value(CONTINUATION_KEY_PREFIX), OuterRef("jti")),
    )
    open_ = answered.filter(continued_at__isnull=True, continuation_failure__isnull=True)
    open_.filter(continuation_claimed_at__isnull=False).update(
        continuation="running", continuation_since=F("continuation_claimed_at"), continuation_attempts=1
    )
    open_.filter(continuation_claimed_at__isnull=True).update(
        continuation_since=Subquery(claim_rows.values("created_at")[:1])
    )
    open_.filter(continuation_claimed_at__isnull=True, continuation_since__isnull=False).update(
        continuation="running", continuation_attempts=1
    )
    # Only a group's lead was claimed: the rest of a running group runs with it.
    running_groups = answered.filter(continuation="running", group__isnull=False)
    for group, since in list(running_groups.values_list("group", "continuation_since")):
        answered.filter(group=group, continuation__isnull=True).update(
            continuation="running", continuation_since=since
        )
    answered.filter(continuation__isnull=True).update(
        continuation="queued", continuation_since=F("answered_at")
    )
    CheckpointMetadata.objects.using(alias).filter(key__startswith=CONTINUATION_KEY_PREFIX).delete()


def to_columns(apps, schema_editor):
    alias = schema_editor.connection.alias
    Pause = apps.get_model("turnstate_app", "Pause")
    answered = Pause.objects.using(alias).filter(status="answered")
    answered.filter(continuation="continued").update(continued_at=F("continuation_since"))
    answered.filter(continuation__in=["refused", "crashed", "failed"]).update(
        continuation_failure=Coalesce(F("continuation_reason"), Value("failed"))
    )
    answered.filter(continuation="running").update(continuation_claimed_at=F("continuation_since"))
    # The claim rows back, one per running continuation (a group's first member), or the old
    # code would claim it a second time.
    CheckpointMetadata = apps.get_model("turnstate_app", "CheckpointMetadata")
    leads = {}
    for pause in answered.filter(continuation="running").order_by("created_at", "pk"):
        leads.setdefault(pause.group or pause.pk, pause)
    for lead in leads.values():
        CheckpointMetadata.objects.using(alias).get_or_create(
            thread_id=lead.thread_id,
            checkpoint_id=lead.checkpoint_id,
            key=CONTINUATION_KEY_PREFIX + lead.jti,
            defaults={
                "value": json.dumps({"by": lead.jti, "at": lead.continuation_since.isoformat(), "holder": ""})
            },
        )


class Migration(migrations.Migration):
    dependencies = [
        ("turnstate_app", "0010_encryption_key_id"),
    ]

    operations = [
        migrations.AddField(
            model_name="pause",
            name="continuation",
            field=models.CharField(
                blank=True,
                choices=[
                    ("queued", "queued"),
                    ("running", "running"),
                    ("continued", "continued"),
                    ("failed", "failed"),
                    ("crashed", "crashed"),
                    ("refused", "refused"),
                ],
                help_text="Where the run's continuation from this answer stands (queued, running, continued, failed, crashed, refused); empty while the pause is not answered.",
                max_length=16,
                null=True,
                verbose_name="continuation",
            ),
        ),
        migrations.AddField(
            model_name="pause",
            name="continuation_since",
            field=models.DateTimeField(
                blank=True,
                help_text="When the continuation entered its state (for running: when it was claimed).",
                null=True,
                verbose_name="continuation since",
            ),
        ),
        migrations.AddField(
            model_name="pause",
            name="continuation_reason",
            field=models.TextField(
                blank=True,
                help_text="Why the continuation failed, crashed or was refused; empty otherwise.",
                null=True,
                verbose_name="continuation reason",
            ),
        ),
        migrations.AddField(
            model_name="pause",
            name="continuation_attempts",
            field=models.PositiveSmallIntegerField(
                default=0,
                help_text="How many times the continuation was tried (claimed, or failed before running).",
                verbose_name="continuation attempts",
            ),
        ),
        migrations.AddField(
            model_name="pause",
            name="continuation_retry_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When a failed continuation is tried again; empty: not by itself (CONTINUATION_ATTEMPTS spent, or not failed).",
                null=True,
                verbose_name="next try",
            ),
        ),
        migrations.RunPython(to_states, to_columns),
        migrations.RemoveIndex(model_name="pause", name="turnstate_pause_handoff_idx"),
        migrations.RemoveIndex(model_name="pause", name="turnstate_pause_claimed_idx"),
        migrations.RemoveField(model_name="pause", name="continued_at"),
        migrations.RemoveField(model_name="pause", name="continuation_claimed_at"),
        migrations.RemoveField(model_name="pause", name="continuation_failure"),
        migrations.AddIndex(
            model_name="pause",
            index=models.Index(fields=["continuation", "handed_off_at"], name="turnstate_pause_handoff_idx"),
        ),
        migrations.AddIndex(
            model_name="pause",
            index=models.Index(
                fields=["continuation", "continuation_since"], name="turnstate_pause_contin_idx"
            ),
        ),
    ]
