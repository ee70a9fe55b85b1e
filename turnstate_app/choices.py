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
