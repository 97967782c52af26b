"""The verifier's passing acceptance checks, proposed as gates (``[verify] propose_gates``):
only passing ones, only when asked, each as a draft the operator alone settles."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from projections import ratchet
from schemas import Actor
from schemas.ids import new_id
from schemas.ratchet import GateProposed
from schemas.verify import AcceptanceCheck, VerifierEnvelope, VerifyBrief, WaveVerified
from workers.agents.verify_config import parse
from workers.errors import ConfigError
from workers.verifier.answer import recorded

SYSTEM = Actor(role="system", principal="verifier")
NOW = datetime(2026, 1, 1, tzinfo=UTC)
BRIEF = VerifyBrief(project="shop", slice="S1", wave=0, units=["A"], trunk="c" * 40)
ENVELOPE = VerifierEnvelope(
    checks=[
        AcceptanceCheck(
            id="discount applies", command="python -m pytest -q tests/test_d.py", passed=True
        ),
        AcceptanceCheck(id="refund", command="python -m pytest -q tests/test_r.py", passed=False),
    ]
)


def test_a_passing_check_is_proposed_after_the_run_and_a_failing_one_is_not() -> None:
    events = recorded(BRIEF, new_id(), ENVELOPE, actor=SYSTEM, now=NOW, propose_gates=True).events
    run, proposed = events
    assert isinstance(run, WaveVerified) and isinstance(proposed, GateProposed)
    assert proposed.gate == "verify-S1-w0-discount-applies"
    assert proposed.check == "python -m pytest -q tests/test_d.py"
    assert proposed.investigation == run.id
    # It is a draft in the ratchet, owned by the operator: nothing runs it yet.
    state = ratchet.FOLD.fold([proposed])
    [draft] = state.pending.values()
    assert (draft.gate, draft.move) == (proposed.gate, "draft")


def test_nothing_is_proposed_unless_the_project_asks() -> None:
    events = recorded(BRIEF, new_id(), ENVELOPE, actor=SYSTEM, now=NOW).events
    assert [type(e) for e in events] == [WaveVerified]
    assert parse('[verify]\ncommand = "v"\n')[0].propose_gates is False
    assert parse('[verify]\ncommand = "v"\npropose_gates = true\n')[0].propose_gates is True
    with pytest.raises(ConfigError, match=r"verify\.propose_gates"):
        parse('[verify]\ncommand = "v"\npropose_gates = "yes"\n')
