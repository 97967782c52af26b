"""The address a running ``loopbus up`` records in its data directory (loopbus.served_url):
read back only while the process that wrote it runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from loopbus import served_url


def test_the_address_is_read_back_while_its_writer_runs(tmp_path: Path) -> None:
    served_url.write(tmp_path, "nats://127.0.0.1:40001")
    assert served_url.read(tmp_path) == "nats://127.0.0.1:40001"
    served_url.remove(tmp_path)
    assert served_url.read(tmp_path) is None
    served_url.remove(tmp_path)  # twice is fine: up's stop does not care


def test_an_address_left_by_a_process_that_died_is_not_used(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    (tmp_path / served_url.URL_FILE).write_text(f"nats://127.0.0.1:40002\n{gone.stdout.strip()}\n")
    assert served_url.read(tmp_path) is None


def test_a_garbled_or_missing_file_is_no_address(tmp_path: Path) -> None:
    assert served_url.read(tmp_path) is None
    for text in (
        "",
        "nats://127.0.0.1:1\n",
        "nats://x:1\nnot-a-pid\n",
        "a b c\n",
        "u\n0\n",
        "u\n-1\n",
    ):
        (tmp_path / served_url.URL_FILE).write_text(text)
        assert served_url.read(tmp_path) is None, text
    (tmp_path / served_url.URL_FILE).write_text(f"nats://127.0.0.1:40003\n{os.getpid()}\n")
    assert served_url.read(tmp_path) == "nats://127.0.0.1:40003"
