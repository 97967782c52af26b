"""Judging a candidate with trunk's gate configuration, never with its own. Pure: no I/O.

A unit's commit carries a ``loopbus.toml`` the unit could have edited; the gates must not
let the thing being judged choose how it is judged. So a candidate is judged with the
configuration of the trunk commit it is measured against, plus only the edits a unit may
make to it:

* removing its own criteria from a check's ``pending`` list (the contract asks for it);
* adding a new ``[[check]]`` (a unit may add a gate, never edit or remove one);
* tightening a capability parameter that declares a direction (``tighten = "lower"`` in
  the profile: a smaller budget is stricter). A loosening is refused naming the parameter.

:func:`config_changes` says what a candidate changed and which of those changes are
refused; :func:`judged_config` builds the configuration the gates run with.
"""

from __future__ import annotations

import tomllib
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import msgspec

from workers.errors import ConfigError
from workers.gates.config import ProjectConfig, parse_config


@dataclass(frozen=True)
class ConfigChange:
    """One difference between trunk's ``loopbus.toml`` and the candidate's."""

    field: str
    detail: str
    allowed: bool


def _doc(text: str | None, side: str) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("file", None, f"{side}'s loopbus.toml is not valid TOML ({exc})") from exc


def _checks(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    tables = doc.get("check", [])
    if not isinstance(tables, list):
        return {}
    return {str(t.get("id")): t for t in tables if isinstance(t, dict)}


def config_changes(
    trunk_text: str | None, candidate_text: str | None, own_criteria: Collection[str]
) -> list[ConfigChange]:
    """Every difference the candidate makes to trunk's ``loopbus.toml``, each marked allowed
    or refused. ``own_criteria`` are the pending ids the unit may clear."""
    if trunk_text == candidate_text:
        return []
    if trunk_text is None or candidate_text is None:
        what = "added" if trunk_text is None else "deleted"
        return [ConfigChange("file", f"loopbus.toml was {what}", False)]
    old, new = _doc(trunk_text, "trunk"), _doc(candidate_text, "the candidate")
    changes: list[ConfigChange] = []
    for key in sorted(set(old) | set(new)):
        if key not in ("check", "project", "capability") and old.get(key) != new.get(key):
            changes.append(ConfigChange(key, f"[{key}] changed", False))
    changes += _project_changes(old.get("project", {}), new.get("project", {}))
    changes += _param_changes(old, new)
    changes += _check_changes(_checks(old), _checks(new), set(own_criteria))
    return changes


def _project_changes(old: Any, new: Any) -> list[ConfigChange]:
    if not isinstance(old, dict) or not isinstance(new, dict):
        return [ConfigChange("project", "[project] is not a table", False)]
    changes = []
    # Every [project] key but capabilities is the project's, never a unit's: its id, its
    # salt, the interpreter checks run with (`python`), and any key added later.
    for key in sorted((set(old) | set(new)) - {"capabilities"}):
        if old.get(key) != new.get(key):
            changes.append(ConfigChange(f"project.{key}", f"changed to {new.get(key)!r}", False))
    before, after = old.get("capabilities", []), new.get("capabilities", [])
    for name in before if isinstance(before, list) else []:
        if not isinstance(after, list) or name not in after:
            changes.append(
                ConfigChange("project.capabilities", f"capability {name!r} removed", False)
            )
    for name in after if isinstance(after, list) else []:
        if not isinstance(before, list) or name not in before:
            changes.append(ConfigChange("project.capabilities", f"capability {name!r} added", True))
    return changes


def _param_changes(old: dict[str, Any], new: dict[str, Any]) -> list[ConfigChange]:
    from workers.gates.profiles import load_profiles

    profiles = load_profiles()
    before, after = old.get("capability", {}), new.get("capability", {})
    if not isinstance(before, dict) or not isinstance(after, dict):
        return [ConfigChange("capability", "[capability] is not a table", False)]
    changes = []
    for name in sorted(set(before) | set(after)):
        profile = profiles.get(name)
        was, now = before.get(name, {}), after.get(name, {})
        if not isinstance(was, dict) or not isinstance(now, dict):
            changes.append(ConfigChange(f"capability.{name}", "not a table", False))
            continue
        for param in sorted(set(was) | set(now)):
            field = f'capability."{name}".{param}'
            known = profile.params.get(param) if profile is not None else None
            default = known.default if known is not None else None
            a, b = was.get(param, default), now.get(param, default)
            if a == b:
                continue
            direction = known.tighten if known is not None else None
            verdict = _tightens(a, b, direction)
            if verdict is None:
                detail = f"changed from {a!r} to {b!r}; only a loosening-proof change is allowed"
                changes.append(ConfigChange(field, detail, False))
            elif verdict:
                changes.append(ConfigChange(field, f"tightened from {a!r} to {b!r}", True))
            else:
                detail = f"loosened from {a!r} to {b!r}; a capability parameter may only tighten"
                changes.append(ConfigChange(field, detail, False))
    return changes


def _tightens(before: Any, after: Any, direction: str | None) -> bool | None:
    """True: ``after`` is stricter; False: looser; None: not comparable (no direction)."""
    if direction not in ("lower", "higher"):
        return None
    try:
        a, b = float(str(before)), float(str(after))
    except ValueError:
        return None
    return b < a if direction == "lower" else b > a


def _check_changes(
    old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]], own: set[str]
) -> list[ConfigChange]:
    changes = []
    for check_id, table in old.items():
        field = f"check {check_id!r}"
        if check_id not in new:
            detail = "removed; a unit may add checks, never remove one"
            changes.append(ConfigChange(field, detail, False))
            continue
        after = new[check_id]
        pending_before = list(table.get("pending", []) or [])
        pending_after = list(after.get("pending", []) or [])
        rest_before = {k: v for k, v in table.items() if k != "pending"}
        rest_after = {k: v for k, v in after.items() if k != "pending"}
        if rest_before != rest_after:
            changed = sorted(
                k
                for k in set(rest_before) | set(rest_after)
                if rest_before.get(k) != rest_after.get(k)
            )
            detail = f"edited ({', '.join(changed)}); a unit may add checks, never edit one"
            changes.append(ConfigChange(field, detail, False))
        for node in pending_after:
            if node not in pending_before:
                changes.append(ConfigChange(f"{field}.pending", f"{node} added", False))
        for node in pending_before:
            if node in pending_after:
                continue
            if node in own:
                changes.append(ConfigChange(f"{field}.pending", f"{node} cleared", True))
            else:
                detail = f"{node} cleared, but it is not one of this unit's criteria"
                changes.append(ConfigChange(f"{field}.pending", detail, False))
    for check_id, table in new.items():
        if check_id in old:
            continue
        if table.get("image") is not None:
            # A containerised check runs outside the agent sandbox, in an image the unit
            # would choose, with the engine's defaults (network included).
            detail = "added with an image; a unit may add host checks, an operator adds images"
            changes.append(ConfigChange(f"check {check_id!r}", detail, False))
        else:
            changes.append(ConfigChange(f"check {check_id!r}", "added", True))
    return changes


