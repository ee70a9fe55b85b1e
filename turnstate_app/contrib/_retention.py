"""Which of a purged batch's threads an integration may clear: no pause left on them, rows stored.

The core's purge announces the threads of the pauses it deleted (``pauses_purged``). A
thread another pause still points at must keep its rows, or that pause could not be
continued; and most purged threads were never a given integration's, so it looks at its
own table before deleting from it. Both integrations' purge receivers start here.
"""

from __future__ import annotations

from django.db import models, router

from turnstate_app.models import Pause


def unpaused_stored_threads(
    model: type[models.Model], field: str, thread_ids: list[str], using: str
) -> tuple[str, list[str]]:
    """Return *model*'s write alias and, sorted, the ids in *thread_ids* that no pause on *using*
    holds any more and that *model* stores in *field*."""
    alias = router.db_for_write(model)
    still_paused = set(
        Pause.objects.using(using).filter(thread_id__in=thread_ids).values_list("thread_id", flat=True)
    )
    gone = [thread_id for thread_id in thread_ids if thread_id not in still_paused]
    if not gone:
        return alias, []
    stored = (
        model._default_manager.using(alias).filter(**{f"{field}__in": gone}).values_list(field, flat=True)
    )
    return alias, sorted(set(stored))
