"""What ``loopbus init DIR`` writes: a small runnable project and its first commit.

The project (``calc`` unless named otherwise) is a package ``calc`` with three unimplemented
modules, a pending criterion
test for each behaviour, a boot check, a ``loopbus.toml`` whose ``[build]`` and
``[review]`` name the scripted agents shipped with loopbus (``loopbus.scripted``), and a
plan of three units. Everything is committed on ``main`` with dulwich, so the directory
is a repository the daemons can work on at once.
"""

from __future__ import annotations

from pathlib import Path

from dulwich import porcelain
from dulwich.repo import Repo

PROJECT = "calc"
TRUNK = "main"
PLAN_FILE = "plan.toml"

LOOPBUS_TOML = """\
# loopbus.toml
[project]
id = "calc"

[[check]]
id = "tests"
command = "python -m pytest -q -p no:cacheprovider tests"
parser = "pytest"
timeout = 120
# One criterion test per behaviour; each unit removes its own line when it implements it.
pending = [
    # unit ops
    "tests/test_criteria.py::test_add",
    "tests/test_criteria.py::test_mul",
    # unit stats
    "tests/test_criteria.py::test_mean",
    # unit fmt
    "tests/test_criteria.py::test_format_total",
]

[[check]]
id = "boot"
command = "python -m calc --probe"
parser = "exit-code"
timeout = 60

[build]
command = "python -m loopbus.scripted.builder"
roster = ["b1", "b2"]
timeout = "2m"
mode = "long"

[review]
command = "python -m loopbus.scripted.reviewer"
roster = ["r1"]
timeout = "1m"
wave = true                   # each merged wave's union diff is reviewed once more

# After each wave merges, a code-cold verifier (docs/verify.md): the criteria and trunk,
# never the diffs. Its findings hold the slice; its scores count for SHIP.
[verify]
command = "python -m loopbus.scripted.verifier"
timeout = "2m"

# Once a charter is approved (charter.toml), the planner plans each slice: here the
# scripted planner, answering from plans.toml (docs/planning.md).
[plan]
command = "python -m loopbus.scripted.planner plans.toml"
timeout = "1m"
"""

PLAN_TOML = """\
# plan.toml
[slice]
id = "S1"

[[unit]]
id = "ops"
title = "add and multiply two numbers"
files = ["calc/ops.py", "calc/__init__.py"]
criteria = ["tests/test_criteria.py::test_add", "tests/test_criteria.py::test_mul"]

[[unit]]
id = "stats"
title = "the mean of a list"
files = ["calc/stats.py", "calc/__init__.py"]
criteria = ["tests/test_criteria.py::test_mean"]

[[unit]]
id = "fmt"
title = "format a total for people"
files = ["calc/fmt.py"]
criteria = ["tests/test_criteria.py::test_format_total"]
"""

CHARTER_FILE = "charter.toml"
CHARTER_TOML = """\
# charter.toml: what the run is for (loopbus charter submit charter.toml, then
# loopbus approve --charter --why ...). The run ends when every criterion holds on trunk.
id = "calc-v1"
title = "a small calculator people can read"
autonomy = "full"

[[objectives]]
id = "arithmetic"
text = "callers add, subtract and multiply two numbers and take a mean"

[[objectives]]
id = "readable"
text = "totals read like money, grouped by thousands"

[[criteria]]
id = "adds"
text = "add(2, 3) is 5"
test = "tests/test_criteria.py::test_add"

[[criteria]]
id = "multiplies"
text = "mul(2, 3) is 6"
test = "tests/test_criteria.py::test_mul"

[[criteria]]
id = "means"
text = "the mean of 1, 2, 3 is 2"
test = "tests/test_criteria.py::test_mean"

[[criteria]]
id = "formats"
text = "2.5 reads 2.50"
test = "tests/test_criteria.py::test_format_total"

[[criteria]]
id = "subtracts"
text = "sub(5, 3) is 2"
test = "tests/test_slice2.py::test_sub"
# Not on trunk yet (slice 2's contract writes it): the charter gives the test file's
# text, so the approval pins what "subtracts" and "thousands" must prove, whoever writes
# the file. A source is the whole file; one criterion of a file gives it for all.
source = '''
import calc.ops


def test_sub() -> None:
    sub = getattr(calc.ops, "sub", None)
    assert sub is not None, "calc.ops.sub is not written yet"
    assert sub(5, 3) == 2


from calc.fmt import format_total


def test_format_thousands() -> None:
    assert format_total(1234.5) == "1,234.50"
'''

[[criteria]]
id = "thousands"
text = "1234.5 reads 1,234.50"
test = "tests/test_slice2.py::test_format_thousands"

[[criteria]]
id = "boots"
text = "the package boots"
check = "boot"

[budgets]
wall_clock = "10m"
slices = 4
"""

SLICE_2_TOML = '''\
[slice]
id = "S2"

[[unit]]
id = "sub"
title = "subtract two numbers"
files = ["calc/ops.py", "calc/__init__.py"]
criteria = ["tests/test_slice2.py::test_sub"]

[[unit]]
id = "thousands"
title = "group a total's thousands"
files = ["calc/fmt.py"]
criteria = ["tests/test_slice2.py::test_format_thousands"]

# Slice 2 grows the contract: a new check and two new criterion tests, landed on trunk
# as one system commit before its units start.
[[contract.checks]]
id = "compiles"
command = "python -m compileall -q calc"
parser = "exit-code"
timeout = 60

[[contract.criteria]]
test = "tests/test_slice2.py::test_sub"
text = """
import calc.ops


def test_sub() -> None:
    sub = getattr(calc.ops, "sub", None)
    assert sub is not None, "calc.ops.sub is not written yet"
    assert sub(5, 3) == 2
"""

[[contract.criteria]]
test = "tests/test_slice2.py::test_format_thousands"
text = """
from calc.fmt import format_total


def test_format_thousands() -> None:
    assert format_total(1234.5) == "1,234.50"
"""
'''

