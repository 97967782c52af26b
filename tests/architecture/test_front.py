"""The front reaches daemons only through their public faces.

The *front* is everything under ``loopbus/``: the CLI, the page (``loopbus/web/``) and the
merge driver (``loopbus/commands/merge_driver.py``). A *daemon package* is a folder of
``workers/`` holding a ``daemon.py``. Its *public face* is the package itself
(``workers.<daemon>``, what ``python -m`` runs) and ``workers.<daemon>.face``:
a small module naming what the front may use, importing only what those names need. Every
other module of a daemon package is the daemon's own (its decision, its shell, its folds)
and may change without the front noticing. The shared libraries of ``workers/`` (gates,
repository, history, agents, entity_merge, runtime, errors, kernel) are not daemons and
the front may use them. See docs/extending.md ("The front and a daemon's face").
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FACE = "face"
DAEMONS = frozenset(p.parent.name for p in (ROOT / "workers").glob("*/daemon.py")) - {"kernel"}
"""Every daemon's package; the kernel has a daemon.py (the base every daemon builds on) but
is a shared library, which the front may use (docs/extending.md says so too)."""


def imports(source: str, filename: str) -> Iterator[tuple[int, str]]:
    """Every module ``source`` imports, anywhere (a command imports lazily, inside its
    handler), as ``loopbus.x.y`` (``from workers import merger`` gives
    ``workers.merger``)."""
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def inside_a_daemon(module: str) -> bool:
    """``module`` is a daemon's own module, not its public face."""
    parts = module.split(".")
    if parts[0] != "workers" or len(parts) < 3 or parts[1] not in DAEMONS:
        return False
    return parts[2] != FACE


def reaches(source: str, filename: str) -> list[str]:
    """One line per import statement that reaches inside a daemon."""
    found: dict[int, str] = {}
    for line, module in imports(source, filename):
        if inside_a_daemon(module):
            found.setdefault(line, f"{line} imports {module}")
    return list(found.values())


def test_the_front_imports_no_daemon_internal_module() -> None:
    """loopbus/ imports a daemon only as its package or its face."""
    assert len(DAEMONS) >= 10  # the daemons were found (a moved folder would pass the scan)
    found = {
        str(path.relative_to(ROOT)): hits
        for path in sorted((ROOT / "loopbus").rglob("*.py"))
        if (hits := reaches(path.read_text(), str(path)))
    }
    assert found == {}, "add the name to workers/<daemon>/face.py and import it from there"


def test_the_scan_finds_a_planted_reach() -> None:
    """The scan is not blind: a lazy import of a daemon's own module, or of a name from it,
    is found; a face, a package and a shared library are not."""
    rogue = (
        "from workers.units.face import ANSWER_SALT\n"
        "def handler(args):\n"
        "    from workers.units.daemon import ANSWER_SALT\n"
        "    import workers.merger.decide\n"
        "    from workers.merger import adoption\n"
        "    from workers.gates.runner import GateRunner\n"
        "    import workers.units\n"
    )
    assert [hit.split()[0] for hit in reaches(rogue, "rogue.py")] == ["3", "4", "5"]


def test_every_face_is_small_and_imports_only_its_daemon() -> None:
    """A face only names things (no logic to drift from the daemon's): it imports from its
    own daemon package, not from its daemon module, and defines nothing but ``__all__``."""
    for path in sorted((ROOT / "workers").glob(f"*/{FACE}.py")):
        tree = ast.parse(path.read_text(), str(path))
        daemon = path.parent.name
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                assert node.module.startswith(f"workers.{daemon}."), (path, node.module)
                # Not from the daemon module itself: the front reading a face would import
                # the whole daemon (the units face re-exported ANSWER_SALT from it).
                assert node.module != f"workers.{daemon}.daemon", (path, node.module)
            elif isinstance(node, ast.Assign):
                assert [t.id for t in node.targets if isinstance(t, ast.Name)] == ["__all__"]
            else:
                assert isinstance(node, ast.Expr), (path, ast.dump(node)[:80])  # a docstring
