"""docs/gates.md stays true: each TOML example is validated by the code that reads it, the
shown errors are the ones the code prints, and the first example runs green for real."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from gate_repos import CALC_STUB, TEST_CALC, TEST_CRITERIA, GitRepo
from gatekit import run_commit

from workers.errors import ConfigError
from workers.gates.config import parse_config
from workers.gates.profiles import parse_profile
from workers.gates.runner import GateRunner

DOC = Path(__file__).resolve().parents[2] / "docs" / "gates.md"
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def fences() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(DOC.read_text())]


def toml_blocks() -> list[str]:
    return [body for lang, body in fences() if lang == "toml"]


@pytest.mark.parametrize("body", toml_blocks(), ids=lambda b: b.splitlines()[0])
def test_every_toml_example_is_checked_by_the_real_parser(body: str) -> None:
    """Accepted examples parse; the rejected one fails with the message shown after it."""
    first = body.splitlines()[0].strip()
    if first == "# loopbus.toml":
        parse_config(body)
    elif first == "# loopbus.toml (rejected)":
        blocks = fences()
        index = blocks.index(("toml", body))
        lang, shown = blocks[index + 1]
        assert lang == "text"
        with pytest.raises(ConfigError) as info:
            parse_config(body)
        assert str(info.value) == shown.strip()
    elif first == "# profile":
        parse_profile(body, "docs/gates.md")
    else:
        pytest.fail(f"a TOML example in docs/gates.md has no marker line: {first!r}")


def test_the_shown_field_error_is_what_the_parser_prints() -> None:
    """The one-line error quoted for a misspelt parser is the parser's own message."""
    example = toml_blocks()[0].replace('parser = "pytest"', 'parser = "pytst"')
    with pytest.raises(ConfigError) as info:
        parse_config(example)
    assert f"\n{info.value}\n" in DOC.read_text()


CLI = (
    "import argparse\n\n\ndef main():\n    parser = argparse.ArgumentParser(prog='demo')\n"
    "    parser.parse_args()\n    print('demo')\n    return 0\n"
)
PYPROJECT = (
    '[project]\nname = "demo"\nversion = "0.1"\n\n[project.scripts]\ndemo = "demo.cli:main"\n'
)


async def test_first_example_runs_green_on_a_real_project(
    git: Callable[[str], GitRepo], make_runner: Callable[..., GateRunner], project: str
) -> None:
    """The documented loopbus.toml, on a project it describes, gives the documented outcomes."""
    repo = git("repo")
    example = toml_blocks()[0]
    assert 'id = "demo"' in example
    commit = repo.commit(
        {
            "loopbus.toml": example.replace('id = "demo"', f'id = "{project}"'),
            "pyproject.toml": PYPROJECT,
            "demo/__init__.py": "",
            "demo/cli.py": CLI,
            "calc.py": CALC_STUB,
            "tests/test_calc.py": TEST_CALC,
            "tests/test_criteria.py": TEST_CRITERIA,
        }
    )
    suite = await run_commit(make_runner(repo), commit)
    assert [(c.check, c.outcome) for c in suite.checks] == [
        ("cli-help", "pass"),
        ("cli-usage-error", "pass"),
        ("tests", "pass"),
        ("lint", "pass"),
    ], [f.message for c in suite.checks for f in c.findings]
    assert suite.check("tests").result.summary == "1 passed, 1 pending"
