"""What a contract (or an approved configuration proposal) does to trunk's files. Pure.

:func:`contract_files` turns a slice's :class:`ContractChanges` into the new text of
``loopbus.toml`` and of each criterion's test file; :func:`contract_refusals` judges the new
``loopbus.toml`` against the adopted one by the ratchet's rules: adding is free (a check, a
capability, a pending criterion); editing or removing anything is refused, naming why.
:func:`proposal_refusals` does the same for an operator's proposal, which may also change
the ``[build]``, ``[review]`` and ``[plan]`` tables (what no unit may touch).

``loopbus.toml`` is edited as text so that every comment and layout of the operator's
file survives; each edit is checked by reading the result back (a result that does not
mean exactly the intended data is refused, never written). A ``pending`` list is written
one entry per line, so two units clearing different entries never touch the same line.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from projections.contract_plan import node_parts
from schemas.contract import ContractChanges, NewCheck
from workers.errors import CONFIG_FILE, ConfigError
from workers.gates.config import parse_config
from workers.gates.trunkconfig import ConfigChange, config_changes

PROPOSABLE_TABLES = ("build", "review", "plan")
"""The tables an operator's proposal may change (no unit may)."""


@dataclass(frozen=True)
class ContractFiles:
    """The files a contract commit writes: path -> new text (``loopbus.toml`` included)."""

    files: dict[str, str]
    criteria: list[str]
    checks: list[str]


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{_toml_string(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    raise ConfigError("contract", value, "not a TOML value")


def check_table(check: NewCheck) -> str:
    """A ``[[check]]`` table for ``check``, as text."""
    lines = [
        "[[check]]",
        f"id = {_toml_string(check.id)}",
        f"command = {_toml_string(check.command)}",
    ]
    lines.append(f"parser = {_toml_string(check.parser)}")
    if check.timeout is not None:
        lines.append(f"timeout = {_toml_value(check.timeout)}")
    if check.reads is not None:
        lines.append(f"reads = {_toml_value(check.reads)}")
    if check.env:
        lines.append(f"env = {_toml_value(check.env)}")
    if check.pending:
        lines.append(_list_lines("pending", check.pending))
    return "\n".join(lines) + "\n"


def _list_lines(key: str, values: list[str]) -> str:
    """``key = [`` with one entry per line."""
    if not values:
        return f"{key} = []"
    return f"{key} = [\n" + "".join(f"    {_toml_string(v)},\n" for v in values) + "]"


_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\"' -]+?)\s*\]\]?\s*(#.*)?$")


def _tables(lines: list[str]) -> list[tuple[str, int, int]]:
    """(header name, first line, end line) of each table (``""``: the top, before any)."""
    found: list[tuple[str, int]] = [("", 0)]
    for number, line in enumerate(lines):
        header = _HEADER.match(line)
        if header is not None and not line.lstrip().startswith("#"):
            found.append((header.group(1), number))
    return [
        (name, start, found[i + 1][1] if i + 1 < len(found) else len(lines))
        for i, (name, start) in enumerate(found)
    ]


def _check_span(lines: list[str], check_id: str) -> tuple[int, int] | None:
    """The lines of the ``[[check]]`` table whose id is ``check_id``."""
    for name, start, end in _tables(lines):
        if name != "check":
            continue
        body = "\n".join(lines[start + 1 : end])
        try:
            if tomllib.loads(body).get("id") == check_id:
                return start, end
        except tomllib.TOMLDecodeError:
            continue
    return None


def _set_list(lines: list[str], span: tuple[int, int], key: str, values: list[str]) -> None:
    """Replace (or add, after the table's header) ``key = [...]`` within ``span``."""
    start, end = span
    for number in range(start + 1, end):
        if re.match(rf"^\s*{re.escape(key)}\s*=", lines[number]):
            last = number
            while last < end:
                chunk = "\n".join(lines[number : last + 1])
                try:
                    tomllib.loads(chunk)
                    break
                except tomllib.TOMLDecodeError:
                    last += 1
            else:
                raise ConfigError(key, None, f"cannot find the end of {key} in {CONFIG_FILE}")
            lines[number : last + 1] = _list_lines(key, values).split("\n")
            return
    lines[start + 1 : start + 1] = _list_lines(key, values).split("\n")


def _add_pending(text: str, check_id: str, tests: list[str]) -> str:
    lines = text.split("\n")
    span = _check_span(lines, check_id)
    if span is None:
        raise ConfigError("contract.criteria.check", check_id, "no such check in loopbus.toml")
    before = tomllib.loads(text)
    table = next(t for t in before.get("check", []) if t.get("id") == check_id)
    current = list(table.get("pending", []))
    _set_list(lines, span, "pending", current + [t for t in tests if t not in current])
    return "\n".join(lines)


def _add_capabilities(text: str, names: tuple[str, ...]) -> str:
    doc = tomllib.loads(text)
    current = list(doc.get("project", {}).get("capabilities", []))
    wanted = current + [n for n in names if n not in current]
    if wanted == current:
        return text
    lines = text.split("\n")
    span = next(((s, e) for name, s, e in _tables(lines) if name == "project"), None)
    if span is None:
        raise ConfigError("project", None, "loopbus.toml has no [project] table")
    _set_list(lines, span, "capabilities", wanted)
    return "\n".join(lines)


def pytest_check(doc: Mapping[str, Any]) -> str | None:
    """The first ``[[check]]`` run with the pytest parser (where criteria go by default)."""
    for table in doc.get("check", []) or []:
        if isinstance(table, dict) and table.get("parser") == "pytest":
            return str(table.get("id"))
    return None


def new_config(text: str, changes: ContractChanges) -> str:
    """``loopbus.toml`` with the contract applied: capabilities, then each criterion in the
    pending list of its check, then the new checks appended. Raises :class:`ConfigError`
    when it cannot be applied (a check that is not there, a result that does not read back
    as intended)."""
    doc = tomllib.loads(text)
    out = _add_capabilities(text, changes.capabilities)
    by_check: dict[str, list[str]] = {}
    for index, criterion in enumerate(changes.criteria):
        check = criterion.check or pytest_check(doc)
        if check is None:
            raise ConfigError(
                f"contract.criteria[{index}].check",
                criterion.check,
                "loopbus.toml has no pytest check to hold the criterion; name one",
            )
        by_check.setdefault(check, []).append(criterion.test)
    for check_id, tests in by_check.items():
        out = _add_pending(out, check_id, tests)
    for new in changes.checks:
        out = out.rstrip("\n") + "\n\n" + check_table(new)
    _reads_back(doc, out, changes, by_check)
    return out


def _reads_back(
    before: dict[str, Any], text: str, changes: ContractChanges, by_check: dict[str, list[str]]
) -> None:
    """The edited text must mean the old data plus exactly the contract's additions."""
    expected = json.loads(json.dumps(before))
    project = expected.setdefault("project", {})
    caps = list(project.get("capabilities", []))
    caps += [c for c in changes.capabilities if c not in caps]
    if caps or "capabilities" in project:
        project["capabilities"] = caps
    for table in expected.get("check", []):
        added = by_check.get(table.get("id"), [])
        if added:
            current = list(table.get("pending", []))
            table["pending"] = current + [t for t in added if t not in current]
    for check in changes.checks:
        expected.setdefault("check", []).append(tomllib.loads(check_table(check))["check"][0])
    try:
        got = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        detail = f"the contract's {CONFIG_FILE} does not parse ({exc})"
        raise ConfigError("file", None, detail) from exc
    if got != expected:
        raise ConfigError(
            "file", None, f"{CONFIG_FILE} could not be edited in place without changing its meaning"
        )


def contract_files(
    config_text: str, changes: ContractChanges, read: Callable[[str], str | None]
) -> ContractFiles:
    """Every file the contract commit writes. ``read(path)``: the file on trunk (``None``:
    absent); a criterion joins its existing test file after one blank line pair."""
    files: dict[str, str] = {CONFIG_FILE: new_config(config_text, changes)}
    for criterion in changes.criteria:
        parts = node_parts(criterion.test)
        if parts is None:
            raise ConfigError("contract.criteria.test", criterion.test, "not a node id")
        path = parts[0]
        current = files.get(path, read(path))
        body = criterion.text.strip("\n") + "\n"
        files[path] = body if not current else current.rstrip("\n") + "\n\n\n" + body
    return ContractFiles(
        files=files,
        criteria=[c.test for c in changes.criteria],
        checks=[c.id for c in changes.checks],
    )


def _adds_pending(change: ConfigChange) -> bool:
    return change.field.endswith(".pending") and change.detail.endswith(" added")


def contract_refusals(adopted: str, new: str) -> list[str]:
    """Why the contract's ``loopbus.toml`` may not replace the adopted one (empty: it may).
    Only additions are free; anything else is an edit, and loosening needs the ratchet's
    measurement (``loopbus gate move``), never a contract."""
    try:
        parse_config(new)
        changes = config_changes(adopted, new, ())
    except ConfigError as exc:
        return [" ".join(str(exc).split())]
    return [
        f"{change.field}: {change.detail}"
        for change in changes
        if not change.allowed and not _adds_pending(change)
    ]


def proposal_refusals(adopted: str, new: str) -> list[str]:
    """Why an operator's proposed ``loopbus.toml`` may not replace the adopted one: it may
    change ``[build]``, ``[review]`` and ``[plan]`` and add what a contract may add;
    loosening or editing a check still goes through the ratchet."""
    from workers.agents.config import parse as parse_agents_config

    try:
        parse_config(new)
        parse_agents_config(new)  # [review], [build]… must be what their daemons can read
        changes = config_changes(adopted, new, ())
    except ConfigError as exc:
        return [" ".join(str(exc).split())]
    return [
        f"{change.field}: {change.detail}"
        for change in changes
        if not change.allowed
        and not _adds_pending(change)
        and change.field not in PROPOSABLE_TABLES
        and not (change.field.startswith("check ") and "added with an image" in change.detail)
    ]
