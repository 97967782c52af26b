"""The order of the check, the figures it prints, and the cleanup that always runs."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from . import cluster, forge, netstate, replicas, secret_files
from .base_image import ensure_base, from_image, labelled_here
from .engine import Engine, ensure_engine, stop_dockerd
from .findings import Client, host_loopbus, open_targets, publish, read_log, read_status
from .outage import Outcome, run_outage
from .shell import CheckFailed, fail, run, say
from .stack import NODE_CLIENT_PORT, Stack

ROOT = Path(__file__).resolve().parents[2]


def positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="deploy/compose-check",
        description="Build the image, make the secrets, run compose.yaml, prove the cluster "
        "(health, R3 log, findings from host and container, an agent's forged fact refused by "
        "the server, a killed leader with nothing lost), take it down.",
        epilog="example: sudo deploy/compose-check --install   (docs/deploy.md)",
    )
    parser.add_argument(
        "--install",
        action="store_true",
        help="install docker.io, debootstrap and the compose v2 plugin if "
        "missing, and start dockerd if none answers (root)",
    )
    parser.add_argument(
        "--outage",
        type=positive,
        default=15.0,
        metavar="SECONDS",
        help="how long the log's leader stays down (default 15)",
    )
    parser.add_argument(
        "--timeout",
        type=positive,
        default=300.0,
        metavar="SECONDS",
        help="longest wait for any one step to become ready (default 300)",
    )
    parser.add_argument(
        "--remove-images",
        action="store_true",
        help="also remove the image built from the Dockerfile and, if this "
        "check built it, the local base image",
    )
    parser.add_argument(
        "--mirror", metavar="URL", help="Debian mirror for the local base image (default: apt's)"
    )
    parser.add_argument("--project", default=f"compose-check-{int(time.time())}",
                        help="loopbus project the check publishes its findings to")  # fmt: skip
    return parser.parse_args(argv)


class Check:
    def __init__(self, args: argparse.Namespace, workdir: Path):
        self.args = args
        self.workdir = workdir
        self.log = workdir / "compose-check.log"
        self.figures: list[tuple[str, str]] = []
        self.engine = Engine()
        self.stack: Stack | None = None
        self.secrets: secret_files.Secrets | None = None
        self.started = time.monotonic()

    def figure(self, label: str, value: str) -> None:
        self.figures.append((label, value))
        say(f"{label}: {value}")

    def timed(self, label: str, step: Callable[[], None]) -> None:
        started = time.monotonic()
        step()
        self.figure(label, f"{time.monotonic() - started:.1f} s")

    # -- the check ---------------------------------------------------------------------

    def execute(self) -> None:
        ensure_engine(self.engine, self.args.install, self.workdir, self.log)
        stack = Stack(ROOT, self.log, replicas.SCALE)
        stack.preflight()
        self.stack = stack
        base = from_image(ROOT / "Dockerfile")
        started = time.monotonic()
        how = ensure_base(base, self.workdir, self.log, self.args.mirror)
        self.figure("base image", f"{base} {how} ({time.monotonic() - started:.1f} s)")
        self.timed("image build (docker compose build)", stack.build)
        self.make_secrets(stack)
        started = time.monotonic()
        stack.up()
        stack.wait_ready(self.args.timeout)
        self.figure(
            f"up -d to all {len(stack.services)} services ready",
            f"{time.monotonic() - started:.1f} s",
        )
        health, _ = cluster.wait_healthy(stack.monitors(), self.args.timeout)
        self.figure(
            "cluster",
            f"meta group {'+'.join(stack.nodes)} (leader {health.meta_leader}); stream "
            f"{cluster.LOG_STREAM} R{health.stream_replicas}, leader {health.stream_leader}, "
            "every replica current",
        )
        client = self.client(stack)
        self.first_findings(client, stack)
        self.scaled(client, stack)
        self.forged_fact(client)
        outcome = run_outage(stack, client, self.args.outage, self.args.timeout)
        self.report_outage(outcome)
        stack.wait_ready(self.args.timeout)
        restarts = {k: v for k, v in stack.restart_counts().items() if v}
        self.figure("container restarts during the check", str(restarts or "none"))

    def make_secrets(self, stack: Stack) -> None:
        # Known before provision runs, so cleanup removes a folder this run made even when
        # a later step fails.
        self.secrets = secret_files.before(ROOT)
        secret_files.make(self.secrets, stack.config, host_loopbus(), self.log)
        gid = stack.user_group()
        shared = secret_files.share(stack.config, gid)
        self.figure(
            "secrets",
            f"{'kept' if self.secrets.existed else 'made'} by `loopbus provision --creds-out "
            f"secrets`; node certificate covers {secret_files.HOST_ADDRESS}; the {len(shared)} "
            f"files compose mounts readable by group {gid} (the image's user)",
        )

    def client(self, stack: Stack) -> Client:
        host = [f"tls://{stack.host_address(n, NODE_CLIENT_PORT)}" for n in stack.nodes]
        inside = [f"tls://{n}:{NODE_CLIENT_PORT}" for n in stack.nodes]
        return Client(self.args.project, ",".join(host), ",".join(inside), self.inside(stack))

    @staticmethod
    def inside(stack: Stack) -> str:
        """A long-running daemon's container to publish from (the projector's)."""
        daemons = [s for s in stack.services.values() if not s.one_shot]
        names = [s.name for s in daemons if s.name not in stack.nodes]
        return "projector" if "projector" in names else names[0]

    def first_findings(self, client: Client, stack: Stack) -> None:
        """One finding from the host, one from a container; both seen by tail and status."""
        started = time.monotonic()
        # The host's finding is the project's first event; the container's follows it.
        host = client.finding("check:compose-host", "published from the host", new=True)
        inside = client.finding("check:compose-container", "published from a container")
        sent = [
            publish(client.host("operator", *host), "host", "check:compose-host"),
            publish(
                client.container(stack.exec(client.container_service), "operator", *inside),
                "container",
                "check:compose-container",
            ),
        ]
        for attempt in sent:
            if not attempt.finding_id:
                raise CheckFailed(f"the {attempt.publisher} could not publish: {attempt.error}")
        wanted = {a.finding_id: a.seq for a in sent}
        deadline = time.monotonic() + 60
        while True:
            logged = {e["id"]: e["seq"] for e in read_log(client)}
            shown = open_targets(read_status(client))
            if (
                all(logged.get(i) == s for i, s in wanted.items())
                and {a.target for a in sent} <= shown
            ):
                break
            if time.monotonic() > deadline:
                raise CheckFailed("the two findings did not reach both tail and status in 60 s")
            time.sleep(0.5)
        self.figure(
            "finding from the host and from a container",
            f"seq {sent[0].seq} and {sent[1].seq}, both in tail and status after "
            f"{time.monotonic() - started:.1f} s",
        )

    def scaled(self, client: Client, stack: Stack) -> None:
        """Every replica of a scaled service healthy on its own beacon; each gate runner
        with its own key; the project held by one replica of a daemon sharing projects."""
        for service in sorted(stack.scale):
            hosts = replicas.healthy_hosts(stack, client, service)
            self.figure(f"{service} replicas", f"{len(hosts)} healthy, each on its own beacon")
        ids = replicas.runner_ids(stack)
        self.figure("gate-runner keys", f"{len(ids)} of their own: {', '.join(ids)}")
        held = replicas.shared_project(client, min(self.args.timeout, 120.0))
        self.figure(
            f"project held by one {replicas.SHARING} replica of {stack.replicas(replicas.SHARING)}",
            f"{held.holder} ({held.takings} taking(s), {held.handovers} handover(s))",
        )

    def forged_fact(self, client: Client) -> None:
        """The agent credential publishes a fact (its unit done, as `system`): the server
        must refuse it, and it must not be on the log."""
        done = run(client.forge(), timeout=120)
        forgery = forge.parse(done.stdout.strip().splitlines()[-1])
        if forgery.seq is not None:
            raise CheckFailed(
                f"the server ACCEPTED a fact from the agent credential: {forgery.subject} "
                f"stored at seq {forgery.seq}"
            )
        if not forgery.refused:
            raise CheckFailed(
                f"the agent's fact on {forgery.subject} got no permissions violation from the "
                f"server: {forgery.error or 'no answer'}"
            )
        if any(e["id"] == forgery.event_id for e in read_log(client)):
            raise CheckFailed(f"the agent's refused fact {forgery.event_id} is on the log")
        self.figure(
            "agent credential publishing a fact",
            f"refused by the server ({forgery.refusal}); not on the log",
        )

    def report_outage(self, outcome: Outcome) -> None:
        tally = outcome.tally
        self.figure(
            "leader failover",
            f"{outcome.killed} killed{' (it also led the meta group)' if outcome.led_meta else ''}"
            f"; {outcome.new_leader} elected after "
            f"{outcome.election_s:.1f} s; first acknowledged publish {outcome.first_ack_s:.1f} s "
            "after the kill",
        )
        self.figure(
            f"published while {outcome.killed} was down and back",
            f"{tally.attempted} attempted, {tally.acked} acknowledged, {tally.stored} of "
            f"those stored, {len(tally.lost)} lost; {tally.attempted - tally.acked} refused, "
            f"{tally.stored_unacked} of them stored anyway",
        )
        for error, times in outcome.errors.most_common():
            self.figure("refused publish said", f"{times}x {error}")
        self.figure(
            f"{outcome.killed} back",
            f"down {outcome.down_s:.1f} s; healthy with every replica current "
            f"{outcome.rejoin_s:.1f} s after start; messages per node {outcome.messages}",
        )

    # -- always, even after a failure ----------------------------------------------------

    def cleanup(self, failed: bool) -> list[str]:
        problems: list[str] = []
        steps = [("down", self.take_down), ("secrets", self.remove_secrets),
                 ("images", self.remove_images), ("engine", self.stop_engine)]  # fmt: skip
        for name, step in steps:
            try:
                step(failed)
            except (CheckFailed, OSError) as exc:
                problems.append(f"cleanup ({name}): {exc}")
        return problems

    def take_down(self, failed: bool) -> None:
        if self.stack is None:
            return
        if failed:
            self.stack.save_logs(self.workdir / "compose-logs.txt")
        self.timed("docker compose down -v", self.stack.down)

    def remove_secrets(self, failed: bool) -> None:
        if self.secrets is not None and secret_files.remove(self.secrets):
            self.figure("secrets (made here) removed", str(self.secrets.folder))

    def remove_images(self, failed: bool) -> None:
        if not self.args.remove_images or self.stack is None:
            return
        images = [self.stack.image_of("provision")]
        base = from_image(ROOT / "Dockerfile")
        if labelled_here(base):
            images.append(base)
        run(["docker", "rmi", *images], log=self.log, check=False)
        run(["docker", "image", "prune", "-f"], log=self.log, check=False)
        removed = ", ".join(images)
        if self.engine.process is not None:  # an engine of our own: its build cache is ours
            run(["docker", "builder", "prune", "-af"], log=self.log, check=False)
            removed += " and the build cache"
        self.figure("images removed", removed)

    def stop_engine(self, failed: bool) -> None:
        if self.engine.process is None or self.engine.network is None:
            return
        stop_dockerd(self.engine)
        done = netstate.restore(self.engine.network)
        left = netstate.residue(self.engine.network)
        say(f"dockerd stopped; host networking: {'; '.join(done) or 'nothing to undo'}")
        if left:
            raise CheckFailed(f"host networking still differs after cleanup: {', '.join(left)}")
        self.figure("dockerd (started here) stopped", "host networking as before it started")


def _interrupted(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.install and os.geteuid() != 0:
        return fail("--install needs root (apt-get, dockerd, iptables): run it with sudo")
    workdir = Path(tempfile.mkdtemp(prefix="compose-check-"))
    signal.signal(signal.SIGTERM, _interrupted)
    check = Check(args, workdir)
    failure = ""
    try:
        check.execute()
    except CheckFailed as exc:
        failure = str(exc)
    except KeyboardInterrupt:
        failure = "interrupted"
    problems = check.cleanup(failed=bool(failure))
    print("\ncompose-check figures:")
    for label, value in check.figures:
        print(f"  {label}: {value}")
    print(f"  total: {time.monotonic() - check.started:.1f} s")
    for problem in problems:
        print(f"compose-check: {problem}", file=sys.stderr)
    if failure or problems:
        print(f"compose-check: logs kept in {workdir}", file=sys.stderr)
        return fail(failure or problems[0])
    shutil.rmtree(workdir, ignore_errors=True)
    print("compose-check: PASSED")
    return 0