PLANS_FILE = "plans.toml"


def plans_toml() -> str:
    """The scripted planner's answers, one plan per slice of the charter (JSON strings in
    TOML, so the plans' own quotes need no care): slice 1 is the plan of ``plan.toml``,
    slice 2 brings a contract."""
    import json

    return (
        "# plans.toml: what the scripted planner answers for each slice (docs/planning.md)\n"
        f"S1 = {json.dumps(PLAN_TOML)}\n\nS2 = {json.dumps(SLICE_2_TOML)}\n"
    )


FILES: dict[str, str] = {
    "loopbus.toml": LOOPBUS_TOML,
    PLAN_FILE: PLAN_TOML,
    CHARTER_FILE: CHARTER_TOML,
    PLANS_FILE: plans_toml(),
    ".gitignore": "__pycache__/\n.loopbus/\n",
    "README.md": (
        "# calc\n\nA project scaffolded by `loopbus init`. Run the loop on it with\n"
        "`loopbus up --repo .` and, in a second terminal here,\n"
        "`loopbus plan submit plan.toml` (the project is the `[project] id` of\n"
        "loopbus.toml).\n"
    ),
    "calc/__init__.py": '"""A small calculator, built unit by unit by loopbus."""\n',
    "calc/__main__.py": (
        '"""`python -m calc --probe`: the boot check. It starts the package and uses every\n'
        'module once; it exits 1 only if that raises."""\n'
        "\nimport sys\n\n"
        "from calc.fmt import format_total\nfrom calc.ops import add, mul\n"
        "from calc.stats import mean\n\n"
        'if __name__ == "__main__" and "--probe" in sys.argv:\n'
        '    print("calc boots:", format_total(mean([add(1, 2), mul(2, 3)])))\n'
    ),
    "calc/ops.py": (
        '"""Arithmetic on two numbers."""\n\n\n'
        "def add(a: float, b: float) -> float:\n    return 0\n\n\n"
        "def mul(a: float, b: float) -> float:\n    return 0\n"
    ),
    "calc/stats.py": (
        '"""Statistics over a list of numbers."""\n\n\n'
        "def mean(xs: list[float]) -> float:\n    return 0.0\n"
    ),
    "calc/fmt.py": (
        '"""Formatting totals for people."""\n\n\n'
        'def format_total(value: float) -> str:\n    return ""\n'
    ),
    "tests/__init__.py": "",
    "tests/test_package.py": (
        '"""An ordinary test: the package imports."""\n\nimport calc\n\n\n'
        "def test_the_package_imports() -> None:\n    assert calc.__doc__\n"
    ),
    "tests/test_criteria.py": (
        '"""The acceptance criteria, one test each (pending until a unit implements it)."""\n\n'
        "from calc.fmt import format_total\nfrom calc.ops import add, mul\n"
        "from calc.stats import mean\n\n\n"
        "def test_add() -> None:\n    assert add(2, 3) == 5\n\n\n"
        "def test_mul() -> None:\n    assert mul(2, 3) == 6\n\n\n"
        "def test_mean() -> None:\n    assert mean([1, 2, 3]) == 2\n\n\n"
        'def test_format_total() -> None:\n    assert format_total(2.5) == "2.50"\n'
    ),
}


UNSANDBOXED_AGENTS = """
# No sandbox can be made on this machine (docs/agents.md): the demo runs loopbus's own
# scripted agents bare, and says so. A real agent needs bubblewrap or a Docker engine.
[agents]
sandbox = "none"
"""


def write(directory: Path, *, project: str = PROJECT, unsandboxed: bool = False) -> Path:
    """Write the project into ``directory`` (which must be empty or absent) and commit it
    on ``main``; returns the directory. ``project`` is its ``[project] id`` (the package
    stays ``calc``: the criteria and the scripted agents name it). ``unsandboxed`` (the
    demo, on a machine where no agent sandbox can be made) adds ``[agents] sandbox =
    "none"`` to its loopbus.toml."""
    # Absolute: dulwich reads relative paths against the repository, not the working
    # directory, so `loopbus init calc` once committed an empty tree.
    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in FILES.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name == "loopbus.toml":
            text = named(text, project) + (UNSANDBOXED_AGENTS if unsandboxed else "")
        path.write_text(text)
    commit_all(directory, f"scaffold: {project}, its criteria, its plan (loopbus init)")
    return directory


def named(config: str, project: str) -> str:
    """``loopbus.toml``'s text with ``project`` as its ``[project] id``."""
    line = f'id = "{PROJECT}"\n'
    assert line in config  # the scaffold's own text: a changed template must change this
    return config.replace(line, f'id = "{project}"\n', 1)


def commit_all(directory: Path, message: str) -> str:
    """Initialise a repository in ``directory`` and commit every file of :data:`FILES` on
    ``main`` (HEAD names it, so trunk is the current branch); returns the commit."""
    with Repo.init(str(directory)) as repo:
        repo.refs.set_symbolic_ref(b"HEAD", f"refs/heads/{TRUNK}".encode())
        added, _ignored = porcelain.add(repo, [str(directory.resolve() / name) for name in FILES])
        if len(added) != len(FILES):
            raise RuntimeError(f"git add took {len(added)} of the {len(FILES)} scaffold files")
        author = b"loopbus init <init@loopbus.invalid>"
        sha = porcelain.commit(repo, message.encode(), author=author, committer=author)
        return sha.decode()
