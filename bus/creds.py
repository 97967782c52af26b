"""Credential files: one nkey per role and principal, under ``<data-dir>/creds/`` (mode 0600).

Why nkeys rather than user/password: the server's configuration holds only public keys, so
a copy of it (or of a compose file, or of a log) gives nobody a credential, and the secret
(the seed) never crosses the wire — the client signs the server's nonce with it.

A file is JSON: ``{"version": 1, "role": ..., "principal": ..., "seed": ..., "public_key":
...}``. The role and principal are in the file so that a command knows which role it speaks
as (and refuses, before publishing, what the server would refuse).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import msgspec
import nkeys  # type: ignore[import-untyped]

from bus.auth import CRED_ROLES, CredRole, Permissions, User, permissions
from bus.errors import CredentialsInvalid
from bus.names import CREDS_ENV as CREDS_ENV
from bus.private import private_dir
from schemas.ids import is_token

CREDS_DIR = "creds"

DEFAULT_PRINCIPALS: dict[CredRole, str] = {
    "admin": "admin",
    "system": "loopbus",
    "operator": "operator",
    "reader": "reader",
    "agent": "agent",
}
"""The principal of each credential ``loopbus up`` makes on its first start."""


class CredentialFile(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    role: str
    principal: str
    seed: str
    public_key: str


@dataclass(frozen=True)
class Credential:
    """A loaded credential: who it is, and the seed that proves it."""

    role: CredRole
    principal: str
    seed: str
    public_key: str
    path: Path | None = None

    @cached_property
    def permissions(self) -> Permissions:
        return permissions(self.role, self.principal)

    @property
    def user(self) -> User:
        return User(self.public_key, self.role, self.principal)


def new_credential(role: CredRole, principal: str) -> Credential:
    """A fresh nkey user for ``role``/``principal``."""
    if role not in CRED_ROLES:
        raise CredentialsInvalid(f"role {role!r} is not one of: {', '.join(CRED_ROLES)}")
    if not is_token(principal):
        raise CredentialsInvalid(
            f"principal {principal!r} is not one subject token: use letters, digits, '_' or "
            "'-' (max 64)"
        )
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    public = nkeys.from_seed(bytearray(seed)).public_key
    return Credential(role, principal, seed.decode(), public.decode())


def file_name(role: CredRole, principal: str) -> str:
    """``<role>.json`` for a role's default credential, ``<role>-<principal>.json`` else."""
    default = DEFAULT_PRINCIPALS[role] == principal
    return f"{role}.json" if default else f"{role}-{principal}.json"


def write_credential(folder: Path, cred: Credential) -> Path:
    """Write ``cred`` into ``folder`` readable by its owner only; returns the path."""
    private_dir(folder)
    path = folder / file_name(cred.role, cred.principal)
    body = CredentialFile(
        role=cred.role, principal=cred.principal, seed=cred.seed, public_key=cred.public_key
    )
    # Created 0600 from the start: never a moment when another user could read the seed.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(msgspec.json.format(msgspec.json.encode(body)) + b"\n")
    os.chmod(path, 0o600)
    return path


def load_credential(path: Path) -> Credential:
    """Read a credential file; one clear line when it is missing or not one."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CredentialsInvalid(
            f"credentials file {str(path)!r} cannot be read ({exc.strerror}); pass the file "
            "`loopbus up` printed, or `loopbus creds add` one"
        ) from exc
    try:
        body = msgspec.json.decode(raw, type=CredentialFile)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise CredentialsInvalid(
            f"credentials file {str(path)!r} is not a loopbus credential ({exc})"
        ) from exc
    if body.role not in CRED_ROLES:
        raise CredentialsInvalid(
            f"credentials file {str(path)!r}: role {body.role!r} is not one of: "
            f"{', '.join(CRED_ROLES)}"
        )
    try:
        public = nkeys.from_seed(bytearray(body.seed.encode())).public_key.decode()
    except Exception as exc:  # nkeys raises its own errors and binascii's
        raise CredentialsInvalid(f"credentials file {str(path)!r}: the seed is invalid") from exc
    if public != body.public_key:
        raise CredentialsInvalid(
            f"credentials file {str(path)!r}: the public key does not match the seed"
        )
    role = body.role  # narrowed to a CredRole by the check above
    return Credential(role, body.principal, body.seed, public, path)


def creds_dir(data_dir: Path) -> Path:
    return data_dir / CREDS_DIR


def default_file(data_dir: Path, role: CredRole) -> Path:
    """Where ``up`` keeps a role's default credential."""
    return creds_dir(data_dir) / file_name(role, DEFAULT_PRINCIPALS[role])


def ensure_defaults(folder: Path) -> list[Path]:
    """Make each role's default credential unless it exists; returns the ones made."""
    made = []
    for role in CRED_ROLES:
        path = folder / file_name(role, DEFAULT_PRINCIPALS[role])
        if not path.exists():
            made.append(write_credential(folder, new_credential(role, DEFAULT_PRINCIPALS[role])))
    return made


def all_credentials(folder: Path) -> list[Credential]:
    """Every credential file in ``folder`` (the server's users)."""
    return [load_credential(p) for p in sorted(folder.glob("*.json"))]
