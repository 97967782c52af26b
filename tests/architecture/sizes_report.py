"""Print the figures the daemon-kernel issue is measured by, for any checkout.

    python tests/architecture/sizes_report.py [ROOT]

Daemon module sizes, the longest functions in workers/, daemon-to-daemon imports (a
daemon package importing another daemon's package; the kernel, gates, repository, errors,
agents, runtime and cli packages are shared libraries), and ``import nats`` outside bus/.
Run it on an old commit with ``git worktree add /tmp/old <commit>`` to compare. Not a test:
tests/architecture/test_sizes.py and test_layers.py assert the limits.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from pathlib import Path

LIBRARIES = {"kernel"}  # a package with a daemon.py of its own that every daemon builds on


def daemon_sizes(workers: Path) -> dict[str, int]:
    return {
        p.parent.name: len(p.read_text().splitlines()) for p in sorted(workers.glob("*/daemon.py"))
    }


def longest_functions(workers: Path, count: int = 5) -> list[tuple[int, str]]:
    found = []
    for path in workers.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                found.append((length, f"{path.relative_to(workers.parent)}::{node.name}"))
    return sorted(found, reverse=True)[:count]


def daemon_imports(workers: Path) -> Counter[tuple[str, str]]:
    daemons = {p.parent.name for p in workers.glob("*/daemon.py")} - LIBRARIES
    pairs: Counter[tuple[str, str]] = Counter()
    pattern = re.compile(r"^\s*(?:from|import)\s+(?:loopbus\.)?workers\.(\w+)", re.M)
    for path in workers.rglob("*.py"):
        parts = path.relative_to(workers).parts
        mine = parts[0] if len(parts) > 1 else ""
        for match in pattern.finditer(path.read_text()):
            theirs = match.group(1)
            if mine in daemons and theirs in daemons and theirs != mine:
                pairs[(mine, theirs)] += 1
    return pairs


def nats_outside_bus(root: Path) -> list[str]:
    pattern = re.compile(r"^\s*(import nats|from nats)", re.M)
    return [
        str(p.relative_to(root))
        for folder in ("schemas", "projections", "workers", "loopbus")
        for p in sorted((root / folder).rglob("*.py"))
        if pattern.search(p.read_text())
    ]


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    workers = root / "workers"
    print("daemon modules (lines):")
    for name, lines in sorted(daemon_sizes(workers).items(), key=lambda kv: -kv[1]):
        print(f"  workers/{name}/daemon.py: {lines}")
    print("longest functions in workers/:")
    for length, name in longest_functions(workers):
        print(f"  {name}: {length}")
    pairs = daemon_imports(workers)
    print(f"daemon-to-daemon import statements: {sum(pairs.values())} ({len(pairs)} pairs)")
    for (mine, theirs), n in sorted(pairs.items()):
        print(f"  {mine} -> {theirs}: {n}")
    print(f"import nats outside bus/: {nats_outside_bus(root) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
