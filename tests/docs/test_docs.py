"""The docs cannot rot: every example in README.md and docs/*.md is executed or validated.

* ```python blocks are executed.
* ```console blocks: each ``$ loopbus …`` line is run against the test server and must exit
  with the code the block expects (0, unless the line ends with ``# exit N``). Lines that
  need a whole machine or run until stopped (``loopbus up``, ``loopbus page``, ``pip``,
  ``docker``, ``git``, ``export``) or would write credentials into the checkout
  (``loopbus creds``) are shown, not run, and are listed in :data:`NOT_RUN` by their first
  words.
* ```toml blocks are parsed; when their first line is a marker comment listed in
  :data:`TOML_VALIDATORS` (``# loopbus.toml``, ``# plan.toml`` …) they are also validated by
  the code that reads that file for real.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bus import EmbeddedServer, connect, ensure_log, free_port

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
NOT_RUN = (
    "loopbus up",
    "loopbus page",
    "loopbus demo",  # a whole slice with its own server: tests/cli/test_demo.py runs it
    "loopbus init",  # writes a project: tests/cli/test_demo.py runs it
    "loopbus worker",
    "loopbus health",
    "loopbus creds",  # writes a credential into the working tree's data directory
    "loopbus provision --creds-out",  # likewise, every role's credential
    "pip ",
    "docker ",
    "git ",
    "export ",
    "cd ",
    "python -m workers",
    "pytest",
)

TOML_VALIDATORS: dict[str, Callable[[str, Path], Any]] = {}
"""First-line marker -> validator(text, tmp_dir). Modules that own a file format register
theirs below, so the docs are checked by the same code that reads the real files."""


def _register_validators() -> None:
    try:
        from workers.gates.config import load_config_text  # type: ignore[attr-defined]
    except ImportError:
        pass
    else:
        TOML_VALIDATORS["# loopbus.toml"] = lambda text, _tmp: load_config_text(text)
    from projections.plan_parse import parse_plan_text

    TOML_VALIDATORS["# plan.toml"] = lambda text, _tmp: parse_plan_text(text, "plan.toml")
    from loopbus.charter_file import parse_charter

    TOML_VALIDATORS["# charter.toml"] = lambda text, _tmp: parse_charter(text, "charter.toml")


_register_validators()


CONTINUES = "# continues"
"""First line of a block that runs after the block before it, in the same namespace."""


def blocks(language: str) -> Iterator[Any]:
    for doc in DOCS:
        text = doc.read_text()
        previous = ""
        for match in FENCE.finditer(text):
            if match.group(1) == language:
                line = text[: match.start()].count("\n") + 1
                source = match.group(2)
                if source.startswith(CONTINUES):
                    source = previous + "\n" + source
                previous = source
                yield pytest.param(source, id=f"{doc.relative_to(ROOT)}:{line}")


def unclosed_fences(text: str) -> list[int]:
    """Lines of code fences left open: one that a fence with a language (an opener) meets
    still open, or that the file ends in. Without its closing ```, the prose after a
    block renders as code, and the examples after it are paired wrong (so never run)."""
    opened: int | None = None
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("```"):
            continue
        if opened is None:
            opened = number
        elif line[3:].strip():
            problems.append(opened)
            opened = number
        else:
            opened = None
    return problems + ([opened] if opened is not None else [])


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: str(d.relative_to(ROOT)))
def test_every_code_fence_is_closed(doc: Path) -> None:
    """Every ``` block of a doc is closed before the next one opens and before the end."""
    assert unclosed_fences(doc.read_text()) == [], f"{doc.name}: fences opened there stay open"


@pytest.mark.parametrize("source", list(blocks("python")))
def test_python_examples_run(source: str) -> None:
    """Every Python example in the docs runs without error."""
    exec(compile(source, "<docs>", "exec"), {"__name__": "docs_example"})


@pytest.mark.parametrize("source", list(blocks("toml")))
def test_toml_examples_parse_and_validate(source: str, tmp_path: Path) -> None:
    """Every TOML example parses; a marked one is accepted by the code that reads it."""
    tomllib.loads(source)
    first = source.splitlines()[0].strip() if source.strip() else ""
    validator = TOML_VALIDATORS.get(first)
    if validator is not None:
        validator(source, tmp_path)


def runnable(command: str) -> bool:
    """A docs command we can run here: a loopbus command that finishes by itself."""
    if not command.startswith("loopbus ") or command.startswith(NOT_RUN):
        return False
    follows = command.startswith("loopbus tail") and "--no-follow" not in command
    return not follows


def console_commands() -> Iterator[Any]:
    """(command, expected exit code) for every runnable `$ loopbus …` line in the docs."""
    for block in blocks("console"):
        source = block.values[0]
        for raw in source.splitlines():
            if not raw.startswith("$ "):
                continue
            command, expected = raw[2:].strip(), 0
            marker = re.search(r"#\s*exit\s+(\d+)\s*$", command)
            if marker:
                expected = int(marker.group(1))
                command = command[: marker.start()].strip()
            if runnable(command):
                yield pytest.param(command, expected, id=f"{block.id}:{command[:40]}")


def opens_a_project(command: str) -> bool:
    """A command the docs show as a project's first event (``--new``): it must run before
    any other command names that project, and only once."""
    return "--new" in shlex.split(command)


CONSOLE = list(console_commands())
OPENING = [p for p in CONSOLE if opens_a_project(p.values[0])]
FOLLOWING = [p for p in CONSOLE if not opens_a_project(p.values[0])]


def run_documented(command: str, url: str) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(command)
    return subprocess.run(
        [sys.executable, "-m", "loopbus.cli", *argv[1:]],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ | {"LOOPBUS_NATS_URL": url},
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
    )


@pytest.fixture(scope="module")
def docs_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server of the docs' own: the projects they name (``demo``) hold only what the docs
    wrote, whatever other tests write on the session's server and in whatever order."""
    server = EmbeddedServer(tmp_path_factory.mktemp("docs-nats"), port=free_port(), auth=None)
    asyncio.run(server.start())
    try:
        asyncio.run(_provision(server.url))
        yield server.url
    finally:
        server.stop()


async def _provision(url: str) -> None:
    connection = await connect(url, name="docs-provision")
    try:
        await ensure_log(connection.js)
    finally:
        await connection.close()


@pytest.fixture(scope="module")
def opened(docs_url: str) -> dict[str, subprocess.CompletedProcess[str]]:
    """The docs' opening commands, run once each in document order before any other docs
    command (which may name the projects they open), whatever order the tests run in."""
    return {p.values[0]: run_documented(p.values[0], docs_url) for p in OPENING}


@pytest.mark.parametrize(("command", "expected"), OPENING)
def test_opening_examples_exit_as_documented(
    command: str, expected: int, opened: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    """Every `$ loopbus … --new` line in the docs opened its project with the exit code
    shown (run first, by the ``opened`` fixture)."""
    done = opened[command]
    assert done.returncode == expected, f"{command}\n{done.stdout}\n{done.stderr}"


@pytest.mark.usefixtures("opened")
@pytest.mark.parametrize(("command", "expected"), FOLLOWING)
def test_console_examples_exit_as_documented(command: str, expected: int, docs_url: str) -> None:
    """Every other `$ loopbus …` line in the docs runs against a real server, after the
    opening ones, with the exit code shown."""
    done = run_documented(command, docs_url)
    assert done.returncode == expected, f"{command}\n{done.stdout}\n{done.stderr}"
