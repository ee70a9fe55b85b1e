"""The app's endpoints: ``path("api/turnstate/", include("turnstate_app.urls"))``, namespace ``turnstate``."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path, re_path
from rest_framework.routers import SimpleRouter

from turnstate_app.api.views import CheckpointViewSet, PauseViewSet, StatusView, UnknownPathView

app_name = "turnstate"

# pauses, checkpoints or status, then nothing, a slash or a control character, then anything at all.
OWN_PATHS = r"^(?:pauses|checkpoints|status)(?:[/\x00-\x1f\x7f][\s\S]*)?\Z"

router = SimpleRouter()
router.register("pauses", PauseViewSet, basename="pause")
router.register("checkpoints", CheckpointViewSet, basename="checkpoint")

urlpatterns: list[URLPattern | URLResolver] = [
    *router.urls,
    path("status/", StatusView.as_view(), name="status"),
    # Last: whatever else lies under the app's own paths is a JSON 404, not the host's HTML
    # one; newlines included. Other paths under the prefix stay the host's (its own routes).
    re_path(OWN_PATHS, UnknownPathView.as_view(), name="unknown"),
]
