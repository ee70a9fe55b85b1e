"""The fixed vocabularies of the two tables: what a store row holds, where a pause stands."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class RowKind(models.TextChoices):
    """What a metadata row holds, computed by the database from its key."""

    REQUEST = "request", _("request")
    TURN_STATE = "turn_state", _("turn state")
    ANSWER = "answer", _("answer")
    OTHER = "other", _("other")


class PauseStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    ANSWERED = "answered", _("answered")
    EXPIRED = "expired", _("expired")


class ContinuationState(models.TextChoices):
    """Where an answered pause's continuation stands: the life after the answer.

    Empty while the pause is pending or expired; an answer sets ``queued``. The transitions
    are the ledger's own (:mod:`turnstate_app.after_answer`), each one conditional UPDATE.
    """

    QUEUED = "queued", _("queued")
    """Answered; the continuation waits for its hand-off, its worker, or its group's last answer."""
    RUNNING = "running", _("running")
    """A process claimed the continuation and runs it (stalled once older than STALLED_AFTER)."""
    CONTINUED = "continued", _("continued")
    """The run continued and returned."""
    FAILED = "failed", _("failed")
    """Nothing ran (wiring, a busy thread): retried with backoff, and turnstate_redeliver hands it again."""
    CRASHED = "crashed", _("crashed")
    """The run raised after it started: it waits for an operator (turnstate_redeliver --jti)."""
    REFUSED = "refused", _("refused")
    """The continuation refused to run (the binding, a changed question): never handed again."""
