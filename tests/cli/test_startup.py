"""A command imports only what it uses: ``--version`` and any ``--help`` import neither
nats-py nor aiohttp nor dulwich, the commands that talk to the server do not run aiohttp's
code or import dulwich, and the parser built for one command is the one the full tree has.

What is imported is read from ``sys.modules`` when the command exits (names, not times:
how long a start takes is ``tests/benchmarks/bench_cli_start.py``'s to say, and ``python -X
importtime -m loopbus ARGS`` shows where it goes)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from bus import Bus
from loopbus.cli import COMMANDS, build_parser
from schemas import Actor, UnitPlanned
from schemas.slices import PlannedUnit, SlicePlan, SlicePlanAccepted

HEAVY = ("nats", "aiohttp", "dulwich", "cryptography")
"""Packages a command that only parses its arguments has no use for."""


PROBE = """
import atexit, runpy, sys
def held():  # a module whose code has not run (the deferred aiohttp) is not counted
    return sorted(n for n, m in list(sys.modules.items()) if type(m).__name__ != "_Deferred")
atexit.register(lambda: print("MODULES", *held(), file=sys.stderr))
sys.argv[0] = "loopbus"
runpy.run_module("loopbus", run_name="__main__", alter_sys=True)
"""
"""Runs ``python -m loopbus ARGS`` and, at exit, prints every module the process holds:
whether imported by a statement, by ``importlib`` or by a lazy attribute, except one whose
code has not run (``aiohttp``, deferred by the CLI: ``bus.websocket_client``)."""


def imported(*args: str) -> tuple[int, set[str]]:
    """(exit code, every module ``loopbus ARGS`` imported), run as a new process."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if not k.startswith("LOOPBUS_")},
    )
    line = next((x for x in done.stderr.splitlines() if x.startswith("MODULES ")), None)
    assert line is not None, done.stderr[-2000:]
    names = set(line.split()[1:])
    assert "loopbus.cli" in names
    return done.returncode, names


def of(names: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if n.split(".")[0] in packages)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--version"], id="version"),
        pytest.param(["--help"], id="help"),
        pytest.param(["status", "--help"], id="status-help"),
        pytest.param(["tail", "--help"], id="tail-help"),
        pytest.param(["report", "--help"], id="report-help"),
        pytest.param(["report", "heartbeat", "--help"], id="report-heartbeat-help"),
        pytest.param(["report", "finding", "--help"], id="report-finding-help"),
        pytest.param(["report", "risk", "--help"], id="report-risk-help"),
        pytest.param(["replay", "--help"], id="replay-help"),
        pytest.param(["record", "--help"], id="record-help"),
        pytest.param(["run", "--help"], id="run-help"),
    ],
)
def test_parsing_imports_no_transport(args: list[str]) -> None:
    """--version and these --help import no nats-py, aiohttp, dulwich or cryptography."""
    code, names = imported(*args)
    assert code == 0
    assert of(names, HEAVY) == []


LOADS_ON_HELP = {"creds", "provision", "worker", "health", "merge-driver"}
"""Commands whose module still registers its parser beside its implementation, so their
``--help`` imports what the command runs: the supervisor and its daemon table (worker,
health), the server's credentials and streams (``bus.auth`` reads the stream names
from ``bus.provision``, which imports nats-py), the entity merge. Each starts in
about 0.2 s on an idle machine here (bench_cli_start.py --every-help); shrink this set,
never grow it."""


@pytest.mark.parametrize("name", [n for n in COMMANDS if n not in LOADS_ON_HELP])
def test_every_command_help_imports_no_transport(name: str) -> None:
    """Every command's --help (but the listed ones) is argparse alone: no nats-py,
    aiohttp, dulwich or cryptography; and where the parser has a module of its own
    (``*_args``), the command's implementation is not imported either."""
    code, names = imported(name, "--help")
    assert code == 0
    assert of(names, HEAVY) == []
    module = COMMANDS[name][0]
    if module.endswith("_args"):
        assert f"loopbus.commands.{module.removesuffix('_args')}" not in names


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["status", "--help"]])
def test_the_front_door_imports_no_command_and_no_fold(args: list[str]) -> None:
    """--version, --help and status --help import no other command, no fold and not the
    union of every event."""
    code, names = imported(*args)
    assert code == 0
    commands = sorted(n for n in names if n.startswith("loopbus.commands."))
    assert commands in ([], ["loopbus.commands.status_args"]), commands
    assert "schemas.events" not in names
    assert [n for n in names if n.startswith("projections")] == []


