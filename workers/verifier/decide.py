"""The verifier daemon's decision. Pure: no I/O, no clock.

For each open slice of a project with a ``[verify] command``, the first merged wave not yet
verified (:func:`projections.verify.to_verify`) becomes one effect: run the
command on trunk with the wave's code-cold brief (:mod:`.brief`). The dispatcher holds the
next wave and the close meanwhile, so trunk is the wave's end when the effect reads it.
"""

from __future__ import annotations

from projections import charter as charter_fold
from projections import slices as slices_fold
from projections import verify as verify_fold
from projections import wave_review as wave_fold
from projections.slices import SlicesState
from workers.kernel import World
from workers.verifier.brief import verify_brief
from workers.verifier.effects import VerifierIntent, VerifyWave

FOLDS = (slices_fold.FOLD, verify_fold.FOLD, charter_fold.FOLD, wave_fold.FOLD)
"""What the verifier daemon folds (the charter for its objectives and criteria words)."""


def decide(world: World) -> list[VerifierIntent]:
    slices: SlicesState = world.state(slices_fold.FOLD.name)
    checked: verify_fold.VerifyState = world.state(verify_fold.FOLD.name)
    charter = world.state(charter_fold.FOLD.name).charter
    intents: list[VerifierIntent] = []
    for view in sorted(slices.slices.values(), key=lambda v: v.rank):
        wave = verify_fold.to_verify(checked, view)
        if wave is None:
            continue
        brief = verify_brief(world.project, view, wave, charter)
        effect = VerifyWave(project=world.project, brief=brief, accepted=view.accepted)
        if effect.key not in world.failed:
            intents.append(effect)
    return intents
