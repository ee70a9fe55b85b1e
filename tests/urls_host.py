"""A host project that mounts routes of its own after the app, under the same prefix, and more."""

from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView


def host_report(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"host": "report"})


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/turnstate/", include("turnstate_app.urls")),
    path("api/turnstate/host-report/", host_report, name="host-report"),
    path("api/turnstate/pausesreport/", host_report, name="host-pausesreport"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("elsewhere/v2/things/", host_report, name="things"),
]
