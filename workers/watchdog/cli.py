"""Command line of the watchdog: ``python -m workers.watchdog --nats-url URL``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from schemas.errors import InvalidValue
from workers.cli import Body, daemon_parser, main_for, make_kernel
from workers.runtime import DaemonContext
from workers.watchdog.daemon import Watchdog, make_watchdog
from workers.watchdog.limits import parse_limits


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser(
        "watchdog", "Mark silent units LOST; raise a finding when a wait passes its budget."
    )
    parser.add_argument(
        "--heartbeat-lapse",
        action="append",
        default=[],
        metavar="[PROJECT=]DURATION",
        help="a working unit silent this long is LOST (default 5m); PROJECT=DURATION "
        "sets one project's lapse (repeatable)",
    )
    parser.add_argument(
        "--wait-budget",
        action="append",
        default=[],
        metavar="[REASON=]DURATION",
        help="a unit blocked this long raises a finding to the blocker's owner (default "
        "30m); REASON=DURATION sets one reason's budget (repeatable)",
    )
    parser.add_argument(
        "--repo",
        type=str,
        default=None,
        help="target repository: its loopbus.toml says which checks are a profile's "
        "(owned by standards)",
    )
    parser.add_argument(
        "--project",
        action="append",
        default=[],
        metavar="P",
        help="watch only this project (repeatable; default: every project)",
    )

    def make_body(args: argparse.Namespace) -> Body:
        try:
            limits = parse_limits(args.heartbeat_lapse, args.wait_budget)
        except InvalidValue as exc:
            parser.error(f"{exc.field} {exc.value!r}: {exc.hint}")

        async def body(ctx: DaemonContext) -> None:
            dog = make_watchdog(ctx.bus, limits, repo=args.repo, projects=args.project)
            await make_kernel(ctx, dog).run(ctx.stop)

        return body

    return main_for(Watchdog.name, parser, make_body, argv)
