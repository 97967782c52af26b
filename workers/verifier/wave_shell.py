"""The wave review's shell: reads the union diff and the units' merges, runs the
``[review] command`` (the reviewer's command, through the same agent runner) on a read-only
copy of trunk, and reads its verdict document. Blocking (git, subprocess): no facts here.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import msgspec

from projections import wave_triggers
from projections.wave_review import WaveToReview
from schemas.reviews import VerdictDocument
from schemas.wave_review import Trigger
from workers.agents.command import argv_of
from workers.agents.config import RepoConfig
from workers.agents.runner import run_agent
from workers.agents.workspace import read_only_copy, remove, workdir
from workers.history import diff_commits
from workers.repository import files_changed
from workers.verifier.effects import ReReviewUnit

_verdict = msgspec.json.Decoder(VerdictDocument)


def wave_document(
    config: RepoConfig, owed: WaveToReview, criteria: list[str]
) -> tuple[dict[str, Any], list[str], list[Trigger], dict[str, str]]:
    """The wave brief (what the review command reads), its axes, the triggers that fired,
    and each changed file's unit."""
    repo = Path(config.repo)
    union = diff_commits(repo, owed.base, owed.head)
    files = wave_triggers.split_files(union)
    unit_files = {
        unit: set(files_changed(repo, previous, merge))
        for unit, (merge, previous) in owed.merges.items()
    }
    attribution = wave_triggers.attribute(sorted(files), unit_files)
    triggers = wave_triggers.fired(files)
    axes = wave_triggers.axes(triggers)
    document = {
        "diff": union,
        "criteria": criteria,
        "gate_results": [],
        "decisions": [],
        "wave": {
            "wave": owed.wave,
            "base": owed.base,
            "head": owed.head,
            "units": sorted(owed.merges),
            "axes": axes,
            "triggers": [msgspec.to_builtins(t) for t in triggers],
            "hunks": [
                {"file": path, "unit": attribution.get(path, ""), "diff": section}
                for path, section in sorted(files.items())
            ],
        },
    }
    return document, axes, triggers, attribution


def unit_document(config: RepoConfig, args: ReReviewUnit) -> dict[str, Any]:
    """A re-opened unit's own diff, with what the wave review found in it."""
    return {
        "diff": diff_commits(Path(config.repo), args.base, args.merge),
        "criteria": args.criteria,
        "gate_results": [],
        "decisions": [],
        "rereview": {"unit": args.unit, "wave_findings": args.messages},
    }


async def run_review(
    config: RepoConfig, head: str, document: dict[str, Any]
) -> VerdictDocument | str:
    """Run the review command on ``document``, in a read-only copy of ``head``."""
    assert config.review.command is not None
    reviewer = config.review.roster[0] if config.review.roster else "wave"
    folder = await asyncio.to_thread(workdir, "loopbus-wave-review-", mode=0o755)
    copy, scratch = folder / "tree", folder / "work"
    try:
        copy.mkdir()
        scratch.mkdir()
        try:
            await asyncio.to_thread(read_only_copy, config.repo, head, copy)
        except Exception as exc:  # whatever stopped the checkout is the review's error
            return f"no read-only copy of {head[:12]}: {exc}"
        result = await run_agent(
            config,
            argv_of(config.review.command, {"reviewer": reviewer}),
            stdin=msgspec.json.encode(document),
            worktree=scratch,
            read_only=(copy,),
            cwd=copy,
            timeout_s=config.review.timeout_s,
            env={"LOOPBUS_REVIEWER": reviewer},
        )
    finally:
        await asyncio.to_thread(remove, folder)
    failure = result.failure(config.review.timeout_s)
    if failure is not None:
        return f"the review command failed: {failure}"
    try:
        return _verdict.decode(result.stdout.strip() or b"{}")
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        return f"the review command printed no verdict document: {exc}"
