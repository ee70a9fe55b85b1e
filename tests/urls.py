from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/turnstate/", include("turnstate_app.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("answers/", include("turnstate_app.pages.urls")),
    # Django's sign-in at the default LOGIN_URL (/accounts/login/), where the pages send a visitor.
    path("accounts/", include("django.contrib.auth.urls")),
]
