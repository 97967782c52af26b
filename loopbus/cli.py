"""``loopbus``: the front door. Each command group lives in ``loopbus/commands/<name>.py``
and exposes ``register(subparsers)``; the parser a command registers sets ``handler``.

Conventions every command keeps (docs/cli.md compares them with git's and nats'):

* a user mistake ends as one line on stderr (``loopbus: error: …``) and exit 2; a refusal
  or an unreachable server as one line and exit 1; never a traceback;
* Ctrl-C exits 130, wherever it lands;
* ``--project`` defaults to ``$LOOPBUS_PROJECT``, then to the nearest ``loopbus.toml``;
* progress goes to stderr, and only when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from loopbus.errors import INTERRUPTED, UsageError
from workers.arguments import OneLineParser as OneLineParser  # agent.py's late options too

COMMANDS: dict[str, tuple[str, str]] = {
    "init": (
        "init_args",
        "scaffold a small runnable project: package, criteria, loopbus.toml, plan, git",
    ),
    "demo": ("demo_args", "run the whole loop on a scaffolded project and print its timeline"),
    "up": ("up_args", "run loopbus: embedded NATS, the log, every daemon"),
    "report": (
        "report_args",
        "publish a claim (a report or a finding), or read a slice's risk report",
    ),
    "approve": (
        "approve_args",
        "approve a unit for merge, a charter, a proposed plan, a skeleton or a configuration "
        "proposal (operators)",
    ),
    "charter": ("charter_args", "what a run is for, and what it may spend"),
    "run": (
        "run_args",
        "the run of the charter in force: state, slices, criteria held, budgets spent",
    ),
    "creds": ("creds", "manage credentials (who may publish what)"),
    "tail": ("tail_args", "follow findings and transitions live"),
    "replay": ("replay_args", "fold the log from sequence 1 and show the state"),
    "status": ("status_args", "the current state, from the materialised view"),
    "page": ("page_args", "serve the live, read-only operator page"),
    "worker": ("worker", "run one daemon in the foreground"),
    "health": ("worker", "exit 0 when a daemon's beacon is fresh"),
    "provision": ("provision", "create the log and buckets (idempotent) on an existing server"),
    "plan": ("plan_args", "check or submit a slice plan"),
    "decide": ("decide_args", "settle a builder's novel decision that waits on the operator"),
    "trunk": ("trunk", "act on the project's trunk"),
    "config": ("config_args", "the configuration that judges trunk (operators)"),
    "record": ("record_args", "the run record of a project, from the log"),
    "gate": (
        "gate_args",
        "run a commit's gates (cached, signed, three outcomes); claim a ratchet move",
    ),
    "findings": ("findings_args", "export a project's findings (SARIF 2.1.0)"),
    "finding": ("finding_args", "dismiss, resolve or reopen a finding (operator)"),
    "decision": ("decision_args", "record, supersede, show or list durable decisions"),
    "merge-driver": (
        "merge_driver",
        "git merge driver merging by entity (functions, classes…) with tree-sitter",
    ),
    "agent": (
        "agent",
        "run a headless coding-agent CLI (claude, codex, gemini, opencode) as an agent",
    ),
    "completion": ("completion", "print the shell completion script for bash, zsh or fish"),
}
"""Command -> (the module under ``loopbus.commands`` whose ``register`` adds it, its line
in ``loopbus --help``), in the order ``--help`` lists them.

A command's module is imported only when that command runs (or for the whole tree, which
``completion`` and the tests build): ``loopbus --help`` reads the lines here, so it imports
no command at all. ``tests/cli/test_startup.py`` holds each line equal to the help its
module registers."""


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as distribution_version

    try:
        return distribution_version("loopbus")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


class _Version(argparse._VersionAction):
    """``--version``, reading the installed version only when asked (importlib.metadata
    scans the installed distributions: every other command would pay for it)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        self.version = f"loopbus {version()}"
        super().__call__(parser, *args, **kwargs)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; given ``argv``, only the command it names is built in
    full (the others are a line in ``--help``), so only that command's module is imported."""
    from loopbus.examples import attach

    parser = OneLineParser(
        prog="loopbus",
        description="Event-sourced backbone for autonomous build loops, on NATS JetStream.",
    )
    parser.add_argument("--version", action=_Version, version="loopbus")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True
    chosen = None if argv is None else COMMANDS.get(named_command(argv), ("", ""))[0]
    registered: set[str] = set()
    for name, (module, summary) in COMMANDS.items():
        if chosen is not None and module != chosen:
            sub.add_parser(name, help=summary)
        elif module not in registered:  # one module may register two commands (worker)
            registered.add(module)
            # __import__ rather than importlib.import_module: -X importtime shows it.
            __import__(f"loopbus.commands.{module}", fromlist=["register"]).register(sub)
    attach(parser)
    return parser


def named_command(argv: Sequence[str]) -> str:
    """The command ``argv`` names: its first word that is not an option (``loopbus`` has
    only ``--help`` and ``--version``, which take no value); "" when there is none."""
    return next((word for word in argv if not word.startswith("-")), "")


def main(argv: Sequence[str] | None = None) -> int:
    # nats-py runs aiohttp's code on import for a websocket transport loopbus does not use:
    # deferred until something reads from it (bus.websocket_client says how).
    from bus import websocket_client

    websocket_client.defer()
    try:
        return _main(argv)
    except KeyboardInterrupt:  # while importing, parsing or running: the same exit
        return INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    from loopbus.errors import LoopbusError
    from loopbus.settings import resolve_project

    words = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(words).parse_args(words)  # a value that is not UTF-8: refused there
    try:
        _environment_is_text()
        resolve_project(args)
        return int(args.handler(args))
    except LoopbusError as exc:
        return _fail(str(exc), exc.exit_code)
    except BrokenPipeError:  # `loopbus tail | head` is not an error
        return 0
    except Exception as exc:
        if _is_ours(exc):
            return _fail(str(exc), 1)
        raise


FILE_VARIABLES = frozenset({"LOOPBUS_CREDS", "LOOPBUS_TLS_CA", "LOOPBUS_REPO"})
"""Variables naming a file or folder (as do the ``*_DIR`` ones): their bytes go back to the
operating system as they came, so they need not be UTF-8."""


def _environment_is_text() -> None:
    """Refuse a ``LOOPBUS_*`` variable holding text that is not UTF-8 (a project, a
    principal, a URL) in one line naming it, before it reaches a URL parser or an event."""
    from workers.arguments import is_text, shown_bytes

    for name, value in os.environ.items():
        if not name.startswith("LOOPBUS_") or name in FILE_VARIABLES or name.endswith("_DIR"):
            continue
        if not is_text(value):
            raise UsageError(
                f"${name} {shown_bytes(value)} is not UTF-8 text: set it in UTF-8, or unset it"
            )


def _is_ours(exc: Exception) -> bool:
    """A BusError or a SchemaError: a refusal or an unreachable server, told in one line.

    Their modules are looked up, not imported: one that was never imported raised nothing,
    and importing the schemas to learn that would cost every command that fails."""
    families = (
        getattr(sys.modules.get(name), attr, None)
        for name, attr in (
            ("bus.errors", "BusError"),
            ("schemas.errors", "SchemaError"),
        )
    )
    return any(isinstance(family, type) and isinstance(exc, family) for family in families)


def _fail(message: str, code: int) -> int:
    from loopbus.terminal_text import one_line

    # An error can quote the log (a refusal's message, a claim's field): shown inert.
    print(f"loopbus: error: {one_line(message)}", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
