"""Who may call what. Row visibility is not decided here but by ``PauseQuerySet.for_user``,
and who may answer a pause by the lifecycle: a permission class only gates whole endpoints.
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request

__all__ = ["IsAuthenticated", "IsStaff"]


class IsStaff(BasePermission):
    """Operators: staff accounts. The checkpoint rows and the unresumable list hold every
    thread's data, so nobody else reaches them, owner or not."""

    message = "Only staff may use this endpoint."

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        return bool(user is not None and user.is_authenticated and user.is_staff)
