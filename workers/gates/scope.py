"""What a unit may change: the files the plan gave it, and nothing that judges it. Pure.

The gate runner applies this to every unit commit before gating it, whether or not a
reviewer is configured: the unit's diff against the trunk commit it was dispatched on
(read from the system's own ``unit.dispatched`` fact) must stay inside its owned
``files``; and some paths are frozen for every unit, owned or not:

* the test files acceptance criteria live in (any unit's criteria);
* ``loopbus.toml``, except the allowed edits (see :mod:`.trunkconfig`);
* test configuration: ``conftest.py`` outside the unit's owned folders, ``pytest.ini``,
  the ``[tool.pytest...]`` tables of ``pyproject.toml``, the pytest sections of
  ``setup.cfg`` and ``tox.ini``;
* the paths ``[review] frozen`` lists (trunk's list, not the candidate's).

Anything else outside the owned files is out of scope. Either is a ``scope-breach``.
"""

from __future__ import annotations

import configparser
import fnmatch
import posixpath
import tomllib
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from workers.errors import CONFIG_FILE
from workers.gates.trunkconfig import config_changes, refused

PYTEST_INI_SECTIONS = {"setup.cfg": ("tool:pytest",), "tox.ini": ("pytest",)}


@dataclass(frozen=True)
class Breach:
    """One change a unit may not make: ``kind`` is ``frozen`` or ``out-of-scope``."""

    path: str
    kind: str
    detail: str

    def line(self) -> str:
        return f"{self.path}: {self.detail}"


def owns(path: str, files: Sequence[str]) -> bool:
    """True when ``path`` is one of the unit's ``files``: an exact path, a folder (with or
    without a trailing ``/``) or a glob."""
    for entry in files:
        entry = entry[2:] if entry.startswith("./") else entry
        if entry in ("*", path) or fnmatch.fnmatchcase(path, entry):
            return True
        if path.startswith(entry.rstrip("/") + "/"):
            return True
    return False


def criteria_files(criteria: Collection[str]) -> set[str]:
    """The test files acceptance criteria live in (``tests/x.py::test_y`` -> ``tests/x.py``)."""
    return {c.split("::", 1)[0].lstrip("/") for c in criteria if c.split("::", 1)[0]}


def _pytest_part(name: str, data: bytes | None) -> Any:
    """The pytest configuration inside ``pyproject.toml``, ``setup.cfg`` or ``tox.ini``."""
    if data is None:
        return None
    text = data.decode("utf-8", "replace")
    if name == "pyproject.toml":
        try:
            tool = tomllib.loads(text).get("tool", {})
        except tomllib.TOMLDecodeError:
            return ("unparsable", text)
        return {k: v for k, v in tool.items() if k == "pytest" or k.startswith("pytest")}
    parser = configparser.RawConfigParser()
    try:
        parser.read_string(text)
    except configparser.Error:
        return ("unparsable", text)
    return {s: dict(parser[s]) for s in PYTEST_INI_SECTIONS[name] if parser.has_section(s)}


def breaches(
    paths: Sequence[str],
    *,
    files: Sequence[str],
    own_criteria: Collection[str],
    all_criteria: Collection[str],
    frozen_globs: Sequence[str],
    read: Callable[[str, str], bytes | None],
) -> list[Breach]:
    """Every change in ``paths`` (the diff's paths) the unit may not make.

    ``read(side, path)`` gives a file's bytes on ``"base"`` or ``"head"`` (``None``:
    absent); only the configuration files are read.
    """
    found: list[Breach] = []
    tests = criteria_files(all_criteria)
    for path in paths:
        name = posixpath.basename(path)
        if path in tests:
            found.append(Breach(path, "frozen", "an acceptance-criteria test file"))
        elif path == CONFIG_FILE:
            changes = config_changes(
                _text(read("base", path)), _text(read("head", path)), own_criteria
            )
            found += [
                Breach(path, "frozen", f"{change.field}: {change.detail}")
                for change in refused(changes)
            ]
        elif name == "pytest.ini" or (name == "conftest.py" and not owns(path, files)):
            found.append(Breach(path, "frozen", "test configuration"))
        elif path in PYTEST_INI_SECTIONS or path == "pyproject.toml":
            if _pytest_part(path, read("base", path)) != _pytest_part(path, read("head", path)):
                found.append(Breach(path, "frozen", "its pytest configuration changed"))
            elif not owns(path, files):
                found.append(Breach(path, "out-of-scope", "not one of the unit's files"))
        elif any(fnmatch.fnmatchcase(path, glob) for glob in frozen_globs):
            found.append(Breach(path, "frozen", "listed under [review] frozen"))
        elif not owns(path, files):
            found.append(Breach(path, "out-of-scope", "not one of the unit's files"))
    return found


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "replace")


def config_touched(paths: Sequence[str], read: Callable[[str, str], bytes | None]) -> list[str]:
    """The paths among ``paths`` whose change alters how the gates judge: ``loopbus.toml``,
    any ``conftest.py``, ``pytest.ini``, and the pytest parts of ``pyproject.toml``,
    ``setup.cfg`` and ``tox.ini`` (what a push to trunk may not change)."""
    touched = []
    for path in paths:
        name = posixpath.basename(path)
        if (
            path == CONFIG_FILE
            or name in ("conftest.py", "pytest.ini")
            or (
                (path in PYTEST_INI_SECTIONS or path == "pyproject.toml")
                and _pytest_part(path, read("base", path)) != _pytest_part(path, read("head", path))
            )
        ):
            touched.append(path)
    return touched
