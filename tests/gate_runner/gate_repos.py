"""Real git repositories made with dulwich, and small sample projects, for gate-runner tests
and the gate-cache benchmark (a plain module: the conftest puts this folder on sys.path)."""

from __future__ import annotations

import time
from pathlib import Path

from dulwich.index import commit_tree
from dulwich.objects import Blob, Commit
from dulwich.repo import Repo


class GitRepo:
    """A repository whose commits are whole snapshots: ``commit({path: text})``."""

    def __init__(self, path: Path):
        self.path = path
        self.repo = Repo.init(str(path), mkdir=True)
        self.head: str | None = None
        self.files: dict[str, str] = {}

    def commit(
        self,
        files: dict[str, str],
        *,
        parent: str | None = None,
        message: str = "change",
        executable: tuple[str, ...] = (),
    ) -> str:
        """Commit exactly ``files`` (a full snapshot) on top of ``parent`` (default: HEAD)."""
        store = self.repo.object_store
        entries = []
        for name, text in sorted(files.items()):
            blob = Blob.from_string(text.encode())
            store.add_object(blob)
            mode = 0o100755 if name in executable else 0o100644
            entries.append((name.encode(), blob.id, mode))
        tree = commit_tree(store, entries)
        commit = Commit()
        commit.tree = tree
        base = parent if parent is not None else self.head
        commit.parents = [base.encode()] if base else []
        commit.author = commit.committer = b"Test <test@example.com>"
        commit.author_time = commit.commit_time = int(time.time())
        commit.author_timezone = commit.commit_timezone = 0
        commit.message = message.encode()
        store.add_object(commit)
        self.repo.refs[b"HEAD"] = commit.id
        self.head = commit.id.decode()
        self.files = dict(files)
        return self.head

    def change(self, **changes: str | None) -> str:
        """Commit HEAD's files with ``changes`` (``name=None`` deletes; ``__`` means ``/``)."""
        files = dict(self.files)
        for key, text in changes.items():
            name = _path(key)
            if text is None:
                files.pop(name, None)
            else:
                files[name] = text
        return self.commit(files)

    def tree_of(self, commit: str) -> str:
        obj = self.repo[commit.encode()]
        assert isinstance(obj, Commit)
        return obj.tree.decode()


def _path(key: str) -> str:
    """A keyword spelling of a path (``src__a_DOT_py``) or a literal one (``src/a.py``)."""
    if "/" in key or "." in key:
        return key
    return key.replace("__", "/").replace("_DOT_", ".")


def config(project: str, checks: str, extra_project: str = "") -> str:
    """A loopbus.toml for ``project`` with the given ``[[check]]`` tables."""
    return f'[project]\nid = "{project}"\n{extra_project}\n{checks}'


PYTEST_CHECK = """
[[check]]
id = "tests"
command = "python -m pytest -q"
parser = "pytest"
timeout = 120
pending = [{pending}]
"""

LINT_CHECK = """
[[check]]
id = "lint"
command = "ruff check --output-format json ."
parser = "ruff"
timeout = 60
"""

CALC_STUB = "def total(xs):\n    return 0\n"
CALC_DONE = "def total(xs):\n    return sum(xs)\n"
TEST_CALC = "from calc import total\n\n\ndef test_empty():\n    assert total([]) == 0\n"
TEST_CRITERIA = (
    "from calc import total\n\n\ndef test_total_is_sum():\n    assert total([1, 2]) == 3\n"
)
PENDING_ID = "tests/test_criteria.py::test_total_is_sum"


def pytest_project(
    project: str, pending: tuple[str, ...] = (PENDING_ID,), **files: str
) -> dict[str, str]:
    """A small Python project with one ordinary test and one criterion test."""
    listed = ", ".join(f'"{p}"' for p in pending)
    base = {
        "loopbus.toml": config(project, PYTEST_CHECK.format(pending=listed)),
        "calc.py": CALC_STUB,
        "tests/test_calc.py": TEST_CALC,
        "tests/test_criteria.py": TEST_CRITERIA,
    }
    base.update({_path(k): v for k, v in files.items()})
    return base
