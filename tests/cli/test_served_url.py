"""The address a running ``loopbus up`` records in its data directory (loopbus.served_url):
believed only while an ``up`` holds that directory's lock, and only for a loopback address,
so a ``.loopbus`` folder checked out of a repository or left by a crash sends no command
anywhere."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from loopbus import served_url

URL = "nats://127.0.0.1:40001"


@contextmanager
def up_holding(data_dir: Path) -> Iterator[None]:
    """The lock a running ``up`` holds, held by another process as ``up`` would hold it."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys; f = open(sys.argv[1], 'a+'); "
            "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
            str(data_dir / served_url.LOCK_FILE),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)


def test_the_address_is_read_back_while_an_up_holds_the_directory(tmp_path: Path) -> None:
    served_url.write(tmp_path, URL)
    with up_holding(tmp_path):
        assert served_url.read(tmp_path) == URL
        assert served_url.read(tmp_path) == URL  # a probe leaves the lock as it found it
    served_url.remove(tmp_path)
    assert served_url.read(tmp_path) is None
    served_url.remove(tmp_path)  # twice is fine: up's stop does not care


def test_an_address_no_running_up_stands_behind_is_not_used(tmp_path: Path) -> None:
    # What a crashed up leaves, or a .loopbus folder committed to a repository: the file
    # and even the lock file, but nobody holding the lock.
    served_url.write(tmp_path, URL)
    (tmp_path / served_url.LOCK_FILE).write_text("1\n")
    assert served_url.read(tmp_path) is None
    with up_holding(tmp_path):
        pass
    assert served_url.read(tmp_path) is None  # an up that has stopped


def test_only_a_loopback_address_is_believed(tmp_path: Path) -> None:
    with up_holding(tmp_path):
        for planted in (
            "nats://203.0.113.5:4222",
            "tls://127.0.0.1:4222",
            "nats://127.0.0.1:4222/../x",
            "nats://127.0.0.1:99999",
            "nats://127.0.0.1:",
            "",
            "\x00",
        ):
            served_url.write(tmp_path, planted)
            assert served_url.read(tmp_path) is None, planted
        (tmp_path / served_url.URL_FILE).write_bytes(b"nats://127.0.0.1:4\xff\n")
        assert served_url.read(tmp_path) is None


def test_a_probe_while_up_starts_does_not_make_it_refuse(tmp_path: Path) -> None:
    """up takes its lock with a few tries, so a command's momentary shared lock (a probe
    that happens to hold it as up starts) is no "in use by another up"."""
    from loopbus.commands.up import hold_data_dir

    lock = tmp_path / served_url.LOCK_FILE
    lock.write_text("")
    probe = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time; f = open(sys.argv[1]); "
            "fcntl.flock(f, fcntl.LOCK_SH); print('held', flush=True); time.sleep(0.1)",
            str(lock),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert probe.stdout is not None and probe.stdout.readline() == "held\n"
    with hold_data_dir(tmp_path):  # the probe still holds it: up waits it out
        assert served_url.held(tmp_path) is True
    probe.wait(timeout=30)


def test_an_address_a_crashed_up_left_is_gone_once_another_up_holds_the_directory(
    tmp_path: Path,
) -> None:
    """An up on an external server never writes the file, so one a crashed up left would
    stay believed for as long as this up holds the directory: taking the lock forgets it."""
    from loopbus.commands.up import hold_data_dir

    served_url.write(tmp_path, URL)
    with hold_data_dir(tmp_path):
        assert served_url.read(tmp_path) is None


def test_gate_run_with_a_data_dir_never_takes_the_address_found_from_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``gate run --data-dir X`` sends X's credential only to X's up, or to the default
    address: never to the up of the .loopbus found from the current folder."""
    import argparse

    from loopbus.commands.gate import data_dir_url
    from loopbus.settings import DEFAULT_NATS_URL

    here = tmp_path / "here"
    (here / ".loopbus" / "creds").mkdir(parents=True)
    served_url.write(here / ".loopbus", URL)
    monkeypatch.chdir(here)
    monkeypatch.delenv("LOOPBUS_NATS_URL", raising=False)
    monkeypatch.delenv("LOOPBUS_DATA_DIR", raising=False)
    other = tmp_path / "other"
    other.mkdir()
    args = argparse.Namespace(nats_url=None, data_dir=other)
    with up_holding(here / ".loopbus"):
        assert data_dir_url(args) == DEFAULT_NATS_URL
        with up_holding(other):
            served_url.write(other, "nats://127.0.0.1:40009")
            assert data_dir_url(args) == "nats://127.0.0.1:40009"
