"""A check run inside the agent sandbox's local executor: the code a check runs is the
agents' code (tests, a ``conftest.py``, the modules they import), so it gets what an agent
command gets and nothing more of the host.

:class:`FencedExecutor` is the gate runner's default executor wherever the local executor
can make a sandbox (a root daemon, or bubblewrap): it runs ``wrap.py`` (which starts the
check and writes its exit status and cost) through
:class:`~workers.agents.local.LocalExecutor`, with the checkout as the worktree, the
run's report folder writable, loopbus's and the project's interpreters read-only, and no
network. The data directory, the runner's signing key, the credentials, other checkouts
and the shared repository do not exist for it. The checkout and the report folder are at
their host paths inside, so the parsers read the run exactly as they read an unfenced one.

Where no sandbox can be made, the gate runner falls back to
:class:`~workers.gates.executors.SubprocessExecutor` and logs why, as it always ran
checks before (docs/security.md says what that leaves open).
"""

from __future__ import annotations

import stat
import sys
import time
from pathlib import Path
from typing import Literal

from workers.agents.environment import interpreter_paths, loopbus_paths
from workers.agents.local import LocalExecutor
from workers.agents.sandbox import Limits, SandboxSpec
from workers.gates.executors import (
    PLUGIN_DIR,
    WRAPPER,
    PathRole,
    RunOutput,
    RunSpec,
    _finished,
    _read_status,
)

CHECK_LIMITS = Limits(memory_mb=8192, cpu_time_s=24 * 3600, processes=2048, open_files=4096)
"""Generous: a check's own timeout bounds it; these stop only a runaway (a fork bomb)."""


class FencedExecutor:
    """Runs a check's :class:`RunSpec` through the local agent sandbox."""

    kind: Literal["subprocess", "container"] = "subprocess"

    def __init__(self, sandbox: LocalExecutor | None = None):
        # Bubblewrap only: without it the uid alone could not keep other runs out of the
        # report folder, so such a machine keeps the plain subprocess.
        self.sandbox = sandbox or LocalExecutor(namespaces=True)

    async def available(self) -> str | None:
        return await self.sandbox.available()

    def view(self, role: PathRole, spec_dirs: tuple[Path, Path]) -> str:
        workdir, outdir = spec_dirs
        return str({"work": workdir, "out": outdir, "plugin": PLUGIN_DIR}[role])

    async def run(self, spec: RunSpec) -> RunOutput:
        status_file = spec.outdir / "status.json"
        # The run's uid writes its reports here; the folder sits in the runner's own 0700
        # scratch folder, which no other uid can enter (and, with bubblewrap, which does
        # not exist for any other run).
        for folder in (spec.outdir, *spec.outdir.iterdir()):
            if folder.is_dir():
                folder.chmod(0o777)
        read_only = (*loopbus_paths(), *interpreter_paths(spec.interpreter_dir))
        started = time.monotonic()
        result = await self.sandbox.run(
            SandboxSpec(
                argv=[sys.executable, "-I", "-S", str(WRAPPER), str(status_file), *spec.argv],
                stdin=b"",
                worktree=spec.workdir,
                env=dict(spec.env),
                timeout_s=spec.timeout_s,
                read_only=tuple(dict.fromkeys(read_only)),
                writable=(spec.outdir,),
                limits=CHECK_LIMITS,
            )
        )
        duration = time.monotonic() - started
        _only_plain_files(spec.outdir)
        if result.start_error is not None:
            return RunOutput("subprocess", duration, start_error=f"sandbox: {result.start_error}")
        if result.timed_out:
            return RunOutput(
                "subprocess",
                duration,
                timed_out=True,
                stdout=result.stdout,
                stderr=result.stderr,
                notes=[f"timed out after {spec.timeout_s:g}s; the sandboxed run was killed"],
            )
        return _finished(
            _read_status(status_file), result.exit_code, duration, result.stdout, result.stderr
        )


def _only_plain_files(outdir: Path) -> None:
    """The run's uid could write the report folder: a link (to ``/dev/zero``, to another
    file) or a FIFO there would make the parsers read forever or read what the run chose.
    Before anything reads it, every entry that is not a plain file or folder goes."""
    for entry in outdir.iterdir():
        info = entry.lstat()
        if stat.S_ISLNK(info.st_mode) or not (
            stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)
        ):
            entry.unlink()
