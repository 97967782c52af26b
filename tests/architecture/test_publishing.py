"""The kernel is the one way a system fact reaches the log.

A daemon's decision and its shell's effects return intents; the kernel carries them out
(conditional publishes, barriers, retries, quarantine records). A module of the system
side that called the bus's publishing methods itself would bypass all of that; one that
runs outside a daemon's loop (``loopbus up``'s first adoption, the integrity watcher, a
gate run from a command) publishes through ``workers/kernel/oneshot.py``. The front
(loopbus/: the CLI, the page) publishes claims as any producer does, all of them through
``loopbus/claiming.py``, which refuses a system fact.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from bus import Bus, read
from loopbus.errors import LoopbusError
from schemas import Actor, FindingRaised, parse_target, project_subjects
from schemas.envelope import Role
from schemas.findings import Producer

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("schemas", "projections", "workers")
"""The system side (bus/ itself, where publishing is defined, is the transport)."""
KERNEL = ROOT / "workers" / "kernel"
ONESHOT = frozenset({"carry_out", "transition_unit"})
"""The kernel's one-shot publishing (``workers/kernel/oneshot``), for callers outside any
daemon's loop."""
PUBLISHING = (
    frozenset({"publish", "publish_atomic", "publish_transition", "publish_many"}) | ONESHOT
)
"""The bus's methods that append to the log, and the one-shot: a call to either from
outside the kernel is a module publishing by itself rather than handing intents to a
daemon's kernel."""

NOT_YET: dict[str, str] = {
    "workers/integrity/violations.py": "the server-refusal watcher runs outside any "
    "daemon's loop and moves its offset only once its findings are stored",
    "workers/merger/adoption.py": "loopbus up's first adoption of trunk runs before any "
    "daemon's loop",
}
"""Modules that publish around a daemon's kernel, each with why. The test fails when a
module not listed publishes, or a listed one no longer does."""


def publishing_calls(source: str, filename: str) -> Iterator[int]:
    """Lines of ``source`` that call one of the bus's appending methods: awaited (the bus's
    methods are coroutines; a helper that only builds a ``Publish`` intent is not), or on a
    receiver named ``bus`` (a call handed to a task unawaited)."""
    tree = ast.parse(source, filename)
    awaited = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Await)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name not in PUBLISHING:
            continue
        receiver = func.value if isinstance(func, ast.Attribute) else None
        on_a_bus = (isinstance(receiver, ast.Name) and receiver.id == "bus") or (
            isinstance(receiver, ast.Attribute) and receiver.attr == "bus"
        )
        if id(node) in awaited or on_a_bus:
            yield node.lineno


def publishers() -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    scanned = 0
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            scanned += 1
            if path.is_relative_to(KERNEL):
                continue
            lines = list(publishing_calls(path.read_text(), str(path)))
            if lines:
                found[str(path.relative_to(ROOT))] = lines
    assert scanned > 300, f"only {scanned} modules scanned: was a folder moved?"
    return found


def test_only_the_kernel_publishes() -> None:
    """No module of the system side outside workers/kernel/ calls the bus's publishing
    methods: daemons and libraries return intents (events) and the kernel publishes them."""
    around = {path: lines for path, lines in publishers().items() if path not in NOT_YET}
    assert around == {}, "return the events as intents and let the kernel publish them"


def test_the_not_yet_list_is_current() -> None:
    """A module that no longer publishes leaves the list (so the list only shrinks)."""
    stale = sorted(set(NOT_YET) - set(publishers()))
    assert stale == [], "these publish through the kernel now: remove them from NOT_YET"


def test_the_scan_finds_a_planted_publish() -> None:
    """The scan is not blind: a shell that publishes by itself, in any of the three ways,
    awaited or handed to a task, is found; a helper that only builds an intent is not."""
    rogue = (
        "async def perform(self, effect):\n"
        "    await self.bus.publish(event)\n"
        "    acks = await bus.publish_atomic([a, b])\n"
        "    await self.kernel.bus.publish_transition(event, 0)\n"
        "    asyncio.ensure_future(self.bus.publish(event))\n"
        "    await sink.publish(event)\n"
        "    return [publish(world, event), step.publish(event)]\n"
        "    await self.bus.publish_many(events)\n"
        "    await carry_out(self.bus, intents)\n"
    )
    assert sorted(publishing_calls(rogue, "rogue.py")) == [2, 3, 4, 5, 6, 8, 9]


