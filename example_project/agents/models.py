"""Where the demo keeps each agent run's visible transcript (what a chat UI would show)."""

from django.db import models


class AgentRun(models.Model):
    run_id = models.CharField(max_length=255, unique=True)
    thread_id = models.CharField(max_length=255)
    status = models.CharField(max_length=16, default="paused")  # paused | continued | stranded
    transcript = models.JSONField(default=list)
    continued_by_pid = models.IntegerField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.run_id} ({self.status})"


class Booking(models.Model):
    """One execution of the PydanticAI demo's approved tool: the demo counts them (exactly one)."""

    run_id = models.CharField(max_length=255)
    destination = models.CharField(max_length=255)
    seats = models.IntegerField()
    booked_by_pid = models.IntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.run_id}: {self.seats} to {self.destination}"
