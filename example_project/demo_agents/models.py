"""Where the demo keeps each agent run's visible transcript (what a chat UI would show)."""

from django.conf import settings
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


class NodeRun(models.Model):
    """One run of a LangGraph node past its question, and the process that ran it."""

    thread_id = models.CharField(max_length=255)
    node = models.CharField(max_length=64)
    pid = models.IntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.thread_id}: {self.node} in pid {self.pid}"


class Question(models.Model):
    """A person's inbox: every pause minted for them, with its token (what a front end shows)."""

    jti = models.CharField(max_length=64, unique=True)
    token = models.TextField()
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.CASCADE)
    thread_id = models.CharField(max_length=255)
    name = models.CharField(max_length=255, blank=True)
    request = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.jti} ({self.name})"


class Booking(models.Model):
    """One execution of the PydanticAI demo's approved tool: the demo counts them (exactly one)."""

    run_id = models.CharField(max_length=255)
    destination = models.CharField(max_length=255)
    seats = models.IntegerField()
    booked_by_pid = models.IntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.run_id}: {self.seats} to {self.destination}"


class Payment(models.Model):
    """One execution of a tool of the OpenAI Agents SDK demo: the demo counts them (once each)."""

    run_id = models.CharField(max_length=255)
    tool = models.CharField(max_length=64)
    detail = models.CharField(max_length=255)
    pid = models.IntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.run_id}: {self.tool} {self.detail}"