def refused(changes: list[ConfigChange]) -> list[ConfigChange]:
    return [change for change in changes if not change.allowed]


def judged_config(
    trunk_text: str, candidate_text: str | None, own_criteria: Collection[str] = ()
) -> ProjectConfig:
    """The configuration a candidate is gated with: trunk's, with only the allowed edits the
    candidate made applied (its own criteria cleared from ``pending``, new checks added).
    Any other edit of the candidate is ignored here (the scope guard refuses it)."""
    trunk = parse_config(trunk_text)
    if candidate_text is None or candidate_text == trunk_text:
        return trunk
    try:
        candidate = parse_config(candidate_text)
    except ConfigError:
        return trunk  # the candidate's own file does not even parse: nothing of it applies
    own = set(own_criteria)
    theirs = {spec.id: spec for spec in candidate.checks}
    checks = []
    for spec in trunk.checks:
        other = theirs.get(spec.id)
        if other is not None:
            cleared = {p for p in spec.pending if p in own and p not in other.pending}
            if cleared:
                kept = tuple(p for p in spec.pending if p not in cleared)
                spec = msgspec.structs.replace(spec, pending=kept)
        checks.append(spec)
    known = {spec.id for spec in trunk.checks}
    checks += [s for s in candidate.checks if s.id not in known and s.origin == "project"]
    return msgspec.structs.replace(trunk, checks=tuple(checks))


RAN = frozenset({"passed", "failed", "error", "xpassed"})
"""Endings that mean a test actually ran (whatever it concluded)."""


def _bare(ending: str) -> str:
    return ending.removeprefix("pending-")


def vanished_tests(trunk: dict[str, str], candidate: dict[str, str]) -> list[tuple[str, str]]:
    """(node id, what became of it) for every test that ran on trunk and does not run on
    the candidate: gone, deselected, skipped, xfailed or collected but never run. A pending
    test counts like any other (trunk ran it; the candidate must too)."""
    gone = []
    for nodeid, ending in trunk.items():
        if _bare(ending) not in RAN:
            continue
        now = candidate.get(nodeid)
        if now is None:
            gone.append((nodeid, "is no longer collected"))
        elif _bare(now) not in RAN:
            gone.append((nodeid, f"was {_bare(now)}"))
    return gone
