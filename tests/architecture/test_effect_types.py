"""A daemon's effects are tied to it by mypy, and every effect field is typed data.

``Daemon[E]`` types ``decide`` and ``perform`` with ``IntentOf[E]``: a decision that asks
for another daemon's effect, or a ``perform`` whose ``match`` misses one of ``E``, is a
mypy error (before, ``perform`` took ``Any`` and both failed only at run time). The first
test runs mypy, strict as the project runs it, on small modules written here, so that the
typing cannot rot silently (a ``Daemon`` that lost its type parameter would pass them
all). The second reads every effect Struct's fields: ``Any`` or a bare ``dict`` there is a
field the decision and the shell agree on by convention only (the builder's brief was a
``dict[str, Any]`` whose keys both sides spelled out).
"""

from __future__ import annotations

import collections.abc
import importlib
import pkgutil
import re
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

import msgspec

import workers
from projections.intents import Effect

ROOT = Path(__file__).resolve().parents[2]

HEADER = """\
from collections.abc import Sequence
from typing import Never, TypeAlias, assert_never

from projections.intents import Effect, Intent, IntentOf
from workers.dispatcher.effects import Boot
from workers.kernel import Daemon, World


class Ping(Effect, frozen=True, tag="probe.ping.v1"):
    @property
    def key(self) -> str:
        return "ping"


class Pong(Effect, frozen=True, tag="probe.pong.v1"):
    @property
    def key(self) -> str:
        return "pong"


ProbeEffect = Ping | Pong
ProbeIntent: TypeAlias = IntentOf[ProbeEffect]
"""

PERFORM_ALL = """
    async def perform(self, effect: ProbeEffect) -> Sequence[ProbeIntent]:
        match effect:
            case Ping():
                return []
            case Pong():
                return []
            case _:
                assert_never(effect)
"""

PROBES = {
    "right": (
        "class Probe(Daemon[ProbeEffect]):\n"
        "    def decide(self, world: World) -> Sequence[ProbeIntent]:\n"
        "        return [Ping(project=world.project), Pong(project=world.project)]\n" + PERFORM_ALL
    ),
    "foreign": (
        "class Probe(Daemon[ProbeEffect]):\n"
        "    def decide(self, world: World) -> Sequence[ProbeIntent]:\n"
        "        return [Boot(project=world.project, accepted='a')]  # WRONG\n" + PERFORM_ALL
    ),
    "foreign_widened": (
        # Widening the return type back to any daemon's intents is what the base refuses.
        "class Probe(Daemon[ProbeEffect]):\n"
        "    def decide(self, world: World) -> Sequence[Intent]:  # WRONG\n"
        "        return [Boot(project=world.project, accepted='a')]\n" + PERFORM_ALL
    ),
    "missing_case": (
        "class Probe(Daemon[ProbeEffect]):\n"
        "    async def perform(self, effect: ProbeEffect) -> Sequence[ProbeIntent]:\n"
        "        match effect:\n"
        "            case Ping():\n"
        "                return []\n"
        "            case _:\n"
        "                assert_never(effect)  # WRONG\n"
    ),
    "perform_one_only": (
        "class Probe(Daemon[ProbeEffect]):\n"
        "    async def perform(self, effect: Ping) -> Sequence[ProbeIntent]:  # WRONG\n"
        "        return []\n"
    ),
    "effect_without_effects": (
        "class Probe(Daemon[Never]):\n"
        "    def decide(self, world: World) -> Sequence[Intent]:  # WRONG\n"
        "        return [Ping(project=world.project)]\n"
    ),
}
"""Each probe module, with ``# WRONG`` on every line mypy must reject (none: it passes)."""


