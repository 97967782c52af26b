"""`loopbus worker NAME` and `python -m workers.NAME` refuse a bad option in one line, as
every loopbus command does (docs/cli.md): they printed argparse's usage, six or seven
lines, above an error prefixed `python -m workers.…`."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import loopbus


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        pytest.param(
            ("gate-runner", "--jobs", "0"),
            "argument --jobs: --jobs 0: give 1 or more, or 'auto'",
            id="jobs",
        ),
        pytest.param(
            ("units", "--project-lease", "abc"),
            "argument --project-lease: 'abc': give seconds, such as 30",
            id="project-lease",
        ),
        pytest.param(("gate-runner", "--bogus"), "unrecognized arguments: --bogus", id="bogus"),
    ],
)
def test_a_daemons_bad_option_is_one_line(args: tuple[str, ...], needle: str) -> None:
    """One line naming the option, the value and the fix, exit 2, named as it was run."""
    done = loopbus("worker", *args, env={"LOOPBUS_NATS_URL": "nats://127.0.0.1:1"})
    prog = f"loopbus worker {args[0]}"
    assert done.code == 2, done.err
    assert done.err == f"{prog}: error: {needle} (see `{prog} --help`)\n"


def test_a_daemon_run_by_module_names_its_module() -> None:
    """Started as `python -m workers.units`, the line names that command instead."""
    done = subprocess.run(
        [sys.executable, "-m", "workers.units", "--project-lease", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    prog = "python -m workers.units"
    assert done.returncode == 2
    assert done.stderr == (
        f"{prog}: error: argument --project-lease: 1: give seconds from 3 to 86400, such as 30 "
        f"(see `{prog} --help`)\n"
    )


def test_an_unknown_log_level_is_one_line() -> None:
    """`--log-level bogus` ended in a KeyError traceback once the arguments were parsed."""
    done = loopbus("worker", "units", "--log-level", "bogus")
    assert done.code == 2 and done.err.count("\n") == 1, done.err
    assert "argument --log-level: 'bogus': give one of debug, info, warning" in done.err


@pytest.mark.parametrize(
    ("rest", "found"),
    [
        (["--repo", ".", "--data-dir", "d1"], "d1"),
        (["--data-dir", "d1", "--data-dir", "d2"], "d2"),  # the last wins, as argparse says
        (["--data", "d3"], "d3"),  # an abbreviation the daemon's argparse takes
        (["--data-dir=d4"], "d4"),
        (["--data-dir="], None),
        (["--data-dir"], None),  # the daemon refuses it in one line
        (["-h"], None),
        (["--repo", "."], None),
    ],
)
def test_the_daemons_own_data_dir_is_read_as_its_argparse_reads_it(
    rest: list[str], found: str | None
) -> None:
    from pathlib import Path

    from loopbus.commands.worker import _data_dir_option

    assert _data_dir_option(rest) == (Path(found) if found else None)
