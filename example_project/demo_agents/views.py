"""What a chat UI would fetch: a run's visible transcript, to its owner or staff."""

from __future__ import annotations

from rest_framework import permissions
from rest_framework.decorators import api_view, permission_classes
from rest_framework.request import Request
from rest_framework.response import Response

from demo_agents.models import AgentRun
from demo_agents.runs import shown
from demo_agents.trips import trip_state


@api_view(["GET"])
@permission_classes([permissions.IsAuthenticated])
def run_detail(request: Request, run_id: str) -> Response:
    run = AgentRun.objects.filter(run_id=run_id).first()
    if run is None:
        return Response({"detail": "no such run"}, status=404)
    return Response({"run_id": run.run_id, **shown(run)})


@api_view(["GET"])
@permission_classes([permissions.IsAuthenticated])
def trip_detail(request: Request, thread_id: str) -> Response:
    """A LangGraph trip: its log, the questions waiting (with the caller's tokens), node runs."""
    return Response(trip_state(thread_id, request.user))
