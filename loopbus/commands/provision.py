"""``loopbus provision``: create the log and its buckets on a server or cluster, then exit.

``loopbus up`` provisions its embedded server itself; this command is for a server loopbus
did not start — the compose cluster's one-shot ``provision`` service runs it with
``--replicas 3``. Safe to run any number of times: an existing log is left as it is.

It connects with the ``admin`` credential (``--creds``), the only one that may create the
log. It refuses a log that does not start at sequence 1, or a missing log where the
buckets show one existed, unless ``--adopt`` says that is intended (docs/security.md).

``--creds-out DIR`` connects to nothing: it writes every role's credential, a CA and the
nodes' certificate, and the nodes' ``nats.conf`` into DIR, for a deployment to mount as
secrets (docs/deploy.md).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from bus import LOG_STREAM, BusUnreachable, ensure_log
from bus.auth import authorization_block
from bus.creds import all_credentials, ensure_defaults
from bus.history import HistoryMissing, StreamNotAtStart, check_history
from bus.private import private_dir, write_private
from bus.tls import ensure_tls, tls_block
from loopbus.errors import LoopbusError, UsageError
from loopbus.seconds import seconds
from loopbus.settings import Connection, add_connection, connection

RETRY_EVERY_S = 1.0


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "provision", help="create the log and buckets (idempotent) on an existing server"
    )
    add_connection(parser, role="admin")
    parser.add_argument(
        "--adopt",
        action="store_true",
        help="accept a log that does not start at sequence 1 (or re-create one the buckets "
        "show existed): history was removed and you mean to go on",
    )
    parser.add_argument(
        "--creds-out",
        type=Path,
        default=None,
        metavar="DIR",
        help="write every role's credential and the servers' auth.conf into DIR (kept if "
        "there), then exit without connecting",
    )
    parser.add_argument(
        "--tls-hosts",
        default=DEFAULT_TLS_HOSTS,
        metavar="NAMES",
        help="with --creds-out: the names and addresses the nodes' certificate covers "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="copies of the log and buckets: 1 on one server, 3 on a 3-node cluster",
    )
    parser.add_argument(
        "--wait",
        type=seconds(zero="0 does not retry"),
        default=0.0,
        metavar="SECONDS",
        help="keep retrying this long while the server or cluster is not ready (default 0)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.creds_out is not None:
        hosts = [h.strip() for h in args.tls_hosts.split(",") if h.strip()]
        return write_creds(args.creds_out, hosts)
    if args.replicas < 1:
        raise UsageError(f"--replicas {args.replicas}: give 1 or more (3 on a 3-node cluster)")
    conn = connection(args)
    url = conn.url
    replicas = asyncio.run(_provision(conn, args.replicas, args.wait, args.adopt))
    if replicas != args.replicas:
        raise LoopbusError(
            f"stream {LOG_STREAM} at {url} already exists with {replicas} replica(s), not "
            f"{args.replicas}; provisioning never changes an existing log (scale it with "
            f"`nats stream edit {LOG_STREAM} --replicas {args.replicas}`)"
        )
    print(
        f"loopbus: log provisioned at {url} (stream {LOG_STREAM}, {replicas} replica(s), "
        "deny delete, deny purge)",
        flush=True,
    )
    return 0


SECRET = "/run/secrets/"
NODE_CONFIG = "nats.conf"
DEFAULT_TLS_HOSTS = "n1,n2,n3,localhost,127.0.0.1"


def make_secrets(folder: Path, hosts: list[str]) -> list[Path]:
    """Each role's credential, the deployment's CA and node certificate (made once, then
    kept), and ``nats.conf``, the nodes' users and TLS, regenerated from them. The config
    names the other files by the paths compose mounts them at (``/run/secrets/<name>``)."""
    private_dir(folder)
    creds = folder / "creds"
    made = ensure_defaults(creds)
    made += ensure_tls(folder / "tls", hosts)
    users = [c.user for c in all_credentials(creds)]
    tls = tls_block(f"{SECRET}nats_tls_cert", f"{SECRET}nats_tls_key", f"{SECRET}loopbus_ca")
    write_private(folder / NODE_CONFIG, authorization_block(users) + tls)
    return made


def write_creds(folder: Path, hosts: list[str]) -> int:
    try:
        made = make_secrets(folder, hosts)
    except OSError as exc:
        raise UsageError(
            f"--creds-out {str(folder)!r} cannot be written ({exc.strerror}); pass a "
            "directory you can write to"
        ) from exc
    for path in made:
        print(f"loopbus: wrote {path}")
    print(
        f"loopbus: {folder / NODE_CONFIG} admits the credentials in {folder / 'creds'} and "
        f"serves TLS for {', '.join(hosts)} with the CA in {folder / 'tls'}; see docs/deploy.md"
    )
    return 0


async def _provision(conn: Connection, replicas: int, wait_s: float, adopt: bool = False) -> int:
    """Provision, retrying until ``wait_s`` has passed; return the log's replica count.

    A cluster that has just started may accept connections before JetStream has elected
    its meta leader, so a refusal is retried rather than reported at once.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while True:
        try:
            bus = await conn.open_lasting("loopbus-provision")
            try:
                await check_history(bus, adopt)
                await ensure_log(bus.js, replicas=replicas)
                info = await bus.stream_info()
            finally:
                await bus.close()
            return int(info.config.num_replicas)
        except (HistoryMissing, StreamNotAtStart):
            raise  # a decision for a person, not a state that waiting changes
        except Exception as exc:  # any refusal is retried until the deadline, then reported
            if loop.time() + RETRY_EVERY_S > deadline:
                if isinstance(exc, BusUnreachable):
                    raise
                raise LoopbusError(
                    f"could not provision the log at {conn.url}: {type(exc).__name__}: {exc}"
                ) from exc
        await asyncio.sleep(RETRY_EVERY_S)
