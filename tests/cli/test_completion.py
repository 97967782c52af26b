"""``loopbus completion bash|zsh|fish``: scripts generated from the parser, exercised in the
real shells (bash always; zsh and fish where installed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from loopbus.cli import build_parser, version
from loopbus.completion import Command, command_tree, script
from schemas import PRODUCERS

from .conftest import loopbus

TREE = command_tree(build_parser())


def expected(command: Command) -> set[str]:
    """What Tab after ``loopbus <path> `` offers: subcommands and values, else options."""
    offered = {*command.subcommands, *command.choices}
    return offered or {flag for option in command.options for flag in option.flags}


def shell(program: str, code: str) -> str:
    done = subprocess.run(
        [program, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def bash_cases(script_path: Path, cases: list[list[str]]) -> list[set[str]]:
    """COMPREPLY for each list of words typed (the last one being completed)."""
    lines = [f"source {script_path}"]
    for words in cases:
        quoted = " ".join(f"'{w}'" for w in ["loopbus", *words])
        lines.append(
            f"COMP_WORDS=({quoted}); COMP_CWORD={len(words)}; COMPREPLY=(); _loopbus; "
            'printf "%s " "${COMPREPLY[@]}"; echo'
        )
    out = shell("bash", "\n".join(lines)).splitlines()
    return [set(line.split()) for line in out]


@pytest.fixture(scope="module")
def scripts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("completion")
    paths = {}
    for name in ("bash", "zsh", "fish"):
        done = loopbus("completion", name)
        assert done.code == 0, done.err
        assert done.out == script(name, build_parser(), version()), "the command prints the script"
        paths[name] = folder / f"loopbus.{name}"
        paths[name].write_text(done.out)
    return paths


def test_bash_completes_every_command_of_the_parser(scripts: dict[str, Path]) -> None:
    """For every command path the parser has, bash offers exactly its subcommands (or its
    options): the script cannot have drifted from the parser it was made from."""
    commands = list(TREE.walk())
    cases = [[*c.path.split(), ""] for c in commands]
    for command, offered in zip(commands, bash_cases(scripts["bash"], cases), strict=True):
        if command.files:
            offered = {w for w in offered if w.startswith("-") or w in expected(command)}
        assert offered == expected(command), command.path or "loopbus"
    assert "complete -F _loopbus loopbus" in shell(
        "bash", f"source {scripts['bash']}; complete -p loopbus"
    )


def test_bash_completes_option_values_and_skips_them(
    scripts: dict[str, Path], tmp_path: Path
) -> None:
    """An option's choices or file names are offered after it; a value that looks like a
    command is not taken for one; a prefix narrows the offer."""
    (tmp_path / "findings.sarif").write_text("")
    results = bash_cases(
        scripts["bash"],
        [
            ["tail", "--producer", ""],
            ["findings", "export", "--for", ""],
            ["findings", "export", "-o", f"{tmp_path}/fin"],
            ["tail", "--project", "report", "--k"],
            ["report", "finding", "--message", "up", "--sev"],
            ["re"],
        ],
    )
    assert results == [
        set(PRODUCERS),
        {"github", "sarif"},
        {f"{tmp_path}/findings.sarif"},
        {"--kind"},
        {"--severity"},
        {"report", "replay", "record"},
    ]


@pytest.mark.skipif(
    shutil.which("zsh") is None, reason="zsh is not installed (apt-get install zsh)"
)
def test_zsh_script_parses_registers_and_completes(
    scripts: dict[str, Path], tmp_path: Path
) -> None:
    """zsh -n accepts the script; compinit picks it up from $fpath for `loopbus`; run with
    compsys' display functions stood in by printing, it offers what the parser has."""
    done = subprocess.run(
        ["zsh", "-n", str(scripts["zsh"])], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    (tmp_path / "_loopbus").write_text(scripts["zsh"].read_text())
    registered = shell(
        "zsh",
        f"fpath=({tmp_path} $fpath); autoload -Uz compinit; compinit -u -d {tmp_path}/dump; "
        "print -r -- $_comps[loopbus]",
    )
    assert registered.strip() == "_loopbus"
    stubs = (
        f"source {scripts['zsh']}\n"
        "_describe() { local name=${@[-1]}; print -rl -- ${(P)name} }\n"
        "compadd() { [[ $1 == -- ]] && shift; print -rl -- $@ }\n"
        "_files() { print -- '<files>' }\n"
        "t() { words=(loopbus \"$@\"); CURRENT=${#words}; _loopbus; print -- '--' }\n"
        "t ''\nt tail --producer ''\nt findings export -o ''\nt report finding --message up ''\n"
    )
    blocks = shell("zsh", stubs).split("--\n")
    names = [{line.split(":")[0] for line in block.splitlines()} for block in blocks[:4]]
    assert names[0] == set(TREE.subcommands)
    assert names[1] == set(PRODUCERS)
    assert names[2] == {"<files>"}
    assert names[3] == expected(TREE.subcommands["report"].subcommands["finding"])


@pytest.mark.skipif(
    shutil.which("fish") is None, reason="fish is not installed (apt-get install fish)"
)
def test_fish_script_parses_and_completes(scripts: dict[str, Path], tmp_path: Path) -> None:
    """fish -n accepts the script, and fish's own `complete -C` offers what the parser has."""
    done = subprocess.run(
        ["fish", "-n", str(scripts["fish"])], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    (tmp_path / "findings.sarif").write_text("")

    def offered(line: str) -> set[str]:
        out = shell("fish", f"source {scripts['fish']}; complete -C {line!r}")
        return {entry.split("\t")[0] for entry in out.splitlines()}

    assert offered("loopbus ") == set(TREE.subcommands)
    assert offered("loopbus report ") == set(TREE.subcommands["report"].subcommands)
    assert offered("loopbus tail --producer ") == set(PRODUCERS)
    assert offered("loopbus completion ") == {"bash", "zsh", "fish"}
    assert offered(f"loopbus findings export -o {tmp_path}/fin") == {f"{tmp_path}/findings.sarif"}
    assert offered("loopbus tail --project report --k") == {"--kind"}
