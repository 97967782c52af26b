"""``loopbus gate run``: run a commit's gates once, through the same code path as the daemon.

Results go on the running bus, so the cache is shared with the gate-runner daemon (and
with every other ``loopbus gate run``): a check already established for the same tree and
configuration is answered from the log without running anything.

Exit status: 0 when every check passed, 1 when any is red (fail or error), 2 on a usage
mistake (not a repository, no such commit or check, an invalid ``loopbus.toml``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import msgspec

from bus import ensure_log
from bus.creds import Credential, default_file, load_credential
from loopbus import served_url
from loopbus.errors import UsageError
from loopbus.progress import Progress
from loopbus.settings import (
    CREDS_ENV,
    DEFAULT_NATS_URL,
    NATS_URL_ENV,
    connection,
    credential,
    creds_data_dir,
)
from loopbus.terminal_text import say
from schemas import format_target
from workers.errors import ConfigError, WorkerError
from workers.gates.config import ProjectConfig, parse_config
from workers.gates.runner import CheckRun, GateRunner, SuiteResult
from workers.gates.signing import key_path, load_or_create
from workers.kernel.oneshot import carry_out
from workers.repository import CONFIG_FILE, resolve
from workers.runtime import configure_logging


def run(args: argparse.Namespace) -> int:
    """``loopbus gate run``: 0 all green, 1 any red, 2 usage."""
    if args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: give 1 or more")
    # stdout is the command's output (a table, or JSON lines); logs go to stderr, quietly.
    configure_logging(os.environ.get("LOOPBUS_LOG_LEVEL", "warning"), json=False)
    config = _preflight(args.repo, args.commit, args.check)
    try:
        key_path(args.data_dir, args.runner_name)  # a bad name or home: before the bus
    except WorkerError as exc:
        raise UsageError(str(exc)) from exc
    creds = system_credential(args)
    suite = asyncio.run(_run(args, config, creds))
    if suite.config_error is not None:
        raise UsageError(str(suite.config_error))
    if suite.error:
        raise UsageError(suite.error)
    if args.json:
        for check in suite.checks:
            print(json.dumps(check_json(check), sort_keys=True))
    else:
        _print_human(suite)
    return 0 if suite.green else 1


def _preflight(repo: Path, commit: str | None, checks: list[str]) -> ProjectConfig:
    """Usage mistakes are found before touching the bus."""
    try:
        info = resolve(repo, commit)
    except WorkerError as exc:
        raise UsageError(str(exc)) from exc
    if info.config_text is None:
        raise UsageError(
            f"commit {info.commit[:12]} has no {CONFIG_FILE} at its root; see docs/gates.md"
        )
    try:
        config = parse_config(info.config_text)
        for check in checks:
            config.check(check)
    except ConfigError as exc:
        raise UsageError(str(exc)) from exc
    return config


def system_credential(args: argparse.Namespace) -> Credential | None:
    """The credential a run publishes with: ``--creds``/``$LOOPBUS_CREDS``, else the system
    credential of the data directory (``--data-dir``, else the one other commands find), as
    the gate-runner daemon ``loopbus up`` starts is handed it; ``None`` for a server run
    without authorization. Gate results are facts, which only the system credential may
    publish: any other is refused here, before a check runs, naming the file that would do."""
    named = args.creds or os.environ.get(CREDS_ENV)
    if not named and args.data_dir is not None:
        # That directory's, or none: another data directory's would be another bus's.
        path = default_file(args.data_dir, "system")
        return load_credential(path) if path.exists() else None
    found = credential(args)
    if found is None or found.role == "system":
        return found
    where = f"--creds {named}" if args.creds else f"${CREDS_ENV} {named}"
    system = default_file(args.data_dir or creds_data_dir(), "system")
    raise UsageError(
        f"{where} is the {found.role} credential, and gate results are facts only the system "
        f"credential may publish: pass --creds {system} (the system credential of the loopbus "
        "up running the bus), or leave gating to its gate-runner daemon"
    )


def data_dir_url(args: argparse.Namespace) -> str | None:
    """With ``--data-dir`` and no URL named: the server of the ``up`` running on that
    directory, whose credential the run takes, else the default address — never the
    server another data directory found from the current folder records. ``None``: the
    URL is found as every command finds it."""
    if args.nats_url or os.environ.get(NATS_URL_ENV) or args.data_dir is None:
        return None
    return served_url.read(args.data_dir) or DEFAULT_NATS_URL


async def _run(
    args: argparse.Namespace, config: ProjectConfig, creds: Credential | None
) -> SuiteResult:
    bus = await connection(args, data_dir_url(args), creds=creds).open()
    try:
        await ensure_log(bus.js)
        # The key is made only once the bus answered: a run that cannot reach it leaves
        # nothing behind.
        try:
            signer = await asyncio.to_thread(load_or_create, args.data_dir, args.runner_name)
        except WorkerError as exc:
            raise UsageError(str(exc)) from exc
        progress = Progress("gate run", total=len(args.check or config.checks), unit="checks")
        runner = ReportingRunner(
            bus,
            args.repo,
            signer,
            principal="loopbus-gate-run",
            jobs=args.jobs,
            project=config.project,
            progress=progress,
        )
        ticking = asyncio.create_task(progress.tick())
        try:
            with progress.shown():
                suite = await runner.evaluate(
                    args.commit, checks=args.check, reason="manual", force=args.force
                )
            # A command runs outside any daemon: the kernel's one-shot carries out what a
            # daemon's kernel would (the results, then the suite naming them).
            return suite.stored(await carry_out(bus, suite.intents))
        finally:
            ticking.cancel()
    finally:
        await bus.close()


class ReportingRunner(GateRunner):
    """The daemon's runner, telling a terminal each check as it finishes."""

    def __init__(self, *args: Any, progress: Progress, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.progress = progress

    async def run_check(self, *args: Any, **kwargs: Any) -> CheckRun:
        run = await super().run_check(*args, **kwargs)
        source = "cached" if run.cached else "ran"
        self.progress.advance(f"{run.check} {run.outcome} ({source})")
        return run


def check_json(check: CheckRun) -> dict[str, Any]:
    """One check as the ``--json`` line: outcome, cache, tree, timing and findings."""
    result = check.result
    return {
        "check": check.check,
        "outcome": check.outcome,
        "cached": check.cached,
        "tree": result.tree,
        "commit": result.commit,
        "inputs": result.inputs,
        "config_sha": result.config_sha,
        "duration_s": round(result.duration_s, 6),
        "cost": msgspec.to_builtins(result.cost) if result.cost else None,
        "summary": result.summary,
        "error": result.error,
        "result": result.id,
        "seq": check.seq,
        "runner": result.runner,
        "findings_total": result.findings_total,
        "findings": [
            {
                "id": f.id,
                "target": format_target(f.target),
                "severity": f.severity,
                "criterion": f.criterion,
                "message": f.message,
                "evidence": f.evidence,
            }
            for f in check.findings
        ],
    }


_MARK = {"pass": "pass ", "fail": "FAIL ", "error": "ERROR"}


def _print_human(suite: SuiteResult) -> None:
    out = sys.stdout
    commit = (suite.commit or "?")[:12]
    tree = (suite.tree or "?")[:12]
    say(f"gates for {suite.project} at {commit} (tree {tree})", file=out)
    width = max((len(c.check) for c in suite.checks), default=5)
    for check in suite.checks:
        source = "cached" if check.cached else "ran"
        line = f"  {_MARK[check.outcome]}  {check.check:<{width}}  {check.duration_s:7.2f}s  "
        line += f"{source:<6}  {check.result.error or check.result.summary}"
        say(line, file=out)
        for finding in check.findings:
            target = format_target(finding.target)
            say(f"      {finding.severity:<8} {target}  {finding.message}", file=out)
    red = [c.check for c in suite.checks if c.outcome != "pass"]
    verdict = "green" if not red else f"red ({', '.join(red)})"
    say(f"suite: {suite.outcome}, {verdict}", file=out)
