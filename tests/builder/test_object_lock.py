"""Two rounds of one project writing the same object at once (a real repository): the one
that finds the other's lock waits for the object instead of failing the round."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from dulwich.file import FileLocked
from dulwich.objects import Blob
from dulwich.repo import Repo

from workers.builder import worktree


def test_a_locked_object_is_awaited_not_failed(tmp_path: Path) -> None:
    """Three rounds of the 100-project benchmark failed on dulwich's FileLocked here."""
    with Repo.init(str(tmp_path / "repo"), mkdir=True) as repo:
        store = repo.object_store
        blob = Blob.from_string(b"VALUE = 1\n")
        path = Path(store._get_shafile_path(blob.id))
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = path.with_name(path.name + ".lock")
        lock.write_bytes(b"")  # another round is writing this very object

        def other_writer() -> None:
            time.sleep(0.3)
            lock.unlink()
            store.add_object(blob)

        writer = threading.Thread(target=other_writer)
        writer.start()
        worktree.add_object(store, blob)
        writer.join()
        assert blob.id in store


def test_a_stale_lock_still_fails_after_the_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lock nobody removes (a killed writer) is the error it always was, after the wait."""
    monkeypatch.setattr(worktree, "LOCKED_WAIT_S", 0.2)
    with Repo.init(str(tmp_path / "repo"), mkdir=True) as repo:
        store = repo.object_store
        blob = Blob.from_string(b"stale\n")
        path = Path(store._get_shafile_path(blob.id))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.with_name(path.name + ".lock").write_bytes(b"")
        with pytest.raises(FileLocked):
            worktree.add_object(store, blob)