def oneshot_calls(source: str, filename: str) -> Iterator[int]:
    """Lines of ``source`` that call the one-shot, when the module defines a daemon's
    ``perform`` (a method of that name): a daemon's shell hands its intents back to its own
    kernel, and a one-shot call beside it would put facts on the log out of that kernel's
    order (a verdict ahead of the gate results it names)."""
    tree = ast.parse(source, filename)
    shells = [
        node
        for cls in ast.walk(tree)
        if isinstance(cls, ast.ClassDef)
        for node in cls.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "perform"
    ]
    if not shells:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in ONESHOT:
                yield node.lineno


def test_no_daemon_shell_calls_the_one_shot() -> None:
    """A module defining a daemon's ``perform`` never calls the one-shot, not even one that
    ``NOT_YET`` excuses: its shell returns intents to its kernel."""
    found: dict[str, list[int]] = {}
    shells = 0
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.is_relative_to(KERNEL):
                continue
            source = path.read_text()
            shells += "def perform(" in source
            lines = list(oneshot_calls(source, str(path)))
            if lines:
                found[str(path.relative_to(ROOT))] = lines
    assert shells >= 10, f"only {shells} daemon shells found: was perform renamed?"
    assert found == {}, "return the intents from perform: the daemon's kernel publishes them"


def test_the_shell_scan_finds_a_planted_one_shot_call() -> None:
    """The shell scan is not blind: a daemon's module that carries intents out by itself, or
    moves a unit through the one-shot, is found; a module with no ``perform`` (a command)
    is left to the publishing scan."""
    shell = (
        "class Rogue(Daemon):\n"
        "    async def perform(self, effect):\n"
        "        return []\n"
        "async def helper(bus, intents):\n"
        "    await oneshot.carry_out(bus, intents)\n"
        "    await transition_unit(bus, 'p', 'u', decide, actor=a, salt='s')\n"
    )
    assert list(oneshot_calls(shell, "rogue.py")) == [5, 6]
    command = "async def run(bus, intents):\n    await carry_out(bus, intents)\n"
    assert list(oneshot_calls(command, "command.py")) == []


FRONT_PUBLISHERS = {
    "loopbus/claiming.py": "publish_claim: every claim a command publishes",
    "loopbus/commands/gate.py": "loopbus gate run: a signed suite, handed to the kernel's "
    "one-shot carry_out as a daemon's shell hands it to its kernel",
}
"""The modules of the front that publish, each with what."""


def test_the_front_publishes_claims_through_one_function() -> None:
    """Every command that publishes a claim does it with ``loopbus.claiming.publish_claim``
    (the one place that keeps a command from speaking for the system), not with the bus's
    methods; ``loopbus gate run`` publishes its results through the kernel's one-shot."""
    found: dict[str, list[int]] = {}
    paths = sorted((ROOT / "loopbus").rglob("*.py"))
    assert len(paths) > 80  # the front was found (a moved folder would pass)
    for path in paths:
        lines = list(publishing_calls(path.read_text(), str(path)))
        if lines:
            found[str(path.relative_to(ROOT))] = lines
    assert set(found) == set(FRONT_PUBLISHERS), "publish with loopbus.claiming.publish_claim"


async def test_a_command_cannot_publish_a_system_fact(bus: Bus, project: str) -> None:
    """The guard is real: a system fact is refused before it reaches the log; a claim is
    stored."""
    from loopbus.claiming import publish_claim

    def finding(role: Role, producer: Producer) -> FindingRaised:
        return FindingRaised(
            project=project,
            actor=Actor(role=role, principal="x"),
            producer=producer,
            target=parse_target("code:app.py:1-1"),
            severity="low",
            message="m",
        )

    with pytest.raises(LoopbusError, match="only the system"):
        await publish_claim(bus, finding("system", "gate_runner"))
    claim = finding("reviewer", "reviewer")
    ack = await publish_claim(bus, claim)
    stored = [r.event async for r in read(bus, subjects=[project_subjects(project)])]
    assert stored == [claim] and ack.seq > 0
