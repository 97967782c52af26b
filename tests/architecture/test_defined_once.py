"""Every rule and constant is written once, and the CLI waits for answers in one place.

A rule written twice drifts: one copy is changed and the other keeps saying the old
thing (a finding class, the config file's name, the server's default URL). These tests
read the source as it is, so a second definition fails here before it can drift.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from loopbus.commands import report
from schemas import PRODUCERS
from schemas.authority import PRODUCER_ROLES, SYSTEM_PRODUCERS
from schemas.project_config import PARSER_NAMES
from workers.gates import parsers

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("schemas", "projections", "bus", "workers", "loopbus")

COINCIDENCES: dict[object, tuple[str, set[str]]] = {
    # value -> (why the constants that bind it mean different things by it, those constants)
    "charter": (
        "a CLI option's name and a subject family",
        {"schemas/charter.py CHARTER_SUBJECT", "loopbus/commands/approve_charter.py OPTION"},
    ),
    "plan": (
        "a CLI option's name and the planner's step",
        {"workers/planner/effects.py PLAN", "loopbus/commands/approve_plan.py OPTION"},
    ),
    "claim": (
        "the claim subject family and the evidence key naming a claim",
        {"schemas/subjects.py CLAIM", "schemas/authority.py ANSWERS_CLAIM"},
    ),
    "/tmp": (
        "the container's scratch path and a placeholder in agents' environments",
        {
            "workers/agents/container.py CONTAINER_TMP",
            "workers/agents/environment.py PLACEHOLDER_TMP",
        },
    ),
    "wait-budget": (
        "a finding class and the watchdog's id salt",
        {"projections/units.py WAIT_BUDGET_CLASS", "workers/watchdog/daemon.py WAIT_SALT"},
    ),
    "forgery": (
        # The salt is part of the finding's id: bound to the class, renaming the class
        # would give every finding already on the log a second id.
        "a finding class and the integrity daemon's id salt",
        {"schemas/authority.py FORGERY_CLASS", "workers/integrity/daemon.py SALT"},
    ),
    "trunk": (
        "the trunk subject family and the trunk branch as two daemons name it",
        {
            "schemas/merges.py TRUNK_SUBJECT",
            "workers/dispatcher/effects.py TRUNK",
            "workers/merger/seen.py TRUNK",
        },
    ),
    "standards": (
        "a producer's name (a checked Literal) as two modules use it",
        {"projections/planner.py MACHINERY", "workers/dispatcher/answers.py REFUSER"},
    ),
    "trunk_gate": (
        "a producer's name (a checked Literal) as two modules use it",
        {
            "projections/contract_landing.py MERGER_PRODUCER",
            "projections/merge_trunk.py TRUNK_PRODUCER",
        },
    ),
    ("export", "import"): (
        "two different lists of the entity merge",
        {
            "workers/entity_merge/matching.py _REPEATABLE",
            "workers/entity_merge/regions.py _NAME_LISTS",
        },
    ),
    ("operator",): (
        "who may do four different things (choose, adopt, approve, land config)",
        {
            "projections/builds.py CHOOSERS",
            "workers/merger/adoption.py ADOPTER_ROLES",
            "workers/merger/approvals.py REPORT_APPROVER_ROLES",
            "workers/merger/landing.py CONFIG_ROLES",
        },
    ),
}
"""Equal values that are not one rule, each with why and the constants that bind it: a
new constant with one of these values is looked at like any other."""

NOT_YET_FOLDED: dict[object, set[str]] = {
    # Known duplicates outside this change, listed so they cannot spread; fold them.
}
"""An entry whose duplicate is gone must be removed (the test says so)."""


def sources() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def literal_constants(path: Path) -> Iterator[tuple[str, object]]:
    """(name, value) of each module-level UPPER_CASE name bound to a literal string
    or a literal collection of strings (a ``frozenset({...})`` too), collections sorted."""
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not isinstance(target, ast.Name) or not target.id.lstrip("_").isupper():
            continue
        if isinstance(value, ast.Call) and getattr(value.func, "id", "") in ("frozenset", "set"):
            value = value.args[0] if value.args else value
        try:
            found = ast.literal_eval(value)
        except ValueError:
            continue
        if isinstance(found, str) and found:
            yield target.id, found
        elif (
            isinstance(found, (tuple, list, set, frozenset))
            and found
            and all(isinstance(item, str) for item in found)
        ):
            yield target.id, tuple(sorted(found))


def bound_values() -> dict[object, list[str]]:
    """Each literal value -> where it is bound (``path NAME``)."""
    where: dict[object, list[str]] = defaultdict(list)
    for path in sources():
        for name, value in literal_constants(path):
            where[value].append(f"{path.relative_to(ROOT)} {name}")
    return where


def test_no_rule_is_bound_twice() -> None:
    """No literal value is bound to a constant in two places (REFUSAL_CLASS, ANSWERS_CLAIM,
    the gate parsers' names, the config file's name, the default NATS URL and the
    environment variables were each bound two or three times), unless it is a listed
    coincidence or a listed duplicate still to fold."""
    twice = {
        value: set(places)
        for value, places in bound_values().items()
        if len({place.split()[0] for place in places}) > 1
    }
    allowed = {value: names for value, (_, names) in COINCIDENCES.items()} | NOT_YET_FOLDED
    unexplained = {value: places for value, places in twice.items() if allowed.get(value) != places}
    assert unexplained == {}, "define it once (schemas/, or bus/ for the transport) and import it"
    stale = sorted(str(value) for value in NOT_YET_FOLDED if value not in twice)
    assert stale == [], "folded at last: remove it from NOT_YET_FOLDED"


def test_producer_kinds_are_the_schemas() -> None:
    """`report finding` refuses the system's producers and names a role for the others
    from the one list of producers and the one table of what each role may claim."""
    assert report.SYSTEM_PRODUCERS is SYSTEM_PRODUCERS
    assert report.PRODUCER_ROLES is PRODUCER_ROLES
    assert SYSTEM_PRODUCERS | PRODUCER_ROLES.keys() == set(PRODUCERS)
    # Which producers are the system's is pinned by docs/events.md, which names them
    # (tests/docs/test_extending_files.py), so a new producer touches no test.
    # Role names are producer names too; a list holding a system producer is a producer list.
    producer_lists = [
        place
        for value, places in bound_values().items()
        if isinstance(value, tuple)
        and set(value) <= set(PRODUCERS)
        and set(value) & SYSTEM_PRODUCERS
        for place in places
    ]
    assert producer_lists == [], "a list of producers outside schemas/findings.py"


def test_gate_parsers_are_named_once() -> None:
    """The names a check's ``parser`` may take are the parsers the gate library has."""
    assert set(parsers.PARSERS) == set(PARSER_NAMES)


