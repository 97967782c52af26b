"""The runner's ed25519 key: created once under the data directory, used to sign results.

The key lives at ``<data dir>/keys/<name>.key`` (PKCS#8 PEM, mode 0600). The runner id
that results carry is ``<name>-<first 12 hex of sha256(public key)>``, so a new key is a
new runner id rather than a silent change of what an old id's signatures mean.
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

from schemas import Actor
from schemas.gates import GateRunnerKeyRegistered, SignedGateEvent, canonical_bytes
from workers.gate_runner.errors import GateRunnerError

DEFAULT_NAME = "gate-runner"
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,48}$")

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


def load_or_create(data_dir: Path, name: str = DEFAULT_NAME) -> Signer:
    """The key named ``name`` under ``data_dir/keys``, created on first use."""
    if not _NAME.match(name):
        raise GateRunnerError(
            f"--runner-name {name!r} is not valid: use 1-48 letters, digits, '-' or '_'"
        )
    folder = data_dir / "keys"
    path = folder / f"{name}.key"
    if path.exists():
        try:
            key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        except (ValueError, TypeError) as exc:
            raise GateRunnerError(
                f"{path} is not an unencrypted ed25519 PEM key ({exc}); move it aside to "
                "create a new one (results will then carry a new runner id)"
            ) from exc
        if not isinstance(key, Ed25519PrivateKey):
            raise GateRunnerError(f"{path} holds a {type(key).__name__}, not an ed25519 key")
        return Signer(name, key, path)
    folder.mkdir(parents=True, exist_ok=True)
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
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return load_or_create(data_dir, name)
    finally:
        tmp.unlink()
    return Signer(name, key, path)
