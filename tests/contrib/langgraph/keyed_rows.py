"""Saver rows written behind the saver, then given the MAC the app gives them.

The serializer's and the reader's own defences (a refused constructor, an unknown type, a body
in an older shape) are tested on rows their MAC does not refuse first: rows an older build
wrote (migration 0005 gave every one its MAC), or that a host's own code wrote with the app's
key. Without a key, the same edits are refused by the MAC (test_attacks_at_rest).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Model

from turnstate_app.contrib.langgraph import integrity
from turnstate_app.contrib.langgraph.models import ChannelBlob, Checkpoint, CheckpointWrite

TABLES: dict[type[Model], tuple[integrity.Table, str]] = {
    Checkpoint: (integrity.CHECKPOINT, "checkpoint"),
    ChannelBlob: (integrity.BLOB, "blob"),
    CheckpointWrite: (integrity.WRITE, "blob"),
}


def keyed_update(model: type[Model], where: dict[str, Any], **changes: Any) -> int:
    """``model.objects.filter(**where).update(**changes)``, each changed row then given its MAC."""
    rows = model._default_manager.filter(**where)
    pks = list(rows.values_list("pk", flat=True))
    if changes:
        rows.update(**changes)
    return rekey(model, pk__in=pks)


def rekey(model: type[Model], **where: Any) -> int:
    """Give the rows matching ``where`` the MAC the saver writes; how many rows."""
    table, value = TABLES[model]
    manager = model._default_manager
    rows = manager.filter(**where).values_list("pk", *table.identity, "encryption_key_id", value)
    width = len(table.identity)
    count = 0
    for row in rows:
        mac = integrity.mac(table, row[1 : 1 + width], row[-2], row[-1])
        count += manager.filter(pk=row[0]).update(value_mac=mac)
    return count
