"""Create the demo's people: an admin (staff) and alice (the person the agent asks, by e-mail too)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from rest_framework.authtoken.models import Token

ADMIN_PASSWORD = "turnstate-demo"
ALICE_PASSWORD = "alice-demo"


class Command(BaseCommand):
    help = "Create (or reset) the demo users and print their API tokens and passwords as JSON."

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model().objects
        admin, _ = users.get_or_create(username="admin", defaults={"is_staff": True, "is_superuser": True})
        admin.is_staff = admin.is_superuser = True
        admin.set_password(ADMIN_PASSWORD)
        admin.save()
        alice, _ = users.get_or_create(username="alice")
        alice.email = "alice@example.com"  # where NOTIFY (email_owner) sends her the answer links
        alice.set_password(ALICE_PASSWORD)  # she signs in to the answer page
        alice.save()
        tokens = {user.username: Token.objects.get_or_create(user=user)[0].key for user in (admin, alice)}
        passwords = {"admin_password": ADMIN_PASSWORD, "alice_password": ALICE_PASSWORD}
        self.stdout.write(json.dumps({"tokens": tokens, **passwords}))
