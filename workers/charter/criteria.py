"""Which of a charter's criteria hold on one trunk gate run. Pure.

The evidence is the system's only: the merger's trunk run (``merge.candidate_tested``,
stage ``trunk``, judged with the adopted configuration) and the signed gate results it
stands on, as the ``gates`` fold verified them. An agent can put neither on the log.

* a ``check`` criterion holds when that check passed in the run;
* a ``test`` criterion holds when the test (every parametrisation of it) *ran and
  passed* in a passing check of the run and is not pending there. A pending test's
  failing is green for trunk but meets nothing; a test that is missing, deselected (a
  ``conftest.py`` can deselect, never pass, a test: it is recorded as ``deselected``),
  skipped or not run does not meet its criterion either.

And either holds only as the operator approved it (:func:`pins` and the daemon's
``run.criteria_pinned``): a test's function must hash as pinned where it ran (the daemon
reads it from git at the judged commit: ``bodies``), and a check's definition in the
adopted ``loopbus.toml`` must be the pinned one. A test a unit or a contract later writes
at an unpinned node id, or a check added under a criterion's id, meets nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import msgspec

from projections.gates import GatesState
from projections.merge_trunk import Tested
from schemas.charter import Charter, CharterCriterion
from schemas.criterion_source import DIGEST_PREFIX, source_digest
from schemas.merges import CheckVerdict
from workers.errors import ConfigError
from workers.gates.config import parse_config

PASSED = "passed"
PENDING = "pending-"


@dataclass(frozen=True)
class Judgement:
    held: tuple[str, ...]
    failing: tuple[str, ...]
    detail: dict[str, str] = field(default_factory=dict)


def check_digest(config_text: str | None, check: str) -> str | None:
    """The digest of what check ``check`` measures in a ``loopbus.toml`` (its command,
    parser, the files it reads, image, environment and origin; not its timeout or pending
    list, which the ratchet moves): ``None`` when the file has no such check."""
    if config_text is None:
        return None
    try:
        config = parse_config(config_text)
    except ConfigError:
        return None
    spec = next((c for c in config.checks if c.id == check), None)
    if spec is None:
        return None
    doc = {
        "command": spec.command,
        "parser": spec.parser,
        "reads": sorted(spec.reads),
        "image": spec.image,
        "env": spec.env,
        "origin": spec.origin,
    }
    return DIGEST_PREFIX + hashlib.sha256(msgspec.json.encode(doc, order="sorted")).hexdigest()


CHECK_PIN = "check:"
"""Pins under ``check:<id>`` are the checks whose results may speak for a test criterion:
those configured when the charter was approved, as they were then (a criterion id is a
token and holds no ``:``)."""


def check_pins(config_text: str | None) -> dict[str, str]:
    """``check:<id>`` -> definition digest for every check of a ``loopbus.toml``."""
    if config_text is None:
        return {}
    try:
        config = parse_config(config_text)
    except ConfigError:
        return {}
    pins: dict[str, str] = {}
    for spec in config.checks:
        found = check_digest(config_text, spec.id)
        if found is not None:
            pins[CHECK_PIN + spec.id] = found
    return pins


def approval_pins(charter: Charter, config_text: str | None) -> dict[str, str]:
    """What the approval pins without reading git: each test file the charter gives the
    source of, each check criterion's definition in the adopted configuration, and the
    checks whose results may speak for a test criterion."""
    pins: dict[str, str] = check_pins(config_text)
    for criterion in charter.criteria:
        source = charter.source_of(criterion.test) if criterion.test else ""
        if source:
            found = source_digest(source, criterion.test)
        elif criterion.check:
            found = check_digest(config_text, criterion.check)
        else:
            found = None
        if found is not None:
            pins[criterion.id] = found
    return pins


def judge(
    charter: Charter,
    run: Tested,
    gates: GatesState,
    *,
    pins: Mapping[str, str],
    unpinned: Mapping[str, str],
    bodies: Mapping[str, str] | None,
    config_text: str | None,
) -> Judgement:
    """``bodies``: criterion id -> its test's function digest at the judged commit, as read
    from git (``None``: no repository to read, so no test criterion can be confirmed);
    ``config_text``: the ``loopbus.toml`` the run was judged with."""
    held: list[str] = []
    failing: list[str] = []
    detail: dict[str, str] = {}
    for criterion in charter.criteria:
        why = (
            _unpinned(criterion, pins, unpinned)
            or _why_not(criterion, run, gates, pins, config_text)
            or _unlike_pin(criterion, pins, bodies, config_text)
        )
        if why is None:
            held.append(criterion.id)
        else:
            failing.append(criterion.id)
            detail[criterion.id] = why
    return Judgement(tuple(held), tuple(failing), detail)


def _unpinned(
    criterion: CharterCriterion, pins: Mapping[str, str], unpinned: Mapping[str, str]
) -> str | None:
    if criterion.id in pins:
        return None
    why = unpinned.get(criterion.id, "its pin is not recorded yet")
    return f"nothing pins what it must prove: {why}"


def _unlike_pin(
    criterion: CharterCriterion,
    pins: Mapping[str, str],
    bodies: Mapping[str, str] | None,
    config_text: str | None,
) -> str | None:
    """Why what passed is not what the operator approved (``None``: it is)."""
    pin = pins[criterion.id]
    if criterion.check:
        found = check_digest(config_text, criterion.check)
        if found != pin:
            return (
                f"check {criterion.check} is not the one approved: its definition in the "
                f"adopted loopbus.toml changed since (pinned {pin[7:19]})"
            )
        return None
    if bodies is None:
        return "no repository is read to confirm its test's function (charter daemon --repo)"
    body = bodies.get(criterion.id)
    if body != pin:
        what = "is not on this trunk" if body is None else f"hashes {body[7:19]}"
        return (
            f"test {criterion.test} is not the one approved: its function {what}, the "
            f"approval pinned {pin[7:19]}"
        )
    return None


def speaking_checks(
    run: Tested, pins: Mapping[str, str], config_text: str | None
) -> list[CheckVerdict]:
    """The passing checks of ``run`` whose results may speak for a test criterion: those
    configured when the charter was approved, defined as they were then. A check added or
    redefined since (a contract's check whose command writes a pytest report of its own)
    speaks for none."""
    return [
        verdict
        for verdict in run.checks
        if verdict.outcome == "pass"
        and pins.get(CHECK_PIN + verdict.check) is not None
        and pins.get(CHECK_PIN + verdict.check) == check_digest(config_text, verdict.check)
    ]


def _why_not(
    criterion: CharterCriterion,
    run: Tested,
    gates: GatesState,
    pins: Mapping[str, str],
    config_text: str | None,
) -> str | None:
    if criterion.check:
        verdict = next((v for v in run.checks if v.check == criterion.check), None)
        if verdict is None:
            return f"check {criterion.check} did not run on this trunk (not in the adopted config)"
        return None if verdict.outcome == "pass" else f"check {criterion.check}: {verdict.outcome}"
    endings: dict[str, list[str]] = {}
    for verdict in speaking_checks(run, pins, config_text):
        key = gates.by_result.get(verdict.result)
        entry = gates.cache.get(key) if key is not None else None
        if entry is None:
            continue  # not a verified gate result: it proves nothing
        for nodeid, ending in entry.tests.items():
            if nodeid == criterion.test or nodeid.startswith(criterion.test + "["):
                endings.setdefault(nodeid, []).append(ending)
    if not endings:
        return (
            f"test {criterion.test} did not run in a passing check on this trunk (of the "
            "checks configured when the charter was approved)"
        )
    # Every check that ran the test must have passed it: one check's word cannot hide
    # another's failure.
    pending = sorted(n for n, es in endings.items() if any(e.startswith(PENDING) for e in es))
    if pending:
        return f"test {pending[0]} is pending in the adopted loopbus.toml: it meets nothing yet"
    other = sorted((n, e) for n, es in endings.items() for e in es if e != PASSED)
    if other:
        return f"test {other[0][0]} {other[0][1]}"
    return None
