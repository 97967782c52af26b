"""When ``loopbus demo`` runs its agents without a sandbox, and when it refuses instead.

It falls back only where no sandbox can be made, or where a root daemon's uid-only fence
(no working bubblewrap) refused loopbus's interpreter because a folder on its way is closed
to other users; any other failure of its probe (a timeout included) is a one-line error
naming the problem and the fix that matches it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from loopbus.commands.demo import _closed_interpreter, _fallback, _no_sandbox
from loopbus.errors import LoopbusError
from workers.agents.environment import closed_to_others
from workers.agents.launch import UID_DENIED
from workers.agents.local import LocalExecutor
from workers.agents.runner import choose
from workers.agents.sandbox_config import AgentsConfig

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the local executor's uid fence needs root")

DENIED = (
    "the local executor cannot run loopbus's interpreter: /root/python: "
    f"{UID_DENIED} 60001 (/root is closed to other users): install bubblewrap, or put it "
    "where any user can read it"
)
NOT_THERE = (
    "the local executor cannot run loopbus's interpreter: ModuleNotFoundError: "
    "No module named 'loopbus'"
)
TIMED_OUT = "the local executor cannot run loopbus's interpreter: it did not finish within 60s"
REFUSED = (
    f"the local executor cannot run loopbus's interpreter: {sys.executable}: Permission denied"
)
INSTALL = (
    "install loopbus into that interpreter (pip install -e . in loopbus's checkout, or pip "
    "install loopbus)"
)


async def test_no_sandbox_at_all_falls_back_saying_why() -> None:
    """``choose`` found no executor (a user without bubblewrap or an engine): its reason."""
    why = "local executor: bubblewrap (bwrap) is not installed"
    assert await _fallback(None, why) == why


@as_root
@pytest.mark.parametrize(
    "executor",
    [LocalExecutor(namespaces=False), LocalExecutor(bwrap="/bin/false")],
    ids=["uid-only", "bwrap-failing"],
)
async def test_a_uid_only_fence_falls_back_only_for_a_closed_interpreter(
    executor: LocalExecutor,
) -> None:
    """A root daemon without a working bubblewrap (none wanted, or one that fails here as in
    a container) fences by uid alone: behind a closed folder loopbus's interpreter cannot
    start, and the demo falls back naming the folder; where any user can reach it, the
    probe passes and the demo sandboxes its agents."""
    assert await executor.uid_only()
    closed = closed_to_others(sys.executable)
    said = await _fallback(executor, "")
    if closed is None:
        assert said is None
    else:
        assert said is not None and UID_DENIED in said
        assert f"({closed} is closed to other users)" in said


async def test_a_sandbox_that_cannot_run_the_interpreter_is_an_error_not_a_fallback() -> None:
    """Bubblewrap required but failing here is not the uid-only case: running bare would
    hide the fault, so the demo stops with one line naming the problem and the fix."""
    executor = LocalExecutor(namespaces=True, bwrap="/bin/false")
    assert not await executor.uid_only()
    with pytest.raises(LoopbusError) as raised:
        await _fallback(executor, "")
    said = str(raised.value)
    assert "\n" not in said
    assert "loopbus demo cannot run its own agents in the agent sandbox" in said
    assert "bubblewrap at /bin/false cannot make a sandbox here" in said
    assert "install loopbus" not in said  # loopbus is not what is missing
    assert "Make the agent sandbox able to run" in said


@pytest.mark.parametrize(
    ("uid_only", "closed"),
    [(True, None), (True, Path("/root")), (False, Path("/root"))],
    ids=["uid-only", "uid-only-closed", "wrapped"],  # wrapped: bubblewrap shows /root
)
def test_loopbus_missing_from_the_interpreter_is_an_error_saying_install_it(
    uid_only: bool, closed: Path | None
) -> None:
    """loopbus importable only through PYTHONPATH, which no agent inherits: running bare
    would fail the same way, so the error says to install loopbus into that interpreter."""
    with pytest.raises(LoopbusError) as raised:
        _closed_interpreter(NOT_THERE, uid_only=uid_only, closed=closed)
    said = str(raised.value)
    assert NOT_THERE in said and INSTALL in said
    assert "\n" not in said


@pytest.mark.parametrize(
    ("uid_only", "closed"),
    [(True, None), (True, Path("/root")), (False, Path("/root"))],
    ids=["uid-only", "uid-only-closed", "wrapped"],
)
def test_a_probe_that_did_not_finish_is_an_error_not_a_fallback(
    uid_only: bool, closed: Path | None
) -> None:
    """A run that does not finish is not a reason to run bare, even for a uid-only fence
    facing a closed interpreter (nothing says the folder is why); and installing loopbus
    is not its fix."""
    with pytest.raises(LoopbusError) as raised:
        _closed_interpreter(TIMED_OUT, uid_only=uid_only, closed=closed)
    said = str(raised.value)
    assert TIMED_OUT in said and "not a reason to run bare" in said
    assert "install loopbus" not in said
    assert "\n" not in said


def test_a_uid_only_fence_refused_for_a_closed_folder_falls_back() -> None:
    """The launcher's line naming the closed folder is its own reason; the system's
    'Permission denied' for the interpreter is one where a folder on its way is closed."""
    assert _closed_interpreter(DENIED, uid_only=True, closed=None) == DENIED
    said = _closed_interpreter(REFUSED, uid_only=True, closed=Path("/root"))
    assert said.startswith(REFUSED)
    assert f"{sys.executable} lies behind /root, closed to other users" in said


@pytest.mark.parametrize(
    ("problem", "uid_only", "closed"),
    [(REFUSED, True, None), (REFUSED, False, Path("/root")), (DENIED, False, None)],
    ids=["no-closed-folder", "wrapped", "wrapped-denied"],
)
def test_a_refusal_that_is_not_the_uid_only_fence_s_is_an_error(
    problem: str, uid_only: bool, closed: Path | None
) -> None:
    with pytest.raises(LoopbusError) as raised:
        _closed_interpreter(problem, uid_only=uid_only, closed=closed)
    assert problem in str(raised.value)
    assert "install loopbus" not in str(raised.value)


async def test_the_demo_s_check_on_this_machine() -> None:
    """What the demo itself decides here, with the executor the default ``[agents]`` picks."""
    executor, why = await choose(AgentsConfig())
    said = await _no_sandbox()
    if executor is None:
        assert said == why
    elif isinstance(executor, LocalExecutor) and await executor.uid_only():
        assert (said is None) == (closed_to_others(sys.executable) is None), said
    else:
        assert said is None
