"""The units daemon: turns claims into transitions, or into findings saying why not.

It folds units, findings and gates and, once caught up, answers for every unit the oldest
report the units projection still holds as unanswered: :func:`projections.claims.decide`
gives a :class:`Move` (a transition, conditional on the unit subject's sequence) or a
:class:`Refusal` (a ``refused-transition`` finding). It also keeps each working unit's
ready flag in step with the verified gate suite for its head commit.

Restart-safe and safe to run twice: what is unanswered is derived from the log (an answer
names its report), and an answer's id is derived from the report it answers, so a second
daemon publishing the same answer is de-duplicated by the log; a transition that loses a
race is decided again once the winner is folded.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Never

from projections import contract
from projections import findings as findings_fold
from projections import gates as gates_fold
from projections import reviews as reviews_fold
from projections import units as units_fold
from projections.claims import Move, References, Refusal, Verdict, decide, gates, verb
from projections.intents import Publish, Publishing
from projections.units import CONTRACT_CLASS, REFUSAL_CLASS, UnitsState, UnitView
from schemas import Actor, FindingRaised, FindingResolved, Producer
from schemas.authority import ANSWERS_CLAIM
from schemas.ids import answer_id
from schemas.reports import UnitReport
from schemas.targets import RecordTarget
from workers.gates.declared import DeclaredChecks, declared_checks
from workers.kernel import Daemon, World
from workers.units.answer_ids import ANSWER_SALT
from workers.units.settled import no_longer_raised

GATES_SALT = "gates"


def refusal_finding(
    project: str,
    report: UnitReport,
    refusal: Refusal,
    units: UnitsState,
    actor: Actor,
    event_id: str,
) -> FindingRaised:
    """The finding a refused claim becomes: produced by the claimant's side (builder or
    operator), about the report, owned by whoever made the claim."""
    view = units.units.get(report.unit)
    name = verb(report)
    producer: Producer = "operator" if report.actor.role == "operator" else "builder"
    return FindingRaised(
        id=event_id,
        project=project,
        actor=actor,
        producer=producer,
        target=RecordTarget(id=report.id),
        severity="medium",
        criterion=refusal.code,
        cls=REFUSAL_CLASS,
        message=f"{name} report refused: {refusal.message}",
        evidence={
            "report": report.id,
            ANSWERS_CLAIM: report.id,  # the claim it answers (the report), not its verb
            "reported": name,
            "claimant": f"{report.actor.role}:{report.actor.principal}",
            "state": (view.state or "planned") if view else "unplanned",
            "code": refusal.code,
        },
        unit=report.unit,
        slice=view.slice if view and view.slice else None,
        owner="operator" if producer == "operator" else f"builder:{report.unit}",
    )


def judge(units: UnitsState, report: UnitReport, refs: References) -> Verdict:
    """The claim's verdict; a claim the rules cannot decide is refused as a loopbus defect
    rather than left unanswered (the builder would wait on it for ever)."""
    try:
        return decide(units, report, refs)
    except Exception as exc:
        return Refusal(
            report.unit,
            "undecidable",
            f"the units daemon could not decide it ({exc!r}); this is a loopbus defect",
            report=report.id,
        )


class Units(Daemon[Never]):
    """Answer claims; keep readiness in step with verified gate suites."""

    name = "units"
    folds = (units_fold.FOLD, findings_fold.FOLD, gates_fold.FOLD, reviews_fold.FOLD)

    def __init__(
        self,
        *,
        projects: Sequence[str] = (),
        actor: Actor | None = None,
        checks: DeclaredChecks | None = None,
    ) -> None:
        super().__init__(projects=projects, actor=actor)
        self.checks = checks or DeclaredChecks()

    def decide(self, world: World) -> Sequence[Publishing]:
        units: UnitsState = world.state("units")
        refs = References.from_states(
            world.state("findings"),
            world.state("gates"),
            extra_checks=self.checks.for_project(world.project),
        )
        intents: list[Publishing] = []
        answering: set[str] = set()
        for unit, claims in units.claims.items():
            report = claims[0]
            answering.add(unit)
            event_id = answer_id(report.id, answer_salt(units_fold.occurrence(units, report.id)))
            verdict = judge(units, report, refs)
            if isinstance(verdict, Move):
                intents.append(world.move(verdict, event_id))
            else:
                finding = refusal_finding(
                    world.project, report, verdict, units, world.actor, event_id
                )
                intents.append(Publish(finding))
        for unit, view in units.units.items():
            if unit in answering or view.state != "working" or view.head is None:
                continue
            intents += ready_intents(world, units, unit)
        for unit in units.units:
            intents += [Publish(r) for r in settled_findings(world, units, unit)]
        return intents


def answer_salt(occurrence: int) -> str:
    """The salt of the answer to a report's ``occurrence``-th copy on the log (0: the first)."""
    return ANSWER_SALT if occurrence == 0 else f"{ANSWER_SALT}#{occurrence}"


