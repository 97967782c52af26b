"""The arguments of ``loopbus findings export``; the command is
``loopbus.commands.findings``, imported only when it runs."""

from __future__ import annotations

from typing import Any

from loopbus.commands import deferred
from loopbus.completion import a_path
from loopbus.settings import CONFIG_FILE, add_connection, add_project
from schemas.findings import SEVERITIES

CONSUMERS = ("github", "sarif")
"""Who reads the export: GitHub code scanning (anchored, checked) or any SARIF reader."""


def register(sub: Any) -> None:
    group = sub.add_parser("findings", help="export a project's findings (SARIF 2.1.0)")
    actions = group.add_subparsers(dest="findings_action", metavar="ACTION")
    actions.required = True
    export = actions.add_parser(
        "export",
        help="write the findings as a SARIF 2.1.0 log for code scanning",
        description="Fold the project's log and write its findings as SARIF 2.1.0: code "
        "findings at their file and lines, other targets as logical locations, one result "
        "per finding key with a fingerprint derived from it (see docs/sarif.md).",
    )
    add_connection(export)
    add_project(export)
    export.add_argument("--format", choices=("sarif",), default="sarif", help="sarif (2.1.0)")
    which = export.add_mutually_exclusive_group()
    which.add_argument(
        "--open", dest="scope", action="store_const", const="open", help="open findings (default)"
    )
    which.add_argument(
        "--all",
        dest="scope",
        action="store_const",
        const="all",
        help="also findings no longer open, as results with a suppression saying why",
    )
    export.add_argument(
        "--min-severity", choices=SEVERITIES, default="info", help="leave out less severe ones"
    )
    export.add_argument(
        "--for",
        dest="consumer",
        choices=CONSUMERS,
        default="github",
        help="github (default): anchor findings that have no file on --anchor and refuse "
        "what GitHub code scanning would reject; sarif: plain SARIF, logical locations only",
    )
    export.add_argument(
        "--anchor",
        default=CONFIG_FILE,
        metavar="PATH",
        help="repository file a finding without one is shown on, for github (default %(default)s)",
    )
    a_path(
        export.add_argument("-o", "--output", default=None, metavar="FILE", help="default: stdout")
    )
    export.set_defaults(handler=deferred("findings", "run_export"), scope="open")