# -- waiting for an answer -------------------------------------------------------------

FOLLOWERS: dict[str, str] = {
    "loopbus/answers.py": "the one loop that waits for the system's answer to a claim",
    "loopbus/commands/tail.py": "prints every event; answers nothing",
    "loopbus/commands/demo.py": "prints the demo's own run until it ends",
    "loopbus/web/live.py": "streams the page's timeline",
}


def follows_the_log(path: Path) -> list[int]:
    """Lines of ``path`` that call ``read(..., follow=...)`` with anything but ``False``."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "read":
            for keyword in node.keywords:
                if keyword.arg == "follow" and not (
                    isinstance(keyword.value, ast.Constant) and keyword.value.value is False
                ):
                    lines.append(node.lineno)
    return lines


def test_the_cli_waits_for_answers_in_one_place() -> None:
    """Only loopbus/answers.py follows the log to wait for an answer (five commands each
    had their own loop, and only one of them checked the answer was the system's)."""
    following = {
        str(path.relative_to(ROOT)): lines
        for path in sorted((ROOT / "loopbus").rglob("*.py"))
        if (lines := follows_the_log(path))
    }
    unexpected = {path: lines for path, lines in following.items() if path not in FOLLOWERS}
    assert unexpected == {}, "wait through loopbus.answers.await_answer"
    assert set(following) == set(FOLLOWERS), "a follower is gone: drop it from FOLLOWERS"


LITERAL_RULES = {"refused-transition": {"schemas/authority.py", "schemas/findings.py"}}
"""Values whose binding is one rule (``REFUSAL_CLASS``), with the modules that define them
(the binding itself, and the finding classes' Literal): anywhere else the value is written
through the name, so a change of the rule cannot miss a copy."""


def literal_copies(source: str, filename: str, value: str) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(ast.parse(source, filename))
        if isinstance(node, ast.Constant) and node.value == value
    ]


def test_a_rule_is_written_through_its_name() -> None:
    """The refusal class was bound once but written out in eleven modules: the test saw
    bindings, not copies."""
    copies = {
        f"{path.relative_to(ROOT)}:{line}"
        for value, homes in LITERAL_RULES.items()
        for folder in PACKAGES
        for path in sorted((ROOT / folder).rglob("*.py"))
        if str(path.relative_to(ROOT)) not in homes
        for line in literal_copies(path.read_text(), str(path), value)
    }
    assert copies == set(), "write these through schemas.authority.REFUSAL_CLASS"
    planted = 'finding = FindingRaised(cls="refused-transition")\n'
    assert literal_copies(planted, "rogue.py", "refused-transition") == [1]


# -- a daemon's name -----------------------------------------------------------------------


def literal_run_names(source: str, filename: str) -> list[str]:
    """The literal names ``source`` passes to ``main_for`` (the name a daemon runs under;
    ``daemon_parser``'s first argument is the package ``python -m`` runs, another thing)."""
    return [
        node.args[0].value
        for node in ast.walk(ast.parse(source, filename))
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "main_for"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ]


def test_a_daemon_runs_under_its_own_name() -> None:
    """The name a daemon runs under is its Daemon's ``name`` (the merger's and the
    dispatcher's bound as ``NAME`` beside the class; the front reads the dispatcher's
    through its face), not a second literal in its cli.py: the merger's was written three
    times, the dispatcher's three more in cli.py and loopbus/commands/plan.py."""
    clis = sorted((ROOT / "workers").glob("*/cli.py"))
    assert len(clis) >= 15  # the daemons' CLIs were found (a moved folder would pass)
    literal = {cli.parent.name for cli in clis if literal_run_names(cli.read_text(), str(cli))}
    assert literal == set(), "pass the Daemon's name: main_for(Daemon.name, …)"
    rogue = 'parser = daemon_parser("merger", "help")\nmain_for("merger", parser, body)\n'
    assert literal_run_names(rogue, "rogue.py") == ["merger"]
