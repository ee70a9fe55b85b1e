"""Which of a purged batch's threads an integration may clear: no pause left on them, rows stored.

The core's purge announces the threads of the pauses it deleted (``pauses_purged``). A
thread another pause still points at must keep its rows, or that pause could not be
continued; and most purged threads were never a given integration's, so it looks at its
own table first. Every integration's purge receiver starts here.
"""

from __future__ import annotations

from django.db import models, router
from django.db.models import F

from turnstate_app.models import Pause
from turnstate_app.retention import InArray, stored_among


def unpaused_stored_threads(
    model: type[models.Model], field: str, thread_ids: list[str], using: str
) -> tuple[str, list[str]]:
    """Return *model*'s write alias and, sorted, the ids in *thread_ids* that *model* stores in
    *field* and that no pause on *using* holds any more.

    The integration's own table is asked first: most of a batch's threads were never its own,
    and then the ledger is asked about the few that were, or about none."""
    alias = router.db_for_write(model)
    stored = stored_among(model, field, thread_ids)
    if not stored:
        return alias, []
    still_paused = set(
        Pause.objects.using(using).filter(InArray(F("thread_id"), stored)).values_list("thread_id", flat=True)
    )
    return alias, [thread_id for thread_id in stored if thread_id not in still_paused]
