"""The secrets compose.yaml mounts: made by ``loopbus provision --creds-out secrets``,
checked to serve the address the host uses, and made readable by the containers' user.

Compose bind-mounts a file secret with the host file's owner and mode (outside Swarm it
ignores a secret's ``uid``/``gid``/``mode``), and loopbus writes credentials and keys 0600:
the image's non-root user could not read them. The files compose mounts are therefore
given to the image user's group (read only); the credentials compose does not mount (the
operator's, reader's and agent's, handed to people and agents) stay private to their owner.
"""

from __future__ import annotations

import ipaddress
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .shell import CheckFailed, run

HOST_ADDRESS = "127.0.0.1"  # compose.yaml publishes the nodes' client ports here


@dataclass
class Secrets:
    folder: Path
    existed: bool  # there before this run: kept at cleanup; else removed


def mounted(config: dict[str, Any]) -> list[Path]:
    """The host files compose mounts as file secrets (``docker compose config`` gives their
    absolute paths), in the order the file lists them."""
    return [Path(s["file"]) for s in (config.get("secrets") or {}).values() if s.get("file")]


def certificate_names(pem: bytes) -> set[str]:
    """The DNS names and IP addresses a certificate's subjectAltName covers."""
    from cryptography import x509

    cert = x509.load_pem_x509_certificate(pem)
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    names = set(san.get_values_for_type(x509.DNSName))
    return names | {str(ip) for ip in san.get_values_for_type(x509.IPAddress)}


def covers(names: set[str], host: str) -> bool:
    """Whether a certificate with ``names`` is valid for ``host`` (an address or a name)."""
    try:
        return str(ipaddress.ip_address(host)) in names
    except ValueError:
        return host.lower() in {n.lower() for n in names}


def share_with_group(path: Path, gid: int) -> None:
    """Let group ``gid`` read ``path`` (the other mode bits unchanged)."""
    try:
        shutil.chown(path, group=gid)
        path.chmod((path.stat().st_mode & 0o777) | 0o040)
    except OSError as exc:
        raise CheckFailed(
            f"cannot give group {gid} (the image's user) read access to {path} "
            f"({exc.strerror}); run compose-check as root, or `chgrp {gid}` and "
            "`chmod g+r` the files compose mounts yourself"
        ) from exc


def before(root: Path) -> Secrets:
    """The secrets folder compose.yaml names, and whether it is there before this run."""
    folder = root / "secrets"
    return Secrets(folder, existed=folder.exists())


def make(made: Secrets, config: dict[str, Any], loopbus: list[str], log: Path) -> None:
    """Run ``loopbus provision --creds-out secrets`` (it keeps what exists) and check that
    every file compose mounts is there and the node certificate covers the host's address."""
    folder = made.folder
    run([*loopbus, "provision", "--creds-out", str(folder)], log=log, cwd=folder.parent)
    files = mounted(config)
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise CheckFailed(f"`loopbus provision --creds-out` did not write {', '.join(missing)}")
    node = folder / "tls" / "node.pem"
    names = certificate_names(node.read_bytes())
    if not covers(names, HOST_ADDRESS):
        raise CheckFailed(
            f"{node} covers {', '.join(sorted(names))}, not {HOST_ADDRESS} (where the host "
            f"reaches the nodes); remove {folder / 'tls'} and run `loopbus provision "
            "--creds-out secrets` again (its default --tls-hosts include it)"
        )


def host_readers(gid: int) -> list[str]:
    """Host accounts in group ``gid`` (as a member or as their primary group): each could
    read the system and admin credentials once they are shared with that group."""
    import grp
    import pwd

    try:
        members = set(grp.getgrgid(gid).gr_mem)
    except KeyError:
        members = set()
    primary = {user.pw_name for user in pwd.getpwall() if user.pw_gid == gid}
    return sorted(members | primary)


def share(config: dict[str, Any], gid: int, readers: list[str] | None = None) -> list[Path]:
    """Give the files compose mounts to group ``gid``; refused while any host account is
    in that group (``readers``: :func:`host_readers` unless given)."""
    found = host_readers(gid) if readers is None else readers
    if found:
        raise CheckFailed(
            f"host accounts {', '.join(found)} are in group {gid}, the containers' group: "
            "sharing the secrets with it would let them read the system and admin "
            f"credentials; take them out of group {gid} (or use another image user id)"
        )
    files = mounted(config)
    for path in files:
        share_with_group(path, gid)
    return files


def remove(made: Secrets) -> bool:
    """Remove the secrets folder if this run made it; whether it did."""
    if made.existed:
        return False
    shutil.rmtree(made.folder, ignore_errors=True)
    return True
