"""Print the figures the typed-effects issue is measured by, for any checkout.

    python tests/architecture/seams_report.py [ROOT]

Modules over the size limit in workers/ and projections/, the front's import statements
into workers/ (and how many reach a daemon's own module rather than its face or a shared
library), and the places on the system side that publish around the kernel. Works on a
checkout from before the layout change too (``loopbus.workers`` names are read as
``workers``). Compare with ``git worktree add /tmp/old <commit>``. Not a test:
test_sizes.py, test_front.py and test_publishing.py assert the limits.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from test_publishing import publishing_calls

LIMIT = 450
LAYERS = ("schemas", "projections", "bus", "workers")


def plain(module: str) -> str:
    """``loopbus.workers.x`` (the old installed name) read as ``workers.x``."""
    head, _, rest = module.partition(".")
    if head == "loopbus" and rest.split(".")[0] in LAYERS:
        return rest
    return module


def module_sizes(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): len(p.read_text().splitlines())
        for folder in ("workers", "projections")
        for p in sorted((root / folder).rglob("*.py"))
    }


def front_imports(root: Path) -> list[tuple[str, int, str]]:
    """(file, line, module) of every import statement in loopbus/ that names workers."""
    found = []
    for path in sorted((root / "loopbus").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [plain(alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [plain(node.module)]
            else:
                continue
            for name in names:
                if name == "workers" or name.startswith("workers."):
                    found.append((str(path.relative_to(root)), node.lineno, name))
                    break
    return found


def daemon_rooms(root: Path) -> set[str]:
    return {p.parent.name for p in (root / "workers").glob("*/daemon.py")} - {"kernel"}


def publishers(root: Path) -> dict[str, list[int]]:
    kernel = root / "workers" / "kernel"
    found = {}
    for folder in ("schemas", "projections", "workers"):
        for path in sorted((root / folder).rglob("*.py")):
            if not path.is_relative_to(kernel):
                lines = list(publishing_calls(path.read_text(), str(path)))
                if lines:
                    found[str(path.relative_to(root))] = lines
    return found


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    sizes = module_sizes(root)
    over = sorted(((n, m) for m, n in sizes.items() if n > LIMIT), reverse=True)
    print(f"modules over {LIMIT} lines in workers/ and projections/: {len(over)}")
    for lines, module in over:
        print(f"  {module}: {lines}")
    imports = front_imports(root)
    rooms = daemon_rooms(root)
    inside = [
        (f, line, m)
        for f, line, m in imports
        if len(m.split(".")) > 2 and m.split(".")[1] in rooms and m.split(".")[2] != "face"
    ]
    files = {f for f, _, _ in imports}
    print(f"front import statements into workers/: {len(imports)} in {len(files)} modules")
    print(f"  of them into a daemon's own module (not its face): {len(inside)}")
    for f, line, m in inside:
        print(f"    {f}:{line} {m}")
    found = publishers(root)
    total = sum(len(lines) for lines in found.values())
    print(f"publish calls outside bus/ and workers/kernel/: {total} in {len(found)} modules")
    for path, lines in found.items():
        print(f"  {path}: lines {lines}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
