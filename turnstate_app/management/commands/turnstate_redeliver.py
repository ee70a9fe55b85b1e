"""Hand answered pauses whose hand-off never succeeded, or whose continuation failed before
running anything, to RESUME_HANDLER again; list (and, when asked, release) continuations that
were claimed and never returned."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

from django.core.management.base import CommandError, CommandParser
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from turnstate_app.conf import conf
from turnstate_app.management.base import TurnstateCommand
from turnstate_app.management.options import MAX_SECONDS, bounded_int, identifier
from turnstate_app.models import Pause
from turnstate_app.pauses import Redelivery, redeliver

seconds = bounded_int(0, MAX_SECONDS, "seconds")


class Command(TurnstateCommand):
    help = cast(
        str,
        _(
            "Call RESUME_HANDLER again for answered pauses it never accepted, whose continuation "
            "failed before running anything, or that no worker claimed within STALLED_AFTER of their "
            "hand-off (a queue that lost the task): at-least-once. A refused continuation is never "
            "handed again."
        ),
    )

    def add_arguments(self, parser: CommandParser) -> None:
        self.add_checked(
            parser,
            "--older-than",
            type=seconds,
            default=60,
            metavar="SECONDS",
            help=gettext(
                "Only pauses answered at least SECONDS ago (0 to {maximum}; default 60: leave in-flight "
                "hand-offs alone)."
            ).format(maximum=MAX_SECONDS),
        )
        self.add_checked(
            parser,
            "--jti",
            type=identifier,
            metavar="ID",
            help=gettext(
                "Only this pause, whatever its age; a continuation that crashed (the run raised) is "
                "handed again only when named here. Write --jti=ID: a jti may start with '-'."
            ),
        )
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help=gettext("List the pauses that would be handed again; hand none."),
        )
        parser.add_argument(
            "--stalled",
            action="store_true",
            help=gettext(
                "Instead: list the continuations claimed more than STALLED_AFTER seconds ago that "
                "neither returned nor refused (a crash after the claim, or a run still going)."
            ),
        )
        parser.add_argument(
            "--release",
            action="store_true",
            help=gettext(
                "With --stalled: move them back to queued (and clear handed_off_at), so the next "
                "redelivery continues them again. Only when their runs are known to be dead."
            ),
        )

    def handle(
        self,
        *args: Any,
        older_than: int,
        stalled: bool,
        release: bool,
        jti: str | None,
        dry_run: bool,
        **options: Any,
    ) -> None:
        if release and not stalled:
            raise CommandError("--release releases stalled continuations: give it with --stalled")
        if stalled:
            self.stalled(release=release)
            return
        if dry_run:
            listed = redeliver(older_than=timedelta(seconds=older_than), jti=jti, dry_run=True).listed
            for one in listed:
                self.stdout.write(f"would hand again: pause {one}")
            self.stdout.write(f"{len(listed)} pause(s) would be handed again")
            return
        if conf.RESUME_HANDLER is None:
            raise CommandError("TURNSTATE['RESUME_HANDLER'] is not set: there is nothing to hand to")
        result = redeliver(older_than=timedelta(seconds=older_than), jti=jti)
        if jti is not None and not result.listed:
            raise CommandError(
                f"pause {jti!r} is not one to hand again: unknown, not answered, continued, running, "
                "or refused (a refused continuation is never handed again; ask the person anew)"
            )
        for one, reason in result.unreadable:
            self.stderr.write(f"pause {one} not handed over, its records cannot be read: {reason}")
        self.stdout.write(summary(result))
        if result.not_handed_over:
            raise CommandError(
                f"{result.not_handed_over} pause(s) not handed over; they stay where turnstate_status "
                "counts them. See the lines above and the log."
            )

    def stalled(self, *, release: bool) -> None:
        now = timezone.now()
        listed = list(
            Pause.objects.stalled(now)
            .order_by("answered_at", "pk")
            .values_list("jti", "thread_id", "answered_at")
        )
        for jti, thread_id, answered_at in listed:
            self.stdout.write(f"stalled: pause {jti} (thread {thread_id}, answered {answered_at})")
        if not release:
            self.stdout.write(
                f"{len(listed)} stalled continuation(s) (claimed more than {conf.STALLED_AFTER:g}s ago); "
                "--release frees their claims"
            )
            return
        released = Pause.objects.filter(jti__in=[jti for jti, *_ in listed]).release_stalled(now)
        self.stdout.write(
            f"released {len(released)} stalled continuation(s); turnstate_redeliver hands them over again"
        )


def summary(result: Redelivery) -> str:
    return (
        f"redelivered {result.delivered} pause(s); {result.failed} failed again; "
        f"{len(result.unreadable)} unreadable; {result.running} still running; "
        f"{result.gone} deleted meanwhile"
    )
