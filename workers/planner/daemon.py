"""The planner daemon: asks the ``[plan] command`` for the next slice of a running charter.

It folds the charter, the slices, the findings, the decisions and its own ``planner``
projection for every project it serves (``--repo`` with a ``[plan] command``), and runs on
the daemon kernel: the decision (:mod:`.decide`, pure) says when to run reconnaissance and
when to ask for a plan; this module is the shell that runs the commands and hands their
answers back as facts.

Both commands run through the agent runner (the builder's, sandboxed), in a read-only
copy of trunk (their working directory, also named by ``LOOPBUS_REPO``), the brief on
stdin. A plan is judged here with the same validation as ``loopbus plan check`` against
the pending criteria trunk declares; the dispatcher judges the submission again.

A sensor reads trunk's head once a second (the decision waits until the charter's
criteria were checked on it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, assert_never

import msgspec
import structlog
from dulwich.objects import Tree

from projections.intents import Publish
from schemas import Actor, utcnow
from schemas.charter import Charter
from schemas.ids import answer_id
from schemas.limits import bounded
from schemas.planning import (
    ReconFindings,
    ReconRecorded,
    TreeEntry,
)
from schemas.slices import SlicePlan
from workers.agents.command import CommandResult, argv_of
from workers.agents.config import RepoConfig
from workers.agents.runner import run_agent
from workers.agents.workspace import read_only_copy, remove, workdir
from workers.errors import ConfigError, WorkerError
from workers.gates.contract_check import repo_contract_problems
from workers.gates.declared import config_at, pending_criteria
from workers.kernel import Daemon, Kernel, World
from workers.planner.answer import answer, parse_answer, plan_problems, unrecordable
from workers.planner.decide import FOLDS, Options, decide, trunk_key
from workers.planner.effects import PlannerEffect, PlannerIntent, PlanSlice, Reconnoitre
from workers.repository import open_repo, resolve, trunk_commit

log = structlog.get_logger()

MAX_RECON_FACTS = 200
MAX_FACT_CHARS = 4000
"""A findings document is facts the plan may assume, not the repository: longer texts are
cut (marked), more facts dropped (said in the record's error)."""

TREE_LIMIT = 400
"""Paths of trunk's tree a brief lists (the rest are counted)."""
TRUNK_POLL_S = 1.0

_recon = msgspec.json.Decoder(ReconFindings)


class Planner(Daemon[PlannerEffect]):
    """Plan the next slice of a running charter, for the projects in ``configs``."""

    name = "planner"
    folds = FOLDS

    def __init__(
        self,
        configs: Mapping[str, RepoConfig],
        *,
        actor: Actor | None = None,
        poll_s: float = TRUNK_POLL_S,
    ) -> None:
        served = {p: c for p, c in configs.items() if c.plan.command}
        super().__init__(projects=tuple(served), actor=actor)
        self.configs = served
        self.poll_s = poll_s

    async def start(self, kernel: Kernel[PlannerEffect]) -> None:
        kernel.spawn(self._watch_trunk(kernel), "planner-trunk")

    async def _watch_trunk(self, kernel: Kernel[PlannerEffect]) -> None:
        """Observe each project's trunk head when it moves (the decision compares it with
        the commit the charter's criteria were last checked on)."""
        while True:
            for project, config in self.configs.items():
                head = await asyncio.to_thread(_trunk_head, config)
                if head is not None and kernel.outside.get(trunk_key(project)) != head:
                    kernel.observe(trunk_key(project), head, project=project)
            await asyncio.sleep(self.poll_s)

    def decide(self, world: World) -> Sequence[PlannerIntent]:
        config = self.configs.get(world.project)
        if config is None:
            return ()
        options = Options(
            max_tries=config.plan.max_tries,
            recon=bool(config.recon.command),
            max_run_tries=config.plan.max_run_tries,
            max_recon_runs=config.recon.max_runs,
        )
        return decide(world, options)

    async def perform(self, effect: PlannerEffect) -> Sequence[PlannerIntent]:
        config = self.configs[effect.project]
        match effect:
            case PlanSlice():
                return [await self.plan(config, effect)]
            case Reconnoitre():
                return [await self.recon(config, effect)]
            case _:
                assert_never(effect)

    async def plan(self, config: RepoConfig, args: PlanSlice) -> PlannerIntent:
        """Ask the planner for the slice of ``args.brief``; its answer as intents."""
        assert config.plan.command is not None
        brief = args.brief
        try:
            seen = await asyncio.to_thread(_trunk_view, config)
        except Exception as exc:  # an unreadable trunk is this try's failure, never a crash
            seen = None
            problems = [f"trunk cannot be read: {exc}"]
        if seen is not None:
            head, tree, more, pending = seen
            brief = msgspec.structs.replace(brief, tree=tree, tree_more=more, pending=pending)
            result = await self._run(
                config,
                head,
                config.plan.command,
                {"slice": brief.slice},
                msgspec.json.encode(brief),
                config.plan.timeout_s,
                {"LOOPBUS_SLICE": brief.slice},
            )
            failure = result.failure(config.plan.timeout_s)
            if failure is not None:
                problems = [f"the planner command failed: {failure}"]
            else:
                parsed = parse_answer(result.stdout)
                if isinstance(parsed, list):
                    problems = parsed
                else:
                    problems = plan_problems(
                        parsed[0],
                        brief.slice,
                        pending,
                        skeleton_allowed=brief.skeleton_allowed,
                        used_units=brief.used_units,
                        charter=_charter(brief.charter),
                    )
                    if not problems and parsed[0].contract is not None:
                        # What the merger would refuse at landing is refused here, so the
                        # planner is re-asked with the reasons instead of the slice being
                        # discarded at landing and planned again.
                        problems = await asyncio.to_thread(
                            _contract_problems, config, head, parsed[0]
                        )
                    if not problems:
                        log.info("plan.proposed", slice=brief.slice, attempt=brief.attempt)
                        return answer(
                            config.project,
                            msgspec.structs.replace(args, brief=brief),
                            parsed,
                            actor=self.actor,
                            now=utcnow(),
                        )
        log.info("plan.refused", slice=brief.slice, attempt=brief.attempt, problems=problems)
        return answer(config.project, args, problems, actor=self.actor, now=utcnow())

    async def recon(self, config: RepoConfig, args: Reconnoitre) -> PlannerIntent:
        """Run reconnaissance; its findings document recorded on the log (or why not)."""
        assert config.recon.command is not None
        brief = args.brief
        facts: list[Any] = []
        error = ""
        try:
            head = await asyncio.to_thread(_trunk_head_or_raise, config)
        except WorkerError as exc:
            error = f"trunk cannot be read: {exc}"
        else:
            result = await self._run(
                config,
                head,
                config.recon.command,
                {},
                msgspec.json.encode(brief),
                config.recon.timeout_s,
                {},
            )
            failure = result.failure(config.recon.timeout_s)
            if failure is not None:
                error = f"the recon command failed: {failure}"
            else:
                try:
                    facts = list(_recon.decode(result.stdout.strip() or b"{}").facts)
                except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                    error = (
                        "the recon command printed no findings document "
                        f'({{"facts": [...]}}): {exc}'
                    )
        answers = args.answers
        if len(facts) > MAX_RECON_FACTS:
            error = error or f"{len(facts)} facts: only the first {MAX_RECON_FACTS} are kept"
            facts = facts[:MAX_RECON_FACTS]
        facts = [msgspec.structs.replace(f, text=bounded(f.text, MAX_FACT_CHARS)) for f in facts]
        recorded = ReconRecorded(
            id=answer_id(args.basis, f"recon:{','.join(answers)}"),
            project=config.project,
            actor=self.actor,
            at=utcnow(),
            charter=args.charter,
            facts=facts,
            error=error[:2000],
            answers=answers,
        )
        why = unrecordable(recorded)
        if why is not None:  # recorded without its facts, never retried for ever
            recorded = msgspec.structs.replace(
                recorded, facts=[], error=f"the findings document cannot be recorded: {why}"
            )
        log.info("recon.recorded", facts=len(recorded.facts), error=recorded.error)
        return Publish(recorded)

    async def _run(
        self,
        config: RepoConfig,
        head: str,
        command: str,
        fields: dict[str, str],
        stdin: bytes,
        timeout_s: float,
        env: dict[str, str],
    ) -> CommandResult:
        """Run an agent command in a read-only copy of trunk at ``head``."""
        folder = await asyncio.to_thread(workdir, "loopbus-planner-", mode=0o755)
        copy, scratch = folder / "tree", folder / "work"
        try:
            copy.mkdir()
            scratch.mkdir()
            try:
                await asyncio.to_thread(read_only_copy, config.repo, head, copy)
            except Exception as exc:  # whatever stopped the checkout is the run's failure
                return CommandResult(None, b"", b"", 0.0, start_error=f"no trunk copy: {exc}")
            return await run_agent(
                config,
                argv_of(command, fields),
                stdin=stdin,
                worktree=scratch,
                read_only=(copy,),
                cwd=copy,
                timeout_s=timeout_s,
                env={"LOOPBUS_REPO": str(copy), **env},
            )
        finally:
            await asyncio.to_thread(remove, folder)


def _charter(brief_charter: dict[str, Any]) -> Charter | None:
    """The charter the brief carries (its pinned test files are checked against the
    plan's contract), or ``None`` when there is none."""
    if not brief_charter:
        return None
    return msgspec.convert(brief_charter, Charter)


def _trunk_head(config: RepoConfig) -> str | None:
    try:
        return _trunk_head_or_raise(config)
    except WorkerError:
        return None


def _trunk_head_or_raise(config: RepoConfig) -> str:
    with open_repo(Path(config.repo)) as opened:
        return str(trunk_commit(opened, config.review.trunk).id.decode())


def _trunk_view(config: RepoConfig) -> tuple[str, list[TreeEntry], int, list[str]]:
    """Trunk's head, its tree (bounded), and the pending criteria it declares."""
    head = _trunk_head_or_raise(config)
    info = resolve(Path(config.repo), head)
    entries: list[TreeEntry] = []
    total = 0
    with open_repo(Path(config.repo)) as opened:
        store = opened.object_store
        stack: list[tuple[str, Any]] = [("", info.tree.encode())]
        while stack:
            prefix, tree_id = stack.pop()
            tree = store[tree_id]
            assert isinstance(tree, Tree)
            for item in sorted(tree.items(), key=lambda i: i.path, reverse=True):
                path = prefix + item.path.decode("utf-8", "replace")
                if item.mode & 0o170000 == 0o040000:
                    stack.append((path + "/", item.sha))
                    continue
                total += 1
                if len(entries) < TREE_LIMIT:
                    entries.append(TreeEntry(path=path, size=_size(store, item.sha)))
    entries.sort(key=lambda e: e.path)
    pending = pending_criteria(config_at(info)) if info.config_text is not None else []
    return head, entries, total - len(entries), pending


def _contract_problems(config: RepoConfig, head: str, plan: SlicePlan) -> list[str]:
    """What the merger would refuse of ``plan``'s contract on trunk at ``head``."""
    text = resolve(Path(config.repo), head).config_text
    if text is None:
        return []
    try:
        return repo_contract_problems(Path(config.repo), plan, text, head)
    except ConfigError as exc:
        return [" ".join(str(exc).split())]


def _size(store: Any, sha: bytes) -> int:
    try:
        return int(store.get_raw(sha)[1].__len__())
    except KeyError:
        return 0