def test_a_usage_mistake_is_caught_before_the_command_is_imported() -> None:
    """A bad option of `status` is refused by its parser alone: status.py is not imported."""
    code, names = imported("status", "--no-such-option")
    assert code == 2
    assert "loopbus.commands.status" not in names
    assert of(names, HEAVY) == []


async def test_commands_that_talk_to_the_server_skip_the_websocket_client(
    bus: Bus, nats_url: str, project: str
) -> None:
    """status, tail --no-follow, report heartbeat and report risk reach the server without
    running aiohttp's code (nats-py's websocket transport) or importing dulwich."""
    actor = Actor(role="system", principal="test")
    plan = SlicePlan(slice="S1", units=[PlannedUnit(id="U1")])
    await bus.publish(SlicePlanAccepted(project=project, actor=actor, plan=plan, cause="c1"))
    await bus.publish(UnitPlanned(project=project, actor=actor, unit="U1", slice="S1"))
    where = ["--project", project, "--nats-url", nats_url]
    for args in (
        ["status", *where],
        ["tail", "--no-follow", *where],
        ["report", "heartbeat", "--unit", "U1", *where],
        ["report", "risk", "S1", *where],  # without --repo it reads no repository
    ):
        code, names = imported(*args)
        assert code == 0, args
        assert "nats.aio.client" in names, "it did use nats-py"
        assert of(names, ("aiohttp", "dulwich")) == [], args


def test_aiohttp_deferred_still_loads_when_used() -> None:
    """After the CLI defers aiohttp, nats-py binds the real module, whose code runs on the
    first read: its websocket transport, `from aiohttp import web` and `import aiohttp.web`
    work as with an eager import."""
    script = """
import sys
from bus import websocket_client
assert websocket_client.defer()
import nats, nats.aio.transport as transport
assert not websocket_client.loaded(), "import nats ran aiohttp"
assert not any(name.startswith("aiohttp.") for name in sys.modules)
import aiohttp.web
assert websocket_client.loaded()
assert transport.aiohttp is sys.modules["aiohttp"] is aiohttp
from aiohttp import ClientSession, web
assert transport.aiohttp.ClientSession is ClientSession and web.Application
assert not websocket_client.defer(), "a second call changes nothing"
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout) == (0, "ok\n"), done.stderr[-2000:]


def full_subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def summaries(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {choice.dest: choice.help for choice in action._choices_actions}


def test_the_command_table_says_what_each_command_registers() -> None:
    """Each line of `loopbus --help` (from the table in cli.py) is the help its module
    registers, in the same order, for every command."""
    full = build_parser()
    assert summaries(full) == {name: line for name, (_, line) in COMMANDS.items()}
    assert list(summaries(full)) == list(COMMANDS)
    assert summaries(build_parser(["--help"])) == summaries(full)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_command_built_alone_is_the_command_of_the_full_tree(name: str) -> None:
    """The parser built for one command's argv has that command's full help, the same as
    the whole tree gives it."""
    alone = full_subparsers(build_parser([name]))[name]
    assert alone.format_help() == full_subparsers(build_parser())[name].format_help()


def test_settings_names_the_credentials_variable_the_bus_reads() -> None:
    """settings keeps its own copy of $LOOPBUS_CREDS's name (so registering --creds imports
    no credential code): it is the name bus.creds reads."""
    from bus import creds
    from loopbus.settings import CREDS_ENV

    assert CREDS_ENV == creds.CREDS_ENV
