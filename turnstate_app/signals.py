"""Signals retention sends, so an integration that keeps rows of its own can follow.

The core imports no integration: an integration's app connects to these in its
``ready()``. Receivers run inside the transaction of the batch that sent them.

- ``thread_erased(sender=Pause, thread_id=str, using=str)``: everything of the thread
  was erased (``erase_thread``, ``turnstate_purge --thread``).
- ``pauses_purged(sender=Pause, thread_ids=list[str], using=str)``: a retention batch
  deleted pauses of these threads (age purge, a deleted user's pauses); some threads
  may still have other pauses.
"""

from __future__ import annotations

from django.dispatch import Signal

thread_erased = Signal()
pauses_purged = Signal()
