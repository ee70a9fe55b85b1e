"""Database routers a multi-database host might write, for the routing checks."""

from __future__ import annotations

from typing import Any


class TurnstateElsewhere:
    """The app in a database of its own; the user table stays behind in ``default``."""

    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        return "turnstate" if model._meta.app_label == "turnstate_app" else None

    db_for_write = db_for_read

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool | None:
        if app_label == "turnstate_app":
            return db == "turnstate"
        return db == "default"


class LedgerWithoutUsers:
    """One database, but the user table is migrated elsewhere: the ledger's foreign key has no table."""

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool | None:
        return app_label != "auth"


class StoreApart:
    """The store in one database, the ledger in another: a resume could not be one transaction."""

    def db_for_write(self, model: Any, **hints: Any) -> str | None:
        return "store" if model._meta.model_name == "checkpointmetadata" else None


class EverythingTogether:
    """The app and the user model in one database of their own: supported."""

    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        return "turnstate" if model._meta.app_label in ("turnstate_app", "auth") else None

    db_for_write = db_for_read
