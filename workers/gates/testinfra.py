"""What runs the tests, and whether a candidate's change to it changed what they say. Pure.

pytest runs the candidate's own ``conftest.py`` files, its ini settings and the plugins
they name inside the process that reports the results, so a change to any of them can turn
a failure into a pass before the reporting plugin reads it (a ``pytest_runtest_makereport``
hook wrapper, a patched report, a rewritten report file). The gate runner does not try to
out-wit such code in-process; it runs the tests a second time with trunk's versions of
those files swapped in (the candidate's code otherwise) and compares the two runs' per-test
outcomes (:func:`outcome_changes`).

A changed path is *test infrastructure* (:func:`why_infra`) when it is:

* a ``conftest.py``, ``pytest.ini`` or ``.pytest.ini`` at any depth;
* a ``pyproject.toml``, ``setup.cfg``, ``tox.ini`` (any depth: pytest reads the one nearest
  its arguments) whose pytest settings or ``pytest11`` entry points changed, or a
  ``setup.py`` that mentions pytest;
* a Python file that names pytest's plugin machinery on either side: ``pytest_plugins``, a
  ``pytest_*`` hook definition, ``hookimpl``/``hookwrapper``, ``pytest11``, the gate's own
  plugin module name;
* a file that would shadow pytest, pluggy, the gate's plugin or the interpreter's start-up
  (``pytest.py``, ``_pytest/…``, ``pluggy/…``, ``loopbus_gate_pytest.py``,
  ``sitecustomize.py``, ``usercustomize.py``).
* compiled bytecode (``*.pyc``, anything under ``__pycache__``): an unchecked-hash ``.pyc``
  is imported without looking at the source beside it.

Being generous here costs only a second run, never a wrong verdict: the comparison blocks
only when an outcome differs.
"""

from __future__ import annotations

import configparser
import posixpath
import re
import tomllib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

INFRA_NAMES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "pytest.py",
        "_pytest.py",
        "pluggy.py",
        "loopbus_gate_pytest.py",
        "sitecustomize.py",
        "usercustomize.py",
    }
)
SHADOWED_PACKAGES = frozenset({"pytest", "_pytest", "pluggy", "loopbus_gate_pytest"})
SETTINGS_FILES = frozenset({"pyproject.toml", "setup.cfg", "tox.ini"})
PLUGIN_TEXT = re.compile(
    rb"pytest_plugins|def\s+pytest_\w+|hookimpl|hookwrapper|pytest11|loopbus_gate_pytest"
)
"""What a Python file that takes part in pytest's plugin machinery says somewhere."""

PASSING = frozenset({"passed", "xpassed"})
UNMEASURED = frozenset({None, "norun", "pending-norun"})
"""A second-run ending that says nothing about the test: not collected, or never run
(pytest stops before running anything when a module fails to import)."""


@dataclass(frozen=True)
class InfraFile:
    """A changed path that is part of what runs the tests, and why it counts."""

    path: str
    why: str


def _settings(name: str, data: bytes | None) -> Any:
    """The pytest settings and plugin entry points inside a project settings file."""
    if data is None:
        return None
    text = data.decode("utf-8", "replace")
    if name == "pyproject.toml":
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return ("unparsable", text)
        tool = doc.get("tool", {}) if isinstance(doc.get("tool"), dict) else {}
        project = doc.get("project", {}) if isinstance(doc.get("project"), dict) else {}
        poetry = tool.get("poetry", {}) if isinstance(tool.get("poetry"), dict) else {}
        entry_points = project.get("entry-points", {})
        plugins = poetry.get("plugins", {})
        return (
            {k: v for k, v in tool.items() if k.startswith("pytest")},
            entry_points.get("pytest11") if isinstance(entry_points, dict) else entry_points,
            plugins.get("pytest11") if isinstance(plugins, dict) else plugins,
        )
    parser = configparser.RawConfigParser()
    try:
        parser.read_string(text)
    except configparser.Error:
        return ("unparsable", text)
    sections = ("tool:pytest", "options.entry_points") if name == "setup.cfg" else ("pytest",)
    return {s: dict(parser[s]) for s in sections if parser.has_section(s)}


def why_infra(path: str, base: bytes | None, head: bytes | None) -> str | None:
    """Why a changed ``path`` (``base``/``head``: its bytes on each side, ``None`` when
    absent) is part of what runs the tests, or ``None`` when it is not."""
    name = posixpath.basename(path)
    folders = path.split("/")[:-1]
    if name in INFRA_NAMES:
        return f"{name} is loaded by pytest or the interpreter"
    if any(folder in SHADOWED_PACKAGES for folder in folders):
        return "it would shadow pytest, pluggy or the gate's reporting plugin"
    if "__pycache__" in folders or name.endswith((".pyc", ".pyo")):
        return "compiled bytecode can be imported instead of the source beside it"
    if name in SETTINGS_FILES:
        if _settings(name, base) != _settings(name, head):
            return "its pytest settings or pytest11 entry points changed"
        return None
    if name == "setup.py":
        if any(side is not None and b"pytest" in side for side in (base, head)):
            return "a setup.py that mentions pytest"
        return None
    if name.endswith(".py") and any(
        side is not None and PLUGIN_TEXT.search(side) for side in (base, head)
    ):
        return "a Python file that takes part in pytest's plugin machinery"
    return None


