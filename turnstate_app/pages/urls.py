"""The person's pages: ``path("answers/", include("turnstate_app.pages.urls"))``, namespace
``turnstate_pages``."""

from __future__ import annotations

from django.urls import URLPattern, path, register_converter

from turnstate_app.pages import views


class PauseIdConverter:
    """A jti as the ledger holds one: no slash, no control character, at most 255 characters;
    anything else is no route (a 404 before any query, as over REST)."""

    regex = r"[^/\x00-\x1f\x7f]{1,255}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(PauseIdConverter, "turnstate_jti")

app_name = "turnstate_pages"

urlpatterns: list[URLPattern] = [
    path("", views.inbox, name="inbox"),
    path("t/<str:token>/", views.answer, name="answer"),
    path("<turnstate_jti:jti>/", views.pause, name="pause"),
]
