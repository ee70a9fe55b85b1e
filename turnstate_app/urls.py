"""The app's endpoints: ``path("api/turnstate/", include("turnstate_app.urls"))``, namespace ``turnstate``."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, re_path
from rest_framework.routers import SimpleRouter

from turnstate_app.api.views import CheckpointViewSet, PauseViewSet, UnknownPathView

app_name = "turnstate"

router = SimpleRouter()
router.register("pauses", PauseViewSet, basename="pause")
router.register("checkpoints", CheckpointViewSet, basename="checkpoint")

urlpatterns: list[URLPattern | URLResolver] = [
    *router.urls,
    # Last: whatever the routes above did not match is a JSON 404, not the host's HTML one.
    re_path(r"^.*$", UnknownPathView.as_view(), name="unknown"),
]