def run_mypy(folder: Path) -> str:
    """mypy as the project runs it (pyproject's strict settings) on the probes alone; the
    packages they import are read, not reported on."""
    paths = [str(folder / f"{name}.py") for name in PROBES]
    config = ["--config-file", str(ROOT / "pyproject.toml"), "--follow-imports=silent"]
    done = subprocess.run(
        [sys.executable, "-m", "mypy", *config, "--no-error-summary", *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr or done.stdout  # 2: mypy itself failed
    return done.stdout


def test_mypy_ties_each_daemon_to_its_effects(tmp_path: Path) -> None:
    for name, body in PROBES.items():
        (tmp_path / f"{name}.py").write_text(HEADER + "\n\n" + textwrap.dedent(body))
    report = run_mypy(tmp_path)
    flagged: dict[str, set[int]] = {name: set() for name in PROBES}
    for line in report.splitlines():
        found = re.match(r"(?:.*/)?(\w+)\.py:(\d+): error:", line)
        if found is not None:
            flagged[found[1]].add(int(found[2]))
    wanted = {
        name: {
            number
            for number, text in enumerate((tmp_path / f"{name}.py").read_text().splitlines(), 1)
            if text.endswith("# WRONG")
        }
        for name in PROBES
    }
    assert wanted["right"] == set() and all(wanted[n] for n in PROBES if n != "right")
    assert flagged == wanted, report


# -- every field of an effect is typed data -----------------------------------------------------


def effect_classes() -> list[type[Effect]]:
    """Effect and every subclass of it, once each daemon's ``effects`` module is imported."""
    for found in pkgutil.walk_packages(workers.__path__, "workers."):
        if found.name.endswith(".effects"):
            importlib.import_module(found.name)
    out: list[type[Effect]] = []
    todo: list[type[Effect]] = [Effect]
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo.extend(cls.__subclasses__())
    return out


UNTYPED = (dict, list, tuple, set, frozenset, object, collections.abc.Mapping)
"""Containers named without what they hold, and ``object``: a field that says nothing."""

AS_ON_THE_LOG = {
    "projections.investigations.TriggerView.evidence": "the failures' own evidence, as "
    "FindingRaised.evidence stores it (each producer writes what it found)",
    "schemas.planning.PlanBrief.charter": "the charter event as the planner command reads "
    "it on stdin (msgspec.to_builtins of the Charter): the agent's brief format",
    "schemas.planning.ReconBrief.charter": "the same charter, for the recon command",
}
"""Loose fields inside the Structs an effect carries from schemas/ or projections/, each
with why: data the log itself stores free-form, passed on as it is. The test fails when
one is added, and when one listed is typed at last."""


def loose(annotation: Any) -> bool:
    """Whether ``annotation`` holds ``Any``, ``object``, a container that does not say what
    it holds (``dict``, ``list``, ``Mapping`` …), or a mapping to ``Any``."""
    if annotation is Any or annotation in UNTYPED:
        return True
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Annotated:
        return loose(args[0])
    if origin in (dict, collections.abc.Mapping) and (not args or args[-1] is Any):
        return True
    if origin is not None:  # a union, a list, a tuple …: what it holds
        return any(loose(arg) for arg in args if arg is not Ellipsis)
    return False


def struct_fields(cls: type[msgspec.Struct]) -> list[tuple[str, Any]]:
    return [(field.name, field.type) for field in msgspec.structs.fields(cls)]


def loose_fields(cls: type[msgspec.Struct], seen: set[type]) -> list[str]:
    """The fields of ``cls`` that are loose, and of every Struct it carries, wherever that
    is declared (a brief, a job, a view, an event): what the shell receives."""
    out = []
    for name, annotation in struct_fields(cls):
        if loose(annotation):
            out.append(f"{cls.__module__}.{cls.__qualname__}.{name}")
        for inner in carried(annotation):
            if inner not in seen:
                seen.add(inner)
                out += loose_fields(inner, seen)
    return out


def carried(annotation: Any) -> list[type[msgspec.Struct]]:
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return [annotation]
    return [inner for arg in get_args(annotation) for inner in carried(arg)]


def test_no_effect_field_is_any_or_a_bare_dict() -> None:
    classes = effect_classes()
    assert len(classes) > 30  # every daemon's effects were found (a moved folder would pass)
    seen: set[type] = set()
    found = {field for cls in classes for field in loose_fields(cls, seen)}
    assert sorted(found - set(AS_ON_THE_LOG)) == [], (
        "declare a Struct for it beside the effect (see RoundBrief)"
    )
    assert sorted(set(AS_ON_THE_LOG) - found) == [], "typed at last: remove from AS_ON_THE_LOG"


def test_the_field_check_sees_loose_fields() -> None:
    """The check above is not vacuous: it flags each shape the effects used to have."""

    class Loose(msgspec.Struct):
        brief: dict[str, Any]
        rows: list[dict[str, Any]]
        lease: Any = None
        bare: dict | None = None  # type: ignore[type-arg]
        fine: dict[str, int] = {}
        typed: list[tuple[str, ...]] = []
        anything: object = None
        items: list = []  # type: ignore[type-arg]
        pairs: Mapping = {}  # type: ignore[type-arg]

    assert [name for name, annotation in struct_fields(Loose) if loose(annotation)] == [
        "brief",
        "rows",
        "lease",
        "bare",
        "anything",
        "items",
        "pairs",
    ]


def test_every_effect_names_its_idempotency_key() -> None:
    """An effect's ``key`` is what makes asking twice do nothing; the base class's raises
    at run time, which mypy cannot see, so every effect must define its own."""
    effects = [cls for cls in effect_classes() if cls is not Effect]
    assert len(effects) > 30
    assert keyless(effects) == [], "give each a key derived from what it answers"
    # Not vacuous: a class that inherits its key is named (not a subclass of Effect, which
    # would stay among Effect's subclasses for the tests that walk them).
    forgetful = type("Forgetful", (msgspec.Struct,), {})
    assert keyless([*effects, forgetful]) == ["Forgetful"]


def keyless(classes: list[type]) -> list[str]:
    """The classes that do not define ``key`` themselves."""
    return [cls.__qualname__ for cls in classes if "key" not in vars(cls)]
