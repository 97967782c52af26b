"""The runner's ed25519 key: created once in a per-user folder, used to sign results.

The key is ``<key dir>/<name>.key`` (PKCS#8 PEM, mode 0600, in a folder made 0700). The key
dir is ``<data dir>/keys`` when a data directory is given explicitly (``--data-dir``, and
``loopbus up`` passes its own), else ``$LOOPBUS_KEY_DIR``, else
``$XDG_DATA_HOME/loopbus/keys``, else ``~/.local/share/loopbus/keys`` — never the current
directory, which is often the repository being gated. The runner id that results carry is
``<name>-<first 12 hex of sha256(public key)>``, so a new key is a new runner id rather
than a silent change of what an old id's signatures mean.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import msgspec
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from bus.private import private_dir
from schemas import Actor
from schemas.gates import GateRunnerKeyRegistered, SignedGateEvent, canonical_bytes
from workers.errors import GateError
from workers.gates.key_names import DEFAULT_NAME, KEY_DIR_ENV

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,48}\Z")

E = TypeVar("E", bound=SignedGateEvent)


@dataclass(frozen=True)
class Signer:
    """A loaded key and the runner id it stands for."""

    name: str
    key: Ed25519PrivateKey
    path: Path

    @property
    def public_key_b64(self) -> str:
        raw = self.key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        return base64.b64encode(raw).decode()

    @property
    def runner(self) -> str:
        digest = hashlib.sha256(base64.b64decode(self.public_key_b64)).hexdigest()
        return f"{self.name}-{digest[:12]}"

    def sign(self, event: E) -> E:
        """``event`` with its ``signature`` set over its canonical bytes."""
        signature = base64.b64encode(self.key.sign(canonical_bytes(event))).decode()
        return msgspec.structs.replace(event, signature=signature)

    def registration(self, project: str, actor: Actor) -> GateRunnerKeyRegistered:
        return GateRunnerKeyRegistered(
            project=project, actor=actor, runner=self.runner, public_key=self.public_key_b64
        )


def key_dir(data_dir: Path | None = None) -> Path:
    """The folder keys live in: ``data_dir/keys`` when given, else the per-user default."""
    if data_dir is not None:
        return data_dir / "keys"
    explicit = os.environ.get(KEY_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME", "")
    if os.path.isabs(xdg):  # the XDG spec says to ignore a relative value
        return Path(xdg) / "loopbus" / "keys"
    try:
        home = Path.home()
    except RuntimeError as exc:  # no $HOME and no password entry
        raise GateError(
            f"no home directory for the runner key: set {KEY_DIR_ENV} or pass --data-dir"
        ) from exc
    return home / ".local" / "share" / "loopbus" / "keys"


def key_path(data_dir: Path | None = None, name: str = DEFAULT_NAME) -> Path:
    """Where the key named ``name`` lives (nothing is read or created)."""
    if not _NAME.match(name):
        raise GateError(
            f"--runner-name {name!r} is not valid: use 1-48 letters, digits, '-' or '_'"
        )
    return key_dir(data_dir) / f"{name}.key"


def load_existing(data_dir: Path | None = None, name: str = DEFAULT_NAME) -> Signer | None:
    """The key named ``name`` when it already exists (``None`` when not); creates nothing."""
    path = key_path(data_dir, name)
    try:
        return _load(path, name)
    except OSError as exc:
        raise GateError(_unusable(path, exc)) from exc


def load_or_create(data_dir: Path | None = None, name: str = DEFAULT_NAME) -> Signer:
    """The key named ``name`` (see :func:`key_dir` for where), created on first use."""
    path = key_path(data_dir, name)
    try:
        for _ in range(2):  # a lost race to create it is won by a key we can then load
            signer = _load(path, name) or _create(path, name)
            if signer is not None:
                return signer
    except OSError as exc:
        raise GateError(_unusable(path, exc)) from exc
    raise GateError(f"{path} exists but cannot be read (a dangling link?): remove it")


def _unusable(path: Path, exc: OSError) -> str:
    where = exc.filename or path
    return (
        f"cannot keep the runner key at {path}: {where}: {exc.strerror or exc}; pass "
        f"--data-dir DIR (keys go in DIR/keys) or set {KEY_DIR_ENV} to a folder you can write"
    )


def _load(path: Path, name: str) -> Signer | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise GateError(
            f"{path} is not an unencrypted ed25519 PEM key ({exc}); move it aside to "
            "create a new one (results will then carry a new runner id)"
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise GateError(f"{path} holds a {type(key).__name__}, not an ed25519 key")
    return Signer(name, key, path)


def _create(path: Path, name: str) -> Signer | None:
    """A new key at ``path``; ``None`` when another process created one first."""
    folder = path.parent
    private_dir(folder)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    # Write aside, then link into place: a concurrent reader never sees a half-written key,
    # and of two processes creating it at once, exactly one key wins.
    tmp = folder / f".{name}.key.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), 0o600)  # a stale file of ours may have had another mode
            out.write(pem)
        os.link(tmp, path)
    except FileExistsError:
        return None
    finally:
        tmp.unlink(missing_ok=True)
    return Signer(name, key, path)
