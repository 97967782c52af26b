"""Where loopbus finds things: the NATS URL, the project, the data directory, defaults.

Every command that talks to the bus registers its connection options with
:func:`add_connection` and connects through :func:`connection`, so a new connection option (a
credentials file, TLS) is one line here. Every command that works on one project registers
``--project`` with :func:`add_project`; the CLI fills a missing one from the environment or
the repository's ``loopbus.toml`` (:func:`resolve_project`) before the command runs.

Precedence is the usual one (git, nats): the command line, then the environment, then the
configuration file found by walking up from the current directory.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bus.names import CREDS_ENV as CREDS_ENV
from bus.names import DEFAULT_URL as DEFAULT_NATS_URL
from bus.names import NATS_URL_ENV as NATS_URL_ENV
from bus.names import TLS_CA_ENV as TLS_CA_ENV
from bus.names import nats_url_from
from loopbus.errors import UsageError
from schemas.project_config import CONFIG_FILE as CONFIG_FILE

# Every command registers its options from here, including ``--help`` and commands that
# never connect: the bus (nats-py), the credential files (nkeys) and the schemas (msgspec)
# are imported by the functions that use them, so parsing arguments costs none of them.
if TYPE_CHECKING:
    from bus import Bus
    from bus.auth import CredRole
    from bus.creds import Credential

PROJECT_ENV = "LOOPBUS_PROJECT"
DEFAULT_DATA_DIR = Path(".loopbus")
DATA_DIR_ENV = "LOOPBUS_DATA_DIR"
DEFAULT_HEARTBEAT_LAPSE = "5m"

_PROJECT_MODE = "project_mode"
"""Namespace attribute add_project sets: 'required' or 'optional' (tail: default all)."""


# -- connection ------------------------------------------------------------------------


def default_nats_url() -> str:
    """``LOOPBUS_NATS_URL`` when set; else the address the running ``loopbus up`` of this
    directory's data directory serves (see :func:`creds_data_dir`; it moves off 4222 when
    that port is taken); else the embedded server's default address."""
    if os.environ.get(NATS_URL_ENV):
        return nats_url_from(os.environ)
    from loopbus import served_url

    return served_url.read(creds_data_dir()) or nats_url_from(os.environ)


def default_data_dir() -> Path:
    """``$LOOPBUS_DATA_DIR`` when set, else ``.loopbus`` (where ``loopbus up`` keeps its data)."""
    return Path(os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR)


def creds_data_dir() -> Path:
    """Where a command looks for its role's credential: ``$LOOPBUS_DATA_DIR`` when set,
    else the nearest ``.loopbus`` holding credentials in this directory or one above it
    (``loopbus up --repo calc`` keeps them beside ``calc``, and people ``cd calc``)."""
    if os.environ.get(DATA_DIR_ENV):
        return Path(os.environ[DATA_DIR_ENV])
    here = Path.cwd()
    for folder in (here, *here.parents):
        candidate = folder / DEFAULT_DATA_DIR
        if (candidate / "creds").is_dir():
            return candidate
    return Path(DEFAULT_DATA_DIR)


def add_connection(parser: Any, *, url_help: str | None = None, role: CredRole = "reader") -> None:
    """The connection options every command that talks to the bus takes (``--nats-url``,
    ``--creds``). ``role`` is the credential the command uses when none is named: the
    one ``loopbus up`` made for that role in the default data directory."""
    parser.add_argument(
        "--nats-url",
        default=None,
        metavar="URL",
        help=url_help
        or f"NATS server to use (default: ${NATS_URL_ENV}, else the running `loopbus up`'s, "
        f"found beside the credentials, else {DEFAULT_NATS_URL})",
    )
    parser.add_argument(
        "--creds",
        type=Path,
        default=None,
        metavar="FILE",
        help=f"credentials file (default: ${CREDS_ENV}, else the {role} credential in "
        f"${DATA_DIR_ENV} or {DEFAULT_DATA_DIR}/creds/ when there is one)",
    )
    parser.add_argument(
        "--tls-ca",
        type=Path,
        default=None,
        metavar="FILE",
        help=f"the CA to trust for a tls:// server (default: ${TLS_CA_ENV})",
    )
    parser.set_defaults(creds_role=role)


def tls_ca(args: argparse.Namespace) -> Path | None:
    named = getattr(args, "tls_ca", None) or os.environ.get(TLS_CA_ENV)
    return Path(named) if named else None


