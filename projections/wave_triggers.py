"""The trigger table of the wave review, and the union diff cut by file. Pure.

Every wave review judges the floor axes (:data:`schemas.wave_review.FLOOR_AXES`);
a row of :data:`ROWS` adds an axis when what it looks for is *in the diff*: a path the
union diff changes, or a line it adds. A row that cannot be established from the diff
(a binary file has no lines to read) does not fire; no row removes a floor axis.
"""

import re
from dataclasses import dataclass

from schemas.wave_review import FLOOR_AXES, Trigger


@dataclass(frozen=True)
class Row:
    name: str
    axis: str
    paths: re.Pattern[str] | None = None
    added: re.Pattern[str] | None = None
    says: str = ""


ROWS: tuple[Row, ...] = (
    Row(
        "migration",
        "data",
        paths=re.compile(r"(^|/)(migrations?|alembic)/|\.sql$"),
        says="a schema or data migration changes",
    ),
    Row(
        "dependency-manifest",
        "supply-chain",
        paths=re.compile(
            r"(^|/)(pyproject\.toml|requirements[^/]*\.txt|package(-lock)?\.json|Cargo\.toml|"
            r"go\.mod|poetry\.lock|uv\.lock)$"
        ),
        says="a dependency manifest changes",
    ),
    Row(
        "deployment",
        "operability",
        paths=re.compile(r"(^|/)(Dockerfile[^/]*|compose\.ya?ml|\.github/workflows/.*|deploy/.*)$"),
        says="how the software is built or deployed changes",
    ),
    Row(
        "concurrency",
        "concurrency",
        added=re.compile(r"\b(threading|multiprocessing|asyncio\.(Lock|gather|create_task))\b"),
        says="an added line starts or synchronises concurrent work",
    ),
)


def split_files(diff: str) -> dict[str, str]:
    """A unified diff (``diff --git`` sections) cut into one text per changed path."""
    out: dict[str, str] = {}
    current: list[str] = []
    path = ""
    for line in diff.splitlines(keepends=True):
        if line.startswith("diff --git "):
            if path:
                out[path] = "".join(current)
            current, path = [], _header_path(line)
        current.append(line)
    if path:
        out[path] = "".join(current)
    return out


def _header_path(header: str) -> str:
    # "diff --git a/x b/x": the new side's path (a deletion names the same path twice).
    rest = header[len("diff --git ") :].rstrip("\n")
    half = rest.split(" b/", 1)
    return half[1] if len(half) == 2 else rest.removeprefix("a/")


def added_lines(section: str) -> list[str] | None:
    """The lines a file's section adds (``None``: a binary change, which has no lines)."""
    if "\nBinary files " in section or section.startswith("Binary files "):
        return None
    return [
        line[1:]
        for line in section.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]


def fired(files: dict[str, str]) -> list[Trigger]:
    """Each row the diff establishes, with the first file that established it."""
    out: list[Trigger] = []
    for row in ROWS:
        for path, section in sorted(files.items()):
            if row.paths is not None and row.paths.search(path):
                out.append(Trigger(row=row.name, axis=row.axis, why=f"{row.says}: {path}"))
                break
            lines = added_lines(section) if row.added is not None else None
            pattern = row.added
            if pattern is not None and lines is not None and any(map(pattern.search, lines)):
                out.append(Trigger(row=row.name, axis=row.axis, why=f"{row.says}: {path}"))
                break
    return out


def axes(triggers: list[Trigger]) -> list[str]:
    """The floor axes, then each axis a trigger added (once)."""
    return list(dict.fromkeys([*FLOOR_AXES, *(t.axis for t in triggers)]))


def attribute(files: list[str], unit_files: dict[str, set[str]]) -> dict[str, str]:
    """file -> the one unit whose merge changed it (``""``: none of the wave's, or several)."""
    out: dict[str, str] = {}
    for path in files:
        owners = sorted(u for u, changed in unit_files.items() if path in changed)
        out[path] = owners[0] if len(owners) == 1 else ""
    return out
