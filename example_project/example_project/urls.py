from demo_agents.views import run_detail, trip_detail
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/turnstate/", include("turnstate_app.urls")),
    path("answers/", include("turnstate_app.pages.urls")),  # the person's inbox and answer pages
    path("accounts/", include("django.contrib.auth.urls")),  # sign in (LOGIN_URL's default)
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("agents/runs/<str:run_id>/", run_detail, name="agent-run"),
    path("agents/trips/<str:thread_id>/", trip_detail, name="agent-trip"),
]