def infra_files(paths: Sequence[str], read: Callable[[str, str], bytes | None]) -> list[InfraFile]:
    """The changed ``paths`` that are test infrastructure. ``read(side, path)`` gives a
    file's bytes on ``"base"`` or ``"head"`` (``None``: absent there)."""
    found = []
    for path in paths:
        why = why_infra(path, read("base", path), read("head", path))
        if why is not None:
            found.append(InfraFile(path, why))
    return found


def _instance_of(nodeid: str, criterion: str) -> bool:
    return nodeid == criterion or nodeid.startswith(criterion + "[")


def _bare(ending: str) -> str:
    return ending.removeprefix("pending-")


def compared_tests(
    trunk: Mapping[str, str] | None,
    criteria: Collection[str],
    own: Mapping[str, str],
    swapped: Mapping[str, str],
) -> list[str]:
    """The tests whose outcome must not depend on the candidate's test infrastructure: every
    test that passed on trunk's run of the check, and every instance of the unit's criteria
    that either run collected."""
    chosen = {n for n, ending in (trunk or {}).items() if _bare(ending) in PASSING}
    for nodeid in (*own, *swapped):
        if any(_instance_of(nodeid, c) for c in criteria):
            chosen.add(nodeid)
    return sorted(chosen)


@dataclass(frozen=True)
class OutcomeChange:
    """One test that ends differently with trunk's test infrastructure swapped in."""

    nodeid: str
    own: str | None
    """Its ending in the candidate's own run (``None``: not collected there)."""
    swapped: str | None
    """Its ending with trunk's test infrastructure (``None``: not collected there)."""

    def line(self) -> str:
        own = self.own or "not collected"
        theirs = self.swapped or "not collected"
        return f"{self.nodeid}: {own} with the candidate's files, {theirs} with trunk's"


def outcome_changes(
    compared: Sequence[str], own: Mapping[str, str], swapped: Mapping[str, str]
) -> list[OutcomeChange]:
    """Every compared test whose ending differs between the two runs (a test that one run
    did not collect differs too: nothing is known about it there)."""
    changes = []
    for nodeid in compared:
        mine, theirs = own.get(nodeid), swapped.get(nodeid)
        if mine is None and theirs is None:
            continue  # neither run has it: the vanished and contract checks speak for it
        if mine != theirs:
            changes.append(OutcomeChange(nodeid, mine, theirs))
    return changes


COMPARED = ("pytest", "exit-code")
"""The parsers whose checks run again: pytest (per test) and exit-code (the command may run
pytest too, and says only pass or fail). Ruff runs none of the project's code."""


def check_change(check: str, own: str, swapped: str) -> tuple[list[str], list[OutcomeChange]]:
    """An exit-code check names no tests: it is compared as a whole, and only a pass that
    trunk's files turn red counts (a failure the candidate's files would have hidden)."""
    name = f"check:{check}"
    if own == "pass" and swapped != "pass":
        return [name], [OutcomeChange(name, own, swapped)]
    return [name], []


def describe(
    files: Sequence[InfraFile], changes: Sequence[OutcomeChange], swap_error: str = ""
) -> str:
    """The finding's message: the files changed, the tests that end differently, and, when
    the swap leaves tests uncollected, that their outcome could not be checked."""
    names = ", ".join(f.path for f in files)
    shown = "; ".join(c.line() for c in changes[:5]) + ("; …" if len(changes) > 5 else "")
    message = (
        f"changing {names} changed what the tests say: {len(changes)} test(s) end "
        f"differently with trunk's versions of those files: {shown}"
    )
    if any(c.swapped in UNMEASURED for c in changes):
        message += (
            "; with trunk's test files some tests could not be collected or run, so their "
            "outcome could not be checked against them (the candidate's tests need its "
            "change to the test infrastructure): land that change in a unit of its own first"
        )
    if swap_error:
        message += f"; the run with trunk's files ended in error: {swap_error}"
    return message


@dataclass(frozen=True)
class Comparison:
    """One pytest check run again with trunk's test infrastructure: the tests compared, the
    ones that ended differently, and the second run's error (if it could not measure)."""

    check: str
    compared: list[str]
    changes: list[OutcomeChange]
    error: str = ""
