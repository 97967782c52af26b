"""The review rounds' rules, pure: how a unit's rounds compare, and what the system does
after each (the rung ladder). The ``convergence`` fold (:mod:`projections.convergence`)
keeps each unit's rounds and applies these same functions.

Rounds are compared on finding keys ``target|severity|criterion`` (see
``schemas.findings.finding_key``) and on the git tree of each round's head (a tree id
cannot be made to look new by rebasing, as a diff against a moving base can). The
comparison reads the unit's *ledger*, built from its rounds since its last approved round
(a later round is about its merge, a new problem):

* a key is *open* from the round that raises it until a later round resolves it. Any
  later round that does not raise a gate key resolves it (a review runs only on a head
  whose gates passed; a red suite runs every check). Only a later review resolves a
  review key: a red suite says nothing about what the reviewer asked for;
* a resolved key stays *resolved* until a round raises it again (which re-opens it).

Round n is judged against the ledger of the rounds before it:

=========================================================  ===========
round n                                                    verdict
=========================================================  ===========
no round before it (since the unit's last approval)        first
raises a key the ledger holds as resolved, or its head's   thrashing
tree is the tree of a round before round n-1
its open blocking set (after round n) is no smaller than   stalled
it was N rounds before (N: ``[review] stall``, default 3)
otherwise: what it was told is fixed, whatever new it met  converging
=========================================================  ===========

The rules are applied in that order, so each round gets exactly one verdict. A red gate
fixed in one round and an unrelated review finding fixed in the next is converging.

What the system does after a failing round (:func:`decide`), in order:

1. a halt condition (security finding, secret, frozen artifact) halts at once (rung 5);
2. the round passed (review approved, nothing blocking left) -> ``approved``;
3. the no-progress guard: the same failure signature or the same tree as round n-1
   promotes the unit one rung (it never stops it); promotion past rung 4 means the
   ladder is spent and the unit halts;
4. otherwise ``thrashing`` or ``stalled`` stops the unit (``progress-test``);
5. a round that would continue but has reached the ceiling (default 6) stops the unit
   (``ceiling``), so the outcome always says which of the two ended it;
6. otherwise the unit goes on, on the same rung.

Pure: the reviewer daemon and the fold call the same functions.
"""

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from schemas.reviews import (
    Convergence,
    EndedBy,
    RoundAction,
)

DEFAULT_CEILING = 6
DEFAULT_STALL = 3
"""Rounds over which an open blocking set that did not shrink means ``stalled``."""
HALT_RUNG = 5
LAST_RUNG = HALT_RUNG - 1
"""The last rung a unit can work on: past it the ladder is spent."""

RUNGS: dict[int, tuple[str, str]] = {
    1: ("repair", "fix the reported findings where they are"),
    2: ("diagnose", "reproduce the failure and find its root cause before editing"),
    3: ("rework", "take a different approach to the same contract"),
    4: ("narrow", "cut the change to the smallest part that meets the failing criteria"),
    5: ("halted", "the ladder is spent or a halt condition hit: a person decides"),
}
"""Rung -> (tactic, what it asks of the builder). Rungs 3 and 4 change how, never what:
the acceptance criteria are frozen on every rung."""

SEVERITY_RANK: dict[str, int] = {"info": 0, "low": 1, "medium": 2, "high": 3, "critical": 4}
DEFAULT_BLOCKING = "medium"

Source = Literal["review", "gate"]


def tactic(rung: int) -> str:
    return RUNGS[min(max(rung, 1), HALT_RUNG)][0]


def ask(rung: int) -> str:
    return RUNGS[min(max(rung, 1), HALT_RUNG)][1]


def is_blocking(severity: str, threshold: str = DEFAULT_BLOCKING) -> bool:
    """A finding blocks when its severity is at or above the project's threshold."""
    return SEVERITY_RANK.get(severity, 0) >= SEVERITY_RANK[threshold]


def failure_signature(failing_checks: Iterable[str], keys: Iterable[str]) -> str:
    """sha256 over the sorted failing checks and finding keys of a round."""
    text = "checks:" + "\n".join(sorted(set(failing_checks)))
    text += "\nkeys:" + "\n".join(sorted(set(keys)))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class RoundFacts:
    """What one round established, before the system decides what to do about it."""

    keys: frozenset[str]
    blocking: frozenset[str]
    signature: str
    diff_digest: str
    passed: bool
    halt: str | None = None
    tree: str = ""
    """The git tree of the round's head (``""``: not known, compared with nothing)."""
    source: Source = "review"


# -- the ledger: what the earlier rounds established ------------------------------------


