"""Small deterministic probes the shipped capability profiles run as checks.

``python -P -m workers.gates.probes NAME [options] [-- COMMAND ...]``; exit 0 when
the property holds, 1 when it does not (with one line per reason on stdout), 2 on a usage
mistake. ``-P`` keeps the checked-out project from shadowing this module. Standard library
only, so a probe measures the project and not loopbus.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.error
import urllib.request
import uuid
from collections.abc import Sequence
from pathlib import Path

_SPECIFIER = re.compile(r"(==|>=|<=|~=|!=|<|>|@)")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _packages(root: Path) -> list[tuple[Path, str]]:
    """Top-level packages under ``root`` and ``root/src``: (import root, name)."""
    found = []
    for base in (root, root / "src"):
        if not base.is_dir():
            continue
        for child in sorted(base.iterdir()):
            if (child / "__init__.py").is_file() and child.name not in {"tests", "test", "docs"}:
                found.append((base, child.name))
    return found


def discover_cli(root: Path) -> list[list[str]]:
    """The project's command lines: its ``[project.scripts]``, else ``python -m <pkg>`` for a
    package with ``__main__.py``."""
    env_path = os.pathsep.join(str(p) for p in (root, root / "src"))
    commands: list[list[str]] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        scripts = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        for name, target in scripts.get("project", {}).get("scripts", {}).items():
            module, _, attr = str(target).partition(":")
            code = (
                f"import sys; sys.path[:0] = {env_path!r}.split({os.pathsep!r}); "
                f"sys.argv[0] = {name!r}; from {module} import {attr.split('.')[0]} as f; "
                "sys.exit(f())"
            )
            commands.append([sys.executable, "-c", code])
    if not commands:
        for base, name in _packages(root):
            if (base / name / "__main__.py").is_file():
                code = (
                    f"import runpy, sys; sys.path.insert(0, {str(base)!r}); "
                    f"sys.argv[0] = {name!r}; runpy.run_module({name!r}, run_name='__main__')"
                )
                commands.append([sys.executable, "-c", code])
    return commands


def _cli_commands(command: Sequence[str]) -> list[list[str]]:
    if command:
        return [list(command)]
    found = discover_cli(Path.cwd())
    if not found:
        raise LookupError(
            "no CLI found: no [project.scripts] in pyproject.toml and no package with "
            '__main__.py; declare it in loopbus.toml: [capability.cli] command = "..."'
        )
    return found


def cli_help(command: Sequence[str]) -> list[str]:
    """A CLI answers --help with exit 0 and some text."""
    problems = []
    for cmd in _cli_commands(command):
        done = subprocess.run([*cmd, "--help"], capture_output=True, timeout=30, check=False)
        shown = " ".join(cmd[:3])
        if done.returncode != 0:
            tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
            problems.append(f"{shown} --help exited with code {done.returncode} {tail[0]}".strip())
        elif not done.stdout.strip():
            problems.append(f"{shown} --help printed nothing")
    return problems


def usage_error(command: Sequence[str]) -> list[str]:
    """A CLI refuses an option it does not know: non-zero exit and a message on stderr."""
    problems = []
    for cmd in _cli_commands(command):
        done = subprocess.run(
            [*cmd, "--loopbus-no-such-option"], capture_output=True, timeout=30, check=False
        )
        shown = " ".join(cmd[:3])
        if done.returncode == 0:
            problems.append(f"{shown}: an unknown option was accepted (exit 0)")
        if not done.stderr.strip():
            problems.append(f"{shown}: an unknown option produced no message on stderr")
    return problems


def _get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read()


def http_boot(
    command: Sequence[str], path: str, html: bool, unknown_404: bool, wait: float
) -> list[str]:
    """The service starts on $PORT and answers ``path`` with 2xx (and HTML when asked)."""
    port = _free_port()
    env = os.environ | {"PORT": str(port)}
    process = subprocess.Popen(list(command), env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    problems: list[str] = []
    try:
        deadline = time.monotonic() + wait
        answer: tuple[int, str, bytes] | None = None
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return [f"the service exited with code {process.returncode} before answering"]
            try:
                answer = _get(base + path)
                break
            except (OSError, urllib.error.URLError):
                time.sleep(0.1)
        if answer is None:
            return [f"nothing answered {path} on $PORT within {wait:g}s"]
        status, ctype, body = answer
        if not 200 <= status < 300:
            problems.append(f"GET {path} answered {status}, expected 2xx")
        if html:
            if "text/html" not in ctype:
                problems.append(f"GET {path} is {ctype or 'untyped'}, expected text/html")
            if b"<title" not in body.lower() and b"<html" not in body.lower():
                problems.append(f"GET {path} returned no HTML document")
        if unknown_404:
            probe = f"/loopbus-probe-{uuid.uuid4().hex[:8]}"
            status, _, _ = _get(base + probe)
            if status != 404:
                problems.append(f"GET {probe} (no such route) answered {status}, expected 404")
    finally:
        _stop(process)
    return problems


def _requirements(root: Path) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        doc = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        for dep in doc.get("project", {}).get("dependencies", []):
            found.append(("pyproject.toml", str(dep)))
    for req in sorted(root.glob("requirements*.txt")):
        for line in req.read_text(encoding="utf-8").splitlines():
            line = line.split("#", 1)[0].strip()
            if line and not line.startswith("-"):
                found.append((req.name, line))
    return found


def deps_bounded(root: Path) -> list[str]:
    """Every declared dependency carries a version constraint (or is pinned to a URL)."""
    return [
        f"{where}: dependency {dep!r} has no version constraint"
        for where, dep in _requirements(root)
        if not _SPECIFIER.search(dep.split(";", 1)[0])
    ]


def bundle_budget(folder: Path, budget_kb: float) -> list[str]:
    """The built assets under ``folder`` weigh no more than ``budget_kb``."""
    if not folder.is_dir():
        return [f"{folder} does not exist; nothing to weigh (build the bundle first)"]
    total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    if total > budget_kb * 1024:
        return [f"{folder} weighs {total / 1024:.1f} KiB, over the {budget_kb:g} KiB budget"]
    return []


def _digest_tree(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def deterministic(command: Sequence[str], timeout: float) -> list[str]:
    """Two runs writing into $OUTPUT_DIR produce the same, non-empty output."""
    trees = []
    for attempt in (1, 2):
        with tempfile.TemporaryDirectory(prefix="loopbus-pipeline-") as out:
            env = os.environ | {"OUTPUT_DIR": out}
            done = subprocess.run(list(command), env=env, timeout=timeout, check=False)
            if done.returncode != 0:
                return [f"run {attempt} exited with code {done.returncode}"]
            trees.append(_digest_tree(Path(out)))
    if not trees[0]:
        return ["the pipeline wrote nothing into $OUTPUT_DIR"]
    if trees[0] != trees[1]:
        differ = sorted(
            k for k in trees[0].keys() | trees[1].keys() if trees[0].get(k) != trees[1].get(k)
        )
        return [f"two runs on the same input differ in: {', '.join(differ[:10])}"]
    return []


def imports(package: str, path: str) -> list[str]:
    """The package imports cleanly from ``path`` in a fresh interpreter."""
    if not package:
        found = _packages(Path(path))
        if len(found) != 1:
            names = ", ".join(n for _, n in found) or "none"
            return [
                f"cannot tell which package to import (found: {names}); declare it in "
                'loopbus.toml: [capability.library] package = "..."'
            ]
        base, package = found[0]
        path = str(base)
    env = os.environ | {"PYTHONPATH": os.path.abspath(path)}
    done = subprocess.run(
        [sys.executable, "-c", f"import {package}"],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        return [f"import {package} failed: {tail[0]}"]
    return []


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "--" in args:
        cut = args.index("--")
        args, command = args[:cut], args[cut + 1 :]
    parser = argparse.ArgumentParser(prog="python -P -m workers.gates.probes")
    sub = parser.add_subparsers(dest="probe", required=True)
    sub.add_parser("cli-help", help="the CLI after -- (or found) answers --help")
    sub.add_parser("usage-error", help="the CLI after -- (or found) refuses an unknown option")
    http = sub.add_parser("http-boot", help="the service after -- boots on $PORT and answers")
    http.add_argument("--path", default="/")
    http.add_argument("--html", action="store_true")
    http.add_argument("--unknown-404", action="store_true")
    http.add_argument("--wait", type=float, default=20.0)
    sub.add_parser("deps-bounded", help="every declared dependency has a version constraint")
    bundle = sub.add_parser("bundle-budget", help="built assets stay under a size budget")
    bundle.add_argument("--dir", required=True)
    bundle.add_argument("--budget-kb", type=float, required=True)
    pipe = sub.add_parser("deterministic", help="the pipeline after -- is repeatable")
    pipe.add_argument("--timeout", type=float, default=120.0)
    imp = sub.add_parser("imports", help="a package imports cleanly")
    imp.add_argument("--path", default=".")
    ns = parser.parse_args(args)
    if ns.probe in {"http-boot", "deterministic"} and not command:
        parser.error(f"{ns.probe} needs the command to probe after --")
    try:
        problems = _run(ns, command)
    except (OSError, LookupError, subprocess.TimeoutExpired) as exc:
        problems = [f"{ns.probe}: {exc}"]
    for problem in problems:
        print(problem)
    if not problems:
        print(f"{ns.probe}: ok")
    return 1 if problems else 0


def _run(ns: argparse.Namespace, command: list[str]) -> list[str]:
    if ns.probe == "cli-help":
        problems = cli_help(command)
    elif ns.probe == "usage-error":
        problems = usage_error(command)
    elif ns.probe == "http-boot":
        problems = http_boot(command, ns.path, ns.html, ns.unknown_404, ns.wait)
    elif ns.probe == "deps-bounded":
        problems = deps_bounded(Path.cwd())
    elif ns.probe == "bundle-budget":
        problems = bundle_budget(Path(ns.dir), ns.budget_kb)
    elif ns.probe == "deterministic":
        problems = deterministic(command, ns.timeout)
    else:
        problems = imports(command[0] if command else "", ns.path)
    return problems


if __name__ == "__main__":
    raise SystemExit(main())
