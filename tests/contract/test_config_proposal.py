"""An operator's configuration proposal, approved, lands through the real merger as one
system commit and is adopted; a proposal or approval from anyone else, or a proposal that
edits a check, is refused with a finding and trunk does not move."""

from __future__ import annotations

from merger_scene import Scene, make_trunk

from projections import contract_landing
from schemas import Actor, FindingRaised
from schemas.adoption import ConfigAdopted, config_digest
from schemas.contract import ConfigApprove, ConfigLanded, ConfigProposal
from workers import history

OLIVE = Actor(role="operator", principal="olive")
BUILDER = Actor(role="builder", principal="builder-1")
REVIEW = '\n[review]\nroster = ["r1"]\ncommand = "python review.py"\n'


def contract_state(scene: Scene) -> contract_landing.ContractState:
    assert scene.kernel is not None
    state: contract_landing.ContractState = scene.kernel.project_states(scene.project)[
        contract_landing.FOLD.name
    ]
    return state


def answered(scene: Scene, claim: str) -> bool:
    """The merger answered ``claim`` (a proposal refused, or an approval answered)."""
    state = contract_state(scene)
    proposal = state.proposals.get(claim)
    if proposal is not None:
        return proposal.refused is not None
    return any(a.id == claim and a.answered for a in state.approvals)


async def refusal_of(scene: Scene, claim: str) -> FindingRaised:
    """The one finding that refused ``claim``, once the merger has answered it."""
    await scene.until(lambda: answered(scene, claim))
    [refused] = [
        f
        for f in await scene.events(FindingRaised)
        if f.evidence.get(contract_landing.PROPOSAL_EVIDENCE) == claim
    ]
    return refused


async def green_trunk(scene: Scene) -> str:
    base = make_trunk(scene)
    await scene.start()
    await scene.until(lambda: scene.merges.trunk.green_commit == base)
    return base


async def test_an_approved_proposal_lands_as_one_commit_and_is_adopted(scene: Scene) -> None:
    base = await green_trunk(scene)
    text = scene.config() + REVIEW
    proposal = ConfigProposal(project=scene.project, actor=OLIVE, text=text, why="claude reviews")
    await scene.publish(proposal)
    approval = ConfigApprove(
        project=scene.project, actor=OLIVE, proposal=proposal.id, why="read it"
    )
    await scene.publish(approval)
    await scene.until(lambda: contract_state(scene).proposals[proposal.id].landed is not None)
    [landed] = await scene.events(ConfigLanded)
    assert landed.proposal == proposal.id and landed.approval == approval.id
    assert scene.repo.trunk() == landed.commit and scene.repo.parents(landed.commit) == [base]
    assert scene.repo.files(landed.commit)["loopbus.toml"] == text
    trailers = history.trailers(scene.repo.path, landed.commit)
    assert trailers["Loopbus-Proposal"] == proposal.id
    adopted = (await scene.events(ConfigAdopted))[-1]
    assert (adopted.why, adopted.by, adopted.commit) == ("proposal", "olive", landed.commit)
    assert adopted.digest == config_digest(text) == landed.config
    await scene.until(
        lambda: (c := scene.merges.trunk.checked) is not None and c.candidate == landed.commit
    )
    checked = scene.merges.trunk.checked
    assert checked is not None and checked.green and checked.config == landed.config
    assert [f for f in await scene.events(FindingRaised) if f.cls == "trunk-red"] == []


async def test_a_proposal_from_a_non_operator_is_refused_and_cannot_be_approved(
    scene: Scene,
) -> None:
    base = await green_trunk(scene)
    text = scene.config() + REVIEW
    proposal = ConfigProposal(project=scene.project, actor=BUILDER, text=text, why="mine")
    await scene.publish(proposal)
    # an agent's proposal is a forgery (schemas/authority.py): no fold reads it, so an
    # operator approving its id approves nothing
    approval = ConfigApprove(project=scene.project, actor=OLIVE, proposal=proposal.id, why="ok")
    await scene.publish(approval)
    again = await refusal_of(scene, approval.id)
    assert again.criterion == "unknown-proposal"
    assert scene.repo.trunk() == base and await scene.events(ConfigLanded) == []


async def test_an_approval_by_a_non_operator_and_a_proposal_editing_a_check_are_refused(
    scene: Scene,
) -> None:
    base = await green_trunk(scene)
    good = ConfigProposal(
        project=scene.project, actor=OLIVE, text=scene.config() + REVIEW, why="reviews"
    )
    await scene.publish(good)
    loose = scene.config().replace("python -m pytest -q -p no:cacheprovider tests", "true")
    bad = ConfigProposal(project=scene.project, actor=OLIVE, text=loose, why="faster")
    await scene.publish(bad)
    approval = ConfigApprove(project=scene.project, actor=OLIVE, proposal=bad.id, why="ok")
    await scene.publish(approval)
    refused = await refusal_of(scene, approval.id)
    assert refused.criterion == "proposal-edits-config"
    assert "check 'tests': edited (command)" in refused.message
    assert scene.repo.trunk() == base and await scene.events(ConfigLanded) == []