def credential(args: argparse.Namespace) -> Credential | None:
    """The credential a command connects with: ``--creds``, else ``$LOOPBUS_CREDS``, else
    its role's default in the data directory; ``None`` when there is none (a server run
    without authorization). Loaded once per command."""
    cached = getattr(args, "_credential", False)
    if cached is not False:
        return cached  # type: ignore[no-any-return]
    from bus.creds import default_file, load_credential

    named = getattr(args, "creds", None) or os.environ.get(CREDS_ENV)
    found: Credential | None
    if named:
        found = load_credential(Path(named))
    else:
        path = default_file(creds_data_dir(), getattr(args, "creds_role", "reader"))
        found = load_credential(path) if path.exists() else None
    args._credential = found
    return found


def nats_url(args: argparse.Namespace) -> str:
    return str(getattr(args, "nats_url", None) or default_nats_url())


@dataclass(frozen=True)
class Connection:
    """How one command reaches the bus, from the options :func:`add_connection` registered."""

    url: str
    creds: Credential | None = None
    tls_ca: Path | None = None

    async def open(self) -> Bus:
        """A one-shot command's connection: the first failure is reported, not retried."""
        from bus import connect_once

        return await connect_once(self.url, creds=self.creds, tls_ca=self.tls_ca)

    async def open_lasting(self, name: str) -> Bus:
        """A connection that rides through server restarts (``up``, ``provision --wait``)."""
        from bus import connect

        return await connect(self.url, name=name, creds=self.creds, tls_ca=self.tls_ca)


def connection(
    args: argparse.Namespace, url: str | None = None, creds: Credential | None = None
) -> Connection:
    """The connection ``args`` describe (to ``url`` and with ``creds`` instead, for up's
    embedded server)."""
    return Connection(
        url=url or nats_url(args), creds=creds or credential(args), tls_ca=tls_ca(args)
    )


# -- project ---------------------------------------------------------------------------


def add_project(parser: Any, *, required: bool = True, help: str | None = None) -> None:
    """``--project``, defaulting to ``$LOOPBUS_PROJECT`` or the nearest ``loopbus.toml``.

    ``parser`` may be an argument group (a mutually exclusive one, for ``tail``).
    """
    default = (
        f"default: ${PROJECT_ENV}, else [project] id of the nearest {CONFIG_FILE}"
        if required
        else f"default: ${PROJECT_ENV}, else the nearest {CONFIG_FILE}'s, else every project"
    )
    parser.add_argument(
        "--project", default=None, metavar="ID", help=f"{help or 'the project'} ({default})"
    )
    parser.set_defaults(**{_PROJECT_MODE: "required" if required else "optional"})


def resolve_project(args: argparse.Namespace, cwd: Path | None = None) -> None:
    """Fill ``args.project`` when the command takes ``--project`` and it was not given.

    A required project that cannot be found is a one-line usage error saying the three
    ways to give one; an optional one (``tail``) stays ``None``, meaning every project.
    """
    mode = getattr(args, _PROJECT_MODE, None)
    if mode is None or args.project is not None or getattr(args, "all_projects", False):
        return
    args.project = default_project(cwd)
    if args.project is None and mode == "required":
        raise UsageError(
            f"no project: pass --project ID, set {PROJECT_ENV}, or run inside a repository "
            f"whose {CONFIG_FILE} has [project] id"
        )


def default_project(cwd: Path | None = None) -> str | None:
    """``$LOOPBUS_PROJECT``, else ``[project] id`` of the nearest ``loopbus.toml``, else None."""
    from schemas.ids import is_token

    from_env = os.environ.get(PROJECT_ENV)
    if from_env:
        if not is_token(from_env):
            raise UsageError(
                f"${PROJECT_ENV} {from_env!r} is not a valid project id: use letters, digits, "
                "'_' or '-' (max 64), or unset it and pass --project"
            )
        return from_env
    config = find_config(cwd or Path.cwd())
    return None if config is None else project_of(config)


def find_config(start: Path) -> Path | None:
    """The first ``loopbus.toml`` in ``start`` or one of its parents, as git finds ``.git``."""
    for folder in (start, *start.parents):
        candidate = folder / CONFIG_FILE
        if candidate.is_file():
            return candidate
    return None


def project_of(config: Path) -> str:
    """``[project] id`` of a ``loopbus.toml``; a one-line usage error naming the file if not."""
    try:
        document = tomllib.loads(config.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{config}: cannot be read ({exc}); fix it, or pass --project") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{config}: not valid TOML ({exc}); fix it, or pass --project") from exc
    table = document.get("project")
    value = table.get("id") if isinstance(table, dict) else None
    from schemas.ids import is_token

    if value is None:
        raise UsageError(
            f'{config} has no [project] id; add id = "<project>" under [project], or pass '
            f"--project / set {PROJECT_ENV}"
        )
    if not isinstance(value, str) or not is_token(value):
        raise UsageError(
            f"{config}: [project] id {value!r} is not a valid project id: use letters, "
            "digits, '_' or '-' (max 64)"
        )
    return value
