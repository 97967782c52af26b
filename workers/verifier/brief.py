"""The verifier's brief, built from the plan and the charter only. Pure: no I/O, no clock.

Code-cold by construction: the only inputs are the slice's accepted plan (unit ids, the
planner's titles, the criteria the units claim) and the charter (objectives, the words of
its criteria). Builder reports, unit outcomes, run-record summaries, review verdicts and
diffs are on the log too, but nothing here reads them, and :class:`VerifyBrief` has no
field that could carry them. The shell adds trunk's commit and its boot command.
"""

from __future__ import annotations

from projections.slices import SliceView
from projections.verify import wave_units
from schemas.charter import Charter
from schemas.verify import BriefCriterion, BriefObjective, VerifyBrief


def verify_brief(project: str, view: SliceView, wave: int, charter: Charter | None) -> VerifyBrief:
    """What the verifier is told about ``wave`` of ``view``'s slice (trunk and boot aside)."""
    words = {c.id: c.text for c in charter.criteria} if charter is not None else {}
    claimed: dict[str, list[str]] = {}
    for planned in view.plan.units:  # the slice's criteria: the whole increment so far
        for criterion in planned.criteria:
            claimed.setdefault(criterion, []).append(planned.id)
    units = wave_units(view, wave)
    return VerifyBrief(
        project=project,
        slice=view.slice,
        wave=wave,
        units=units,
        titles={u.id: u.title for u in view.plan.units if u.id in units},
        criteria=[
            BriefCriterion(id=c, text=words.get(c, ""), units=owners)
            for c, owners in sorted(claimed.items())
        ],
        objectives=[
            BriefObjective(id=o.id, text=o.text)
            for o in (charter.objectives if charter is not None else ())
        ],
    )
