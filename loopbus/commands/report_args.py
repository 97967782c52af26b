"""The arguments of ``loopbus report …``. The commands are ``report`` (finding),
``unit_reports`` (started, heartbeat, blocked, unblocked, commit, gave-up) and
``usage_report`` (usage), each imported only when it runs: ``report --help`` and a mistake in
the arguments cost argparse, not nats-py and the folds; a script that calls ``report
heartbeat`` in a loop pays for what the heartbeat uses, once per beat.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from loopbus.commands import deferred
from loopbus.completion import offer
from loopbus.known import add_new
from loopbus.seconds import seconds
from loopbus.settings import add_connection, add_project
from schemas.authority import UNIT_CLAIMANTS
from schemas.envelope import Role
from schemas.findings import FINDING_CLASSES, PRODUCERS, SEVERITIES
from schemas.units import BLOCK_REASONS, SUBJECT_KINDS


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "report", help="publish a claim (a report or a finding), or read a slice's risk report"
    )
    kinds = parser.add_subparsers(dest="report_kind", metavar="KIND")
    kinds.required = True
    finding = kinds.add_parser("finding", help="raise a finding")
    add_connection(finding, role="agent")
    add_claimant(finding)
    add_project(finding)
    offer(finding.add_argument("--producer", required=True, help=", ".join(PRODUCERS)), PRODUCERS)
    finding.add_argument(
        "--target",
        required=True,
        help="code:PATH:START-END, plan:SLICE, record:ID, check:ID, budget:NAME, "
        "profile:NAME or decision:ID",
    )
    offer(finding.add_argument("--severity", required=True, help=", ".join(SEVERITIES)), SEVERITIES)
    finding.add_argument("--criterion", default="")
    offer(
        finding.add_argument(
            "--class", dest="cls", default="defect", help=", ".join(FINDING_CLASSES)
        ),
        FINDING_CLASSES,
    )
    finding.add_argument("--message", required=True)
    finding.add_argument("--unit", default=None)
    finding.add_argument("--slice", default=None)
    finding.add_argument("--owner", default=None, help="who must act (default: routed by class)")
    finding.add_argument(
        "--evidence", action="append", default=[], metavar="KEY=VALUE", help="repeatable"
    )
    add_new(finding, "this finding")
    finding.set_defaults(handler=deferred("report", "run_finding"))
    register_units(kinds)  # started, heartbeat, blocked, unblocked, commit, gave-up
    register_usage(kinds)
    register_risk(kinds)


def add_claimant(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--principal",
        default=None,
        help="who is claiming (default: the credential's principal, else $LOOPBUS_PRINCIPAL, "
        "else your user name); a credential may claim only as its own principal",
    )


CLAIMANTS: tuple[Role, ...] = UNIT_CLAIMANTS

_HELP = {
    "started": "claim the unit has started (after it was dispatched)",
    "heartbeat": (
        "say the unit is alive (kept in the heartbeat bucket, not on the log; only the system "
        "credential may write it, and only the unit's holder's beat counts)"
    ),
    "blocked": "claim the unit cannot proceed: --reason and --subject",
    "unblocked": "claim what the unit waited on has arrived",
    "commit": "submit the unit's commit for the gates: --sha",
    "gave-up": "give the unit up, saying why: --why",
}


def register_units(kinds: Any) -> None:
    """Add the unit report subcommands to ``loopbus report``'s subparsers."""
    for name, text in _HELP.items():
        parser = kinds.add_parser(name, help=text, description=text)
        add_connection(parser, role="agent")
        add_claimant(parser)
        add_project(parser)
        parser.add_argument("--unit", required=True)
        offer(
            parser.add_argument(
                "--role",
                default="builder",
                help="who claims: builder (default) or operator (speaking for the unit)",
            ),
            CLAIMANTS,
        )
        if name == "blocked":
            offer(
                parser.add_argument("--reason", default=None, help=", ".join(BLOCK_REASONS)),
                BLOCK_REASONS,
            )
            parser.add_argument(
                "--subject",
                default=None,
                help="what it waits on: "
                + "; ".join(f"{r} -> {k}" for r, k in SUBJECT_KINDS.items()),
            )
        elif name == "commit":
            parser.add_argument("--sha", default=None, help="the full commit id")
        elif name == "gave-up":
            parser.add_argument("--why", default=None, help="why the unit cannot be finished")
        if name != "heartbeat":
            parser.add_argument(
                "--wait",
                type=seconds(hint="leave --wait out not to wait"),
                default=None,
                metavar="SECONDS",
                help="wait this long for the units daemon's answer and print it",
            )
        parser.set_defaults(handler=deferred("unit_reports"), report_verb=name)


def register_usage(kinds: Any) -> None:
    text = "report the tokens one builder turn spent on a unit"
    parser = kinds.add_parser("usage", help=text, description=text)
    add_connection(parser, role="agent")
    add_claimant(parser)
    add_project(parser)
    parser.add_argument("--unit", required=True)
    parser.add_argument("--tokens-in", type=int, default=0, metavar="N")
    parser.add_argument("--tokens-out", type=int, default=0, metavar="N")
    parser.add_argument("--model", default="")
    parser.set_defaults(handler=deferred("usage_report"))


def register_risk(kinds: Any) -> None:
    text = "print a slice's risk report, least verified first (reads the log; publishes nothing)"
    parser = kinds.add_parser("risk", help=text, description=text)
    add_connection(parser)
    add_project(parser)
    parser.add_argument("slice", metavar="SLICE", help="the slice id")
    parser.add_argument(
        "--repo",
        type=Path,
        default=None,
        help="the project's repository: trunk's loopbus.toml says which files each check "
        "reads (without it, files no check reads are not reported)",
    )
    parser.add_argument("--trunk", default="HEAD", help="trunk's ref (default %(default)s)")
    parser.add_argument("--json", action="store_true", help="the items as JSON")
    parser.set_defaults(handler=deferred("risk_report"))