@dataclass(slots=True)
class Ledger:
    """The keys open and resolved after a run of rounds, and the open blocking set's size
    after each (see the module docstring)."""

    open: dict[str, tuple[Source, bool]] = field(default_factory=dict)
    """key -> (the source of the round that last raised it, blocking there)."""
    resolved: set[str] = field(default_factory=set)
    sizes: list[int] = field(default_factory=list)
    trees: list[str] = field(default_factory=list)

    def record(self, facts: RoundFacts) -> set[str]:
        """Take one round into the ledger; return the resolved keys it raised again."""
        for key, (source, _) in list(self.open.items()):
            if key not in facts.keys and (source == "gate" or facts.source == "review"):
                del self.open[key]
                self.resolved.add(key)
        again = self.resolved & facts.keys
        self.resolved -= facts.keys
        for key in facts.keys:
            self.open[key] = (facts.source, key in facts.blocking)
        self.sizes.append(sum(1 for _, blocking in self.open.values() if blocking))
        self.trees.append(facts.tree)
        return again


def since_approval(rounds: Sequence[RoundFacts]) -> list[RoundFacts]:
    """The rounds after the last one that passed: what the next round is compared with."""
    for index in range(len(rounds) - 1, -1, -1):
        if rounds[index].passed:
            return list(rounds[index + 1 :])
    return list(rounds)


def judge(
    earlier: Sequence[RoundFacts], current: RoundFacts, stall: int = DEFAULT_STALL
) -> tuple[Convergence, str]:
    """The verdict on ``current`` after ``earlier`` (the unit's rounds before it, oldest
    first), and why, in words; see the module table."""
    window = since_approval(earlier)
    if not window:
        return "first", "first round"
    ledger = Ledger()
    for facts in window:
        ledger.record(facts)
    older_trees = ledger.trees[:-1]
    again = ledger.record(current)
    if again:
        return "thrashing", f"raised again after it was resolved: {', '.join(sorted(again))}"
    if current.tree and current.tree in older_trees:
        back = older_trees.index(current.tree) + 1
        return "thrashing", f"its tree {current.tree[:12]} returns to round {back}'s"
    sizes = ledger.sizes  # one per round of the window, then the current one
    if len(sizes) > stall and sizes[-1] >= sizes[-1 - stall]:
        return "stalled", (
            f"{sizes[-1]} blocking findings open, no fewer than {stall} rounds before "
            f"({sizes[-1 - stall]})"
        )
    return "converging", "what the last round was told is fixed or still shrinking"


def classify(
    earlier: Sequence[RoundFacts], current: RoundFacts, stall: int = DEFAULT_STALL
) -> Convergence:
    """The verdict alone (:func:`judge`)."""
    return judge(earlier, current, stall)[0]


@dataclass(frozen=True, slots=True)
class RoundDecision:
    convergence: Convergence
    action: RoundAction
    ended_by: EndedBy | None
    rung: int
    """The rung the unit is on after this round."""
    why: str


def decide(
    earlier: Sequence[RoundFacts],
    current: RoundFacts,
    *,
    round_no: int,
    rung: int,
    ceiling: int = DEFAULT_CEILING,
    stall: int = DEFAULT_STALL,
) -> RoundDecision:
    """What the system does after round ``round_no`` of a unit on ``rung``, whose earlier
    rounds were ``earlier`` (oldest first)."""
    convergence, reason = judge(earlier, current, stall)
    if current.halt is not None:
        return RoundDecision(convergence, "halted", "halted", HALT_RUNG, current.halt)
    if current.passed:
        return RoundDecision(convergence, "approved", None, rung, "nothing blocking is left")
    action: RoundAction = "continue"
    next_rung = rung
    why = f"{convergence}: continue on rung {rung} ({tactic(rung)})"
    window = since_approval(earlier)
    repeat = _repeat(window[-1] if window else None, current)
    if repeat is not None:
        next_rung = rung + 1
        if next_rung >= HALT_RUNG:
            return RoundDecision(
                convergence, "halted", "halted", HALT_RUNG, f"{repeat} on rung {rung}: ladder spent"
            )
        action = "promoted"
        why = f"{repeat}: rung {rung} is finished, promoted to {next_rung} ({tactic(next_rung)})"
    elif convergence in ("stalled", "thrashing"):
        return RoundDecision(
            convergence, "stopped", "progress-test", rung, f"{convergence}: {reason}"
        )
    if round_no >= ceiling:
        return RoundDecision(
            convergence, "stopped", "ceiling", rung, f"round {round_no} reached the ceiling"
        )
    return RoundDecision(convergence, action, None, next_rung, why)


def _repeat(previous: RoundFacts | None, current: RoundFacts) -> str | None:
    """The no-progress guard: round n-1's failure, or its tree, again."""
    if previous is None or previous.passed:
        return None
    if current.signature == previous.signature:
        return "identical failure signature"
    if current.tree and current.tree == previous.tree:
        return "identical tree"
    return None
