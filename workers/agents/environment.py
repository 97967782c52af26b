"""What every agent command gets from the host: its environment, and the interpreters and
packages it may read.

One function builds the environment of every agent (builder, reviewer, investigator and
any role added later): nothing of the daemon's environment but :data:`KEPT_ENV` (no
``LOOPBUS_*``, no NATS address, no credential, no token of any kind), the project's
interpreter first on ``PATH``, loopbus's own interpreter right after it (so the agents
loopbus ships, ``python -m loopbus.scripted.builder``, run however loopbus was installed:
an activated virtual environment, its absolute path, pipx), and ``HOME`` and ``TMPDIR`` in
the private temporary directory the executor gives the run.

:func:`loopbus_paths` names what an executor must show the command read-only for those
shipped agents to run inside a sandbox.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

KEPT_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "TERM")
"""The only variables an agent inherits from the daemon (``PATH`` after the interpreters)."""

PACKAGES = ("loopbus", "bus", "projections", "schemas", "workers")
"""loopbus's packages: an editable install maps each to its own folder of a checkout."""

PLACEHOLDER_TMP = "/tmp"
"""``HOME`` and ``TMPDIR`` until the executor points them at the run's private directory."""


def agent_env(
    extra: Mapping[str, str],
    *,
    project_bin: str | None = None,
    environ: Mapping[str, str] | None = None,
    passed: Iterable[str] = (),
) -> dict[str, str]:
    """The whole environment of one agent run.

    ``extra`` is the role's own variables (``LOOPBUS_UNIT`` …, documented per role);
    ``project_bin`` the folder of ``[project] python``; ``environ`` the daemon's
    environment (``os.environ`` when ``None``), of which only :data:`KEPT_ENV` and the
    names in ``passed`` (``[agents] env``, validated when the config is read) are kept.
    A passed name the daemon's environment lacks is simply absent.
    """
    source = os.environ if environ is None else environ
    env = {k: source[k] for k in (*KEPT_ENV, *passed) if k in source}
    own = os.path.dirname(sys.executable)
    first = [d for d in (project_bin, own) if d]
    rest = env.get("PATH", os.defpath)
    env["PATH"] = os.pathsep.join(dict.fromkeys([*first, *rest.split(os.pathsep)]))
    env.setdefault("LANG", "C.UTF-8")
    env.update(
        {
            "HOME": PLACEHOLDER_TMP,
            "TMPDIR": PLACEHOLDER_TMP,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra)
    return env


def loopbus_paths() -> tuple[Path, ...]:
    """What an agent must read to run loopbus's own interpreter and packages: the
    interpreter's prefixes (the virtual environment and the Python it was made from) and
    each package folder outside them (an editable install points into a source checkout:
    only the package folders are named, never the checkout, which may hold a data
    directory)."""
    prefixes = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    prefixes.append(str(Path(sys.executable).resolve().parent.parent))
    folders: list[str] = []
    for name in PACKAGES:
        try:
            module = __import__(name, fromlist=["__path__"])
        except ImportError:
            continue
        folders.extend(getattr(module, "__path__", []))
    return outermost([*prefixes, *folders])


def interpreter_paths(python_bin: str | None) -> tuple[Path, ...]:
    """The prefixes of the project's interpreter (``[project] python``'s folder): its
    virtual environment and the Python that made it."""
    if not python_bin:
        return ()
    folder = Path(python_bin)
    # A virtual environment's root (its pyvenv.cfg says so) holds its site-packages; any
    # other folder is shown alone: the parent of ~/bin is a home folder.
    found = [folder.parent if (folder.parent / "pyvenv.cfg").exists() else folder]
    for name in ("python", "python3"):
        candidate = folder / name
        if candidate.exists():
            found.append(candidate.resolve().parent.parent)
            break
    return outermost(str(p) for p in found)


def outermost(paths: Iterable[str]) -> tuple[Path, ...]:
    """Existing absolute ``paths``, each as named and resolved (a link must lead to the
    same place inside a sandbox), without any that another one contains."""
    named = [Path(os.path.normpath(p)) for p in paths if p and os.path.isabs(p)]
    every = sorted({*named, *(p.resolve() for p in named)})
    kept: list[Path] = []
    for path in every:
        if path == Path("/") or not path.exists():
            continue
        if not any(path.is_relative_to(other) for other in kept):
            kept.append(path)
    return tuple(kept)


def closed_to_others(path: str | Path) -> Path | None:
    """The first folder on the way to ``path`` that a user other than its owner may not
    enter; ``None`` if there is none. The way is the kernel's: each name looked up in turn,
    a link (the last name's or a folder's in the middle) replaced by its target, so every
    folder a lookup passes through is checked. A run whose only fence is its own uid cannot
    start a program behind such a folder (a pyenv Python under ``/root``)."""
    here = Path("/")
    pending = list(Path(os.getcwd(), path).parts[1:])  # ".." as the kernel takes it
    links = 0
    while pending:
        try:
            if not os.stat(here).st_mode & 0o001:
                return here
        except (FileNotFoundError, NotADirectoryError):
            return None  # nothing there: nothing closed on the way
        except OSError:
            return here
        name = pending.pop(0)
        step = here / name
        if name == "..":
            here = here.parent
        elif step.is_symlink():
            links += 1
            if links > 40:  # the kernel's own limit on links followed
                return None
            target = Path(os.readlink(step))
            pending[:0] = target.parts[1:] if target.is_absolute() else target.parts
            here = Path("/") if target.is_absolute() else here
        else:
            here = step
    return None
