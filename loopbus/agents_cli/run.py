"""One run of ``loopbus agent CLI --role ROLE``: the document on stdin to the envelope on
stdout, or one line saying what went wrong.

Each failure is an :class:`AgentCliError` (exit 1) whose message is one line: the CLI not
on ``PATH`` (and how to install it), the CLI exiting non-zero, output not in the CLI's
documented format, a final message without a JSON object, and an envelope the role's type
refuses (naming the field). A stdin that is not a JSON document is a usage error (exit 2).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Sequence

import msgspec

from loopbus.agents_cli import roles
from loopbus.agents_cli.extract import find_object
from loopbus.agents_cli.prompts import prompt
from loopbus.agents_cli.spec import Cli, OutputError, Role
from loopbus.agents_cli.table import CLIS
from loopbus.errors import LoopbusError, UsageError


class AgentCliError(LoopbusError):
    """Raised when the CLI gave no envelope the role's daemon would take; one line."""


def one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def cli_named(name: str) -> Cli:
    try:
        return CLIS[name]
    except KeyError:
        known = ", ".join(sorted(CLIS))
        raise UsageError(f"agent: unknown CLI {name!r}: use one of {known}") from None


def read_document(data: bytes, role: Role) -> dict[str, object]:
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise UsageError(
            f"agent: stdin is not JSON ({one_line(str(exc), 80)}): pipe the {role}'s "
            "document in, as its daemon does"
        ) from None
    if not isinstance(doc, dict):
        raise UsageError(f"agent: stdin is JSON but not an object: pipe the {role}'s document in")
    return doc


def run(name: str, role: Role, extra: Sequence[str], data: bytes) -> bytes:
    """The envelope (one JSON line) for ``role``, from CLI ``name`` given stdin ``data``."""
    cli = cli_named(name)
    doc = read_document(data, role)
    call = cli.invoke(prompt(role, doc), role, extra)
    program = shutil.which(call.argv[0])
    if program is None:
        raise AgentCliError(
            f"{cli.name}: `{cli.program}` is not on PATH; install it (`{cli.install}`) where "
            "the agent runs, or add its folder to [agents] read_only and the daemon's PATH"
        )
    try:
        done = subprocess.run(
            [program, *call.argv[1:]],
            input=call.stdin.encode(),
            capture_output=True,
            cwd=roles.workdir(role),
            check=False,
        )
    except OSError as exc:
        raise AgentCliError(f"{cli.name}: could not run {program}: {one_line(str(exc))}") from None
    stderr = done.stderr.decode("utf-8", "replace")
    if done.returncode != 0:
        tail = stderr.strip().splitlines()[-1:] or ["(nothing on stderr)"]
        raise AgentCliError(f"{cli.name} exited with code {done.returncode}: {one_line(tail[0])}")
    sys.stderr.write(stderr)  # the CLI's own notes, for the daemon's log of the run
    return envelope(cli, role, done.stdout.decode("utf-8", "replace"))


def envelope(cli: Cli, role: Role, stdout: str) -> bytes:
    """The role's envelope out of the CLI's output."""
    try:
        answer = cli.parse(stdout)
    except OutputError as exc:
        raise AgentCliError(
            f"{cli.name}: {one_line(str(exc))} (format: {cli.format_doc})"
        ) from None
    document = find_object(answer.text)
    if document is None:
        raise AgentCliError(
            f"{cli.name}: its final message holds no JSON object, so no {role} envelope: "
            f"{one_line(answer.text, 120)!r}"
        )
    try:
        valid = roles.validate(role, document)
    except msgspec.ValidationError as exc:
        raise AgentCliError(
            f"{cli.name}: its {role} envelope does not validate: {one_line(str(exc))}"
        ) from None
    return msgspec.json.encode(roles.with_usage(role, valid, answer))
