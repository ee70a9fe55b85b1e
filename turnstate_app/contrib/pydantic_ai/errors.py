"""The store's own error: a stored row that cannot be read back."""

from __future__ import annotations

from turnstate_app.errors import PayloadBindingError


class UnreadableConversationError(PayloadBindingError):
    """A stored record or entry cannot be read back (corrupt JSON, an unknown format or kind).

    Nothing from the row is returned, and no other row is tried in its place.
    """
