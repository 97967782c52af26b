"""The layers hold: imports run one way, only bus/ knows NATS, and only one function in
the whole product builds a unit transition."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("schemas", "projections", "bus", "workers", "loopbus")
FORBIDDEN: dict[str, tuple[str, ...]] = {
    # package -> the loopbus packages it must never import
    "schemas": ("projections", "bus", "workers", "cli"),
    "projections": ("bus", "workers", "cli"),
    "bus": ("projections", "workers", "cli"),
    "workers": ("cli",),
}
TRANSITION_BUILDER = ROOT / "projections" / "claims.py"


def sources(*folders: str) -> Iterator[Path]:
    for folder in folders:
        yield from sorted((ROOT / folder).rglob("*.py"))


def imported_modules(path: Path) -> Iterator[tuple[int, str]]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module


def layer_of(module: str) -> str | None:
    """The loopbus layer a module belongs to (``cli`` for the front door's own modules)."""
    top = module.split(".")[0]
    if top in ("schemas", "projections", "bus", "workers"):
        return top
    return "cli" if top == "loopbus" else None


def test_only_bus_imports_nats() -> None:
    """No module outside bus/ imports nats: the transport has one boundary."""
    leaks = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sources("schemas", "projections", "workers", "loopbus")
        for line, module in imported_modules(path)
        if module == "nats" or module.startswith("nats.")
    ]
    assert leaks == []


@pytest.mark.parametrize("package", list(FORBIDDEN))
def test_imports_run_one_way(package: str) -> None:
    """schemas <- projections <- workers, schemas <- bus <- workers, the CLI on top."""
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sources(package)
        for line, module in imported_modules(path)
        if layer_of(module) in FORBIDDEN[package]
    ]
    assert wrong == []


def test_every_import_of_the_product_is_given_its_layer() -> None:
    """The layer check above is not blind: each way the product's modules are named maps to
    a layer, and the whole tree yields imports of every layer (a renamed package would make
    every import look foreign, and the check pass on nothing)."""
    assert layer_of("workers.units.daemon") == "workers"
    assert layer_of("projections") == "projections"
    assert layer_of("loopbus.commands.status") == "cli"
    assert layer_of("nats.js") is None
    seen = {layer_of(module) for path in sources(*PACKAGES) for _, module in imported_modules(path)}
    assert {"schemas", "projections", "bus", "workers", "cli"} <= seen


def transition_constructions(source: str, filename: str) -> list[int]:
    """Lines of ``source`` that call ``UnitTransitioned(...)``."""
    lines = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name == "UnitTransitioned":
                lines.append(node.lineno)
    return lines


def test_one_function_builds_every_unit_transition() -> None:
    """Only projections/claims.py constructs UnitTransitioned (in transition_event), so
    every daemon's transitions pass the table check a Move makes."""
    builders = {
        f"{path.relative_to(ROOT)}:{line}"
        for path in sources(*PACKAGES)
        for line in transition_constructions(path.read_text(), str(path))
    }
    assert all(b.startswith("projections/claims.py:") for b in builders), builders
    assert len(builders) == 1


def test_the_scan_finds_a_transition_built_by_hand() -> None:
    """The scan above is not blind: a daemon building its own transition is found."""
    rogue = (
        "from schemas import UnitTransitioned\n"
        "def hold(unit):\n"
        "    return UnitTransitioned(project='p', unit=unit, state='blocked', by='hold')\n"
    )
    assert transition_constructions(rogue, "rogue.py") == [3]


SHARED_WORKER_LIBRARIES = frozenset(
    {
        "kernel",
        "runtime",
        "cli",
        "errors",
        "gates",
        "repository",
        "history",
        "agents",
        "entity_merge",
        "leases",
        "remote",
        "served",
    }
)
"""What a daemon package may import from workers/: the libraries every daemon shares."""


def test_no_daemon_imports_another_daemon() -> None:
    """A daemon's package imports the shared worker libraries, never another daemon's room:
    shared protocol lives a layer down (schemas, bus) or in a shared library."""
    crossings = []
    for path in sources("workers"):
        package = path.relative_to(ROOT / "workers").parts[0].removesuffix(".py")
        if package in SHARED_WORKER_LIBRARIES or package == "__init__":
            continue
        for line, module in imported_modules(path):
            parts = module.split(".")
            if parts[0] != "workers" or len(parts) < 2:
                continue
            target = parts[1]
            if target != package and target not in SHARED_WORKER_LIBRARIES:
                crossings.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert crossings == []


def test_schemas_and_projections_write_annotations_as_real_types() -> None:
    """No `from __future__ import annotations` in schemas/ or projections/: msgspec
    would compile every annotation as a string when a command builds its decoders,
    the start-up cost the package docstrings explain."""
    scanned = list(sources("schemas", "projections"))
    assert len(scanned) > 20  # the scan found the packages (a moved folder would pass it)
    postponed = [
        str(path.relative_to(ROOT))
        for path in scanned
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
    ]
    assert not postponed, f"write these annotations as real types: {postponed}"
