"""What a check's cached result depends on besides the project's files and configuration:
the interpreter it ran with and whether it ran in the agent sandbox.

A cached result answers every later ask with the same key, on any runner that shares the
project's cache. Two runners that differ in either of these measure different things:

* **the interpreter.** Without ``[project] python`` a check's ``python`` is the one the
  runner itself runs with, which differs between machines (3.11 here, 3.12 there); with
  it, the named path may hold different interpreters on different machines. Either way
  the key names the interpreter's bytes, not its path.
* **the fence.** A check run unfenced could read what a sandboxed one cannot (the data
  directory, other checkouts) and a hostile ``conftest.py`` can tell the two apart, so a
  result from an unfenced runner must not answer for a fenced one, nor the reverse.

A check that names an ``image`` runs in that image on every runner: its interpreter is
the image's and no host fence applies, so neither goes into its key.
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys

from workers.gates.config import CheckSpec, ProjectConfig
from workers.gates.environment import interpreter_dir

_IDENTITIES: dict[tuple[str, int, int], str] = {}
"""Interpreter digests by (resolved path, size, mtime): hashing a binary once per process."""


def interpreter_identity(python: str) -> str:
    """A digest of the interpreter a check's ``python`` resolves to (``python`` empty:
    the runner's own), with the platform; ``missing:<name>`` when there is none here (the
    run is then an error saying so, and an error is never cached)."""
    if python:
        folder = interpreter_dir(python)
        if folder is None:
            return f"missing:{python}"
        path = os.path.join(folder, os.path.basename(python))
    else:
        path = sys.executable
    real = os.path.realpath(path)
    try:
        stat = os.stat(real)
    except OSError:
        return f"missing:{python or path}"
    memo = (real, stat.st_size, stat.st_mtime_ns)
    known = _IDENTITIES.get(memo)
    if known is None:
        digest = hashlib.sha256()
        with open(real, "rb") as binary:
            for block in iter(lambda: binary.read(1 << 20), b""):
                digest.update(block)
        known = _IDENTITIES[memo] = digest.hexdigest()[:32]
    return f"{platform.system()}-{platform.machine()}:{known}"


def host_salt(config: ProjectConfig, spec: CheckSpec, *, fenced: bool) -> str:
    """The salt of ``spec``'s cache key on this runner: the project's own salt, then the
    interpreter and the fence for a check that runs on the host."""
    if spec.image is not None:
        return config.cache_salt
    fence = "fenced" if fenced else "unfenced"
    return f"{config.cache_salt}|{fence}|interpreter={interpreter_identity(config.python)}"
