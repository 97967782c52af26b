"""Facts, claims and forgeries: who may say what, and where it is stored."""

from __future__ import annotations

import msgspec
import pytest

from projections.base import Fold, apply_guarded, is_forged
from schemas import (
    EVENT_TYPES,
    Actor,
    FindingRaised,
    InvalidValue,
    parse_target,
    subject_of,
)
from schemas.authority import CLAIM_TAGS, standing
from schemas.reports import StartedReport
from schemas.units import UnitTransitioned

SYSTEM = Actor(role="system", principal="units@host:1")
BUILDER = Actor(role="builder", principal="b1")
OPERATOR = Actor(role="operator", principal="alice")


def finding(actor: Actor, producer: str = "builder", cls: str = "defect") -> FindingRaised:
    return FindingRaised(
        project="p", actor=actor, producer=producer,  # type: ignore[arg-type]
        target=parse_target("plan:S1"), severity="low", cls=cls,  # type: ignore[arg-type]
        message="m",
    )  # fmt: skip


def test_every_claim_tag_is_a_kind_of_the_union() -> None:
    """The claim kinds named in authority exist: a renamed report cannot silently become a
    fact kind that agents may no longer publish (or a fact agents may publish)."""
    tags = {str(t.__struct_config__.tag) for t in EVENT_TYPES}
    assert tags >= CLAIM_TAGS
    assert {t for t in tags if t.startswith("report.")} <= CLAIM_TAGS


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        pytest.param(StartedReport(project="p", actor=BUILDER, unit="U1"), "claim", id="report"),
        pytest.param(
            UnitTransitioned(project="p", actor=SYSTEM, unit="U1", state="working"),
            "fact",
            id="system-transition",
        ),
        pytest.param(
            UnitTransitioned(project="p", actor=BUILDER, unit="U1", state="working"),
            "forged",
            id="builder-transition",
        ),
        pytest.param(finding(BUILDER), "claim", id="builder-defect"),
        pytest.param(finding(BUILDER, producer="operator"), "forged", id="builder-as-operator"),
        pytest.param(finding(BUILDER, cls="refused-transition"), "forged", id="builder-refusal"),
        pytest.param(
            finding(OPERATOR, "operator", "misaligned"), "claim", id="operator-misaligned"
        ),
        pytest.param(finding(SYSTEM, "gate_runner", "trunk-red"), "fact", id="system-finding"),
        pytest.param(
            finding(Actor(role="planner", principal="p1")), "forged", id="planner-finding"
        ),
    ],
)
def test_standing(event: object, expected: str) -> None:
    """Fact kinds are the system's; findings are claims within what the role may raise."""
    assert standing(event) == expected  # type: ignore[arg-type]


def test_claims_live_under_their_role_and_principal() -> None:
    """A claim's subject names its role and principal; a fact's does not."""
    assert subject_of(StartedReport(project="p", actor=BUILDER, unit="U1")) == (
        "loop.p.claim.builder.b1.report.builder.U1"
    )
    system = UnitTransitioned(project="p", actor=SYSTEM, unit="U1", state="working")
    assert subject_of(system) == "loop.p.unit.U1"


def test_a_principal_that_cannot_be_a_subject_token_is_refused_in_one_line() -> None:
    """A claim under a principal with a dot or '@' in it has no subject: refused, naming it."""
    report = StartedReport(project="p", actor=Actor(role="builder", principal="a.b@c"), unit="U1")
    with pytest.raises(InvalidValue, match=r"actor\.principal='a\.b@c'.*one subject token"):
        subject_of(report)


def test_every_fold_skips_a_forgery_unless_it_asks_to_see_them() -> None:
    """The guard is in Fold itself: a new projection cannot forget it."""

    class Seen(msgspec.Struct):
        kinds: list[str] = []

    def note(state: Seen, event: object) -> Seen:
        state.kinds.append(event.kind)  # type: ignore[attr-defined]
        return state

    events = [
        UnitTransitioned(project="p", actor=BUILDER, unit="U1", state="working"),
        StartedReport(project="p", actor=BUILDER, unit="U1"),
    ]
    trusting = Fold(name="t", state_type=Seen, initial=Seen, apply=note)
    auditing = Fold(name="a", state_type=Seen, initial=Seen, apply=note, sees_forgeries=True)
    assert trusting.fold(events).kinds == ["report.started.v1"]
    assert auditing.fold(events).kinds == ["unit.transitioned.v1", "report.started.v1"]
    # Judged once for many folds (the projector, a replay), the same rule: apply_guarded
    # with the event's is_forged skips the forgery for the trusting fold only.
    once: dict[str, Seen] = {"t": Seen(), "a": Seen()}
    for event in events:
        forged = is_forged(event)
        for fold in (trusting, auditing):
            once[fold.name], failure = apply_guarded(fold, once[fold.name], event, forged)
            assert failure is None
    assert once["t"].kinds == ["report.started.v1"]
    assert once["a"].kinds == ["unit.transitioned.v1", "report.started.v1"]


def test_a_config_proposal_or_approval_is_an_operators_claim_only() -> None:
    from schemas.contract import ConfigApprove, ConfigProposal

    for kind in (
        ConfigProposal(project="p", actor=BUILDER),
        ConfigApprove(project="p", actor=BUILDER),
    ):
        assert standing(kind) == "forged"
    assert (
        standing(ConfigProposal(project="p", actor=Actor(role="operator", principal="o")))
        == "claim"
    )


def test_the_first_config_proposal_under_an_id_is_kept() -> None:
    from projections import contract_landing
    from schemas.contract import ConfigProposal

    op = Actor(role="operator", principal="o")
    first = ConfigProposal(project="p", actor=op, text="first", why="w")
    again = ConfigProposal(project="p", actor=op, id=first.id, text="second", why="w")
    state = contract_landing.FOLD.fold([first, again])
    assert state.proposals[first.id].text == "first"
