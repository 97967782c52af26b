"""The one sandbox-breach finding every agent role publishes: who it names, who owns it,
and that it goes in the same batch as the run's answer."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from projections.intents import Effect, Publish, PublishBatch
from schemas import Actor, FindingRaised
from schemas.ids import answer_id
from schemas.targets import RecordTarget
from workers.agents.breaches import AgentRun, breach_finding, with_breach

SYSTEM = Actor(role="system", principal="builder@host")
NOW = datetime(2030, 1, 1, tzinfo=UTC)


class Run(Effect, frozen=True, tag="test.run.v1"):
    """An effect: not something a breach finding can be published with."""

    @property
    def key(self) -> str:
        return "run"


def run(role: str, **fields: object) -> AgentRun:
    return AgentRun(project="shop", system=SYSTEM, role=role, answers="E1", **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("role", "fields", "producer", "owner", "named"),
    [
        pytest.param(
            "builder", {"principal": "b1", "unit": "U1"}, "builder", "builder:U1",
            "builder b1 on unit U1", id="builder",
        ),
        pytest.param(
            "reviewer", {"principal": "rita", "unit": "U1"}, "reviewer", "operator",
            "reviewer rita on unit U1", id="reviewer",
        ),
        pytest.param(
            "investigator", {}, "meta_rule", "operator", "investigator for E1",
            id="investigator",
        ),
    ],
)  # fmt: skip
def test_the_finding_names_the_run_and_its_owner(
    role: str, fields: dict[str, object], producer: str, owner: str, named: str
) -> None:
    """Each role's breach is a system fact about what the run answered, with an id derived
    from it (a repeated run publishes the same finding)."""
    finding = breach_finding(run(role, **fields), ("memory", "processes"), "local", attempt=2)
    assert finding.id == answer_id("E1", "sandbox-breach-2")
    assert (finding.producer, finding.owner, finding.cls, finding.criterion) == (
        producer,
        owner,
        "sandbox-breach",
        "agent-limits",
    )
    assert finding.actor == SYSTEM and finding.target.id == "E1"  # type: ignore[union-attr]
    assert finding.message.startswith(f"{named}: the local sandbox")
    assert "(memory, processes)" in finding.message
    assert finding.evidence == {
        "breaches": ["memory", "processes"],
        "executor": "local",
        "attempt": 2,
        "role": role,
    }


def test_the_finding_goes_first_in_the_answer_s_batch() -> None:
    """With a breach, a single publish or a batch becomes one batch led by the finding;
    without one, the answer is untouched; anything but a publish is refused."""
    answer = FindingRaised(
        project="shop", actor=SYSTEM, producer="reviewer", target=RecordTarget(id="E1"),
        severity="high", message="no verdict",
    )  # fmt: skip
    reviewer = run("reviewer", principal="rita", unit="U1")
    assert with_breach(Publish(answer), reviewer, (), "local", NOW) == Publish(answer)
    single = with_breach(Publish(answer), reviewer, ("cpu",), "container", NOW)
    batch = with_breach(PublishBatch((answer, answer)), reviewer, ("cpu",), "container", NOW)
    for intent, rest in ((single, (answer,)), (batch, (answer, answer))):
        assert isinstance(intent, PublishBatch)
        first, *others = intent.events
        assert isinstance(first, FindingRaised) and first.cls == "sandbox-breach"
        assert first.at == NOW and tuple(others) == rest
    with pytest.raises(TypeError, match="goes with a publish"):
        with_breach(Run(project="shop"), reviewer, ("cpu",), "local", NOW)
