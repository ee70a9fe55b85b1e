"""Create the demo's people: an admin (staff) and alice (the person the agent asks)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from rest_framework.authtoken.models import Token

ADMIN_PASSWORD = "turnstate-demo"


class Command(BaseCommand):
    help = "Create (or reset) the demo users and print their API tokens as JSON."

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model().objects
        admin, _ = users.get_or_create(username="admin", defaults={"is_staff": True, "is_superuser": True})
        admin.is_staff = admin.is_superuser = True
        admin.set_password(ADMIN_PASSWORD)
        admin.save()
        alice, _ = users.get_or_create(username="alice")
        tokens = {user.username: Token.objects.get_or_create(user=user)[0].key for user in (admin, alice)}
        self.stdout.write(json.dumps({"tokens": tokens, "admin_password": ADMIN_PASSWORD}))