def ready_intents(world: World, units: UnitsState, unit: str) -> list[Publishing]:
    """The ready move for ``unit``'s head, and the finding when its contract does not hold."""
    gates_state: gates_fold.GatesState = world.state("gates")
    found = contract_for(units, unit, gates_state)
    if found is None:
        return []
    view, contract = units.units[unit], found
    intents: list[Publishing] = []
    if contract.suite_passed and not contract.holds and view.contract_noted != contract.suite:
        intents.append(Publish(contract_finding(world, view, contract)))
    move = ready_move(units, unit, gates_state)
    if move is not None:
        intents.append(world.move(move, answer_id(move.cause or "", GATES_SALT)))
    return intents


def settled_findings(world: World, units: UnitsState, unit: str) -> list[FindingResolved]:
    """``unit``'s gate findings that the system's suite on its head no longer raises."""
    view = units.units[unit]
    gates_state: gates_fold.GatesState = world.state("gates")
    suite = system_suite(view, gates_state)
    if suite is None:
        return []
    return no_longer_raised(
        view,
        suite,
        world.state("findings"),
        gates_state,
        world.state("reviews"),
        project=world.project,
        actor=world.actor,
        now=world.now,
    )


def system_suite(view: UnitView, gates_state: gates_fold.GatesState) -> gates_fold.SuiteView | None:
    """The verified suite the system asked for on ``view``'s head, if it has run."""
    if view.head is None or view.asked is None:
        return None
    suite = gates_fold.unit_suite(gates_state, view.asked)
    if suite is None or suite.unit != view.unit or suite.reason != "unit":
        return None  # a suite someone else asked for (a subset, say) vouches for nothing
    return suite if suite.commit == view.head else None


def contract_for(
    units: UnitsState, unit: str, gates_state: gates_fold.GatesState
) -> contract.Contract | None:
    """The contract verdict of the suite the system asked for on ``unit``'s head, if any."""
    view = units.units[unit]
    suite = system_suite(view, gates_state)
    return contract.judge(view.criteria, suite, gates_state) if suite is not None else None


def ready_move(units: UnitsState, unit: str, gates_state: gates_fold.GatesState) -> Move | None:
    """Set or clear ``unit``'s ready flag: ready only when its contract holds."""
    view = units.units[unit]
    found = contract_for(units, unit, gates_state)
    if found is None or found.suite == view.gated_by:
        return None
    return gates(view, view.head, found.holds, found.suite, found.evidence)


def contract_finding(world: World, view: UnitView, found: contract.Contract) -> FindingRaised:
    """A passing suite that does not make the unit ready: which criteria, and how they ended."""
    shown = ", ".join(f"{c} ({why})" for c, why in sorted(found.unmet.items())[:5])
    return FindingRaised(
        id=answer_id(found.suite, "contract"),
        project=world.project,
        actor=world.actor,
        producer="gate_runner",
        target=RecordTarget(id=f"commit:{view.head}"),
        severity="high",
        criterion="unit-contract",
        cls=CONTRACT_CLASS,
        message=f"unit {view.unit} is not ready: its suite passed but its criteria did not "
        f"run and pass as ordinary tests: {shown}",
        evidence={"suite": found.suite, "unmet": found.unmet, "evidence": found.evidence},
        unit=view.unit,
        slice=view.slice or None,
        owner=f"builder:{view.unit}",
    )


def make_units(repo: Path | None, projects: Sequence[str] = ()) -> Units:
    """The daemon as ``python -m workers.units`` runs it."""
    return Units(projects=projects, checks=declared_checks(repo))
