"""deploy/compose-check's own logic, without Docker: how it counts acknowledged against
stored findings, how it judges a raft group, how it reads iptables-save, the Dockerfile and
apt's sources, and how its command line refuses bad input. (Its reading of a live cluster's
/jsz is tested in test_compose.py against compose's own node command lines.)"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from compose_check import forge, jsz, replicas, secret_files
from compose_check.base_image import STAND_INS, apt_mirror, from_image
from compose_check.findings import ACK, Attempt, Client, tally
from compose_check.netstate import parse_save
from compose_check.shell import CheckFailed
from compose_check.stack import last_health_output

from bus.tls import ensure_tls

ROOT = Path(__file__).resolve().parents[2]


def attempt(target: str, finding_id: str | None = None, seq: int | None = None) -> Attempt:
    return Attempt("host", target, 0.0, 1.0, finding_id, seq, "" if finding_id else "refused")


def stored(finding_id: str, seq: int, check: str) -> dict[str, object]:
    target = {"type": "check", "check": check}
    return {"id": finding_id, "seq": seq, "kind": "finding.raised.v1", "target": target}


def test_tally_counts_every_acknowledged_finding_found_at_its_sequence_as_stored() -> None:
    """Acked and on the log at the acked sequence is stored; a refused attempt is not lost."""
    attempts = [attempt("check:a", "A", 1), attempt("check:b"), attempt("check:c", "C", 2)]
    result = tally(attempts, [stored("A", 1, "a"), stored("C", 2, "c")])
    assert (result.attempted, result.acked, result.stored) == (3, 2, 2)
    assert result.lost == () and result.stored_unacked == 0 and result.duplicated == ()


def test_tally_reports_an_acknowledged_finding_missing_or_moved_as_lost() -> None:
    """An ack whose id is absent from the log, or sits at another sequence, is a loss."""
    attempts = [attempt("check:a", "A", 1), attempt("check:b", "B", 2)]
    result = tally(attempts, [stored("B", 5, "b")])
    assert result.lost == ("A", "B") and result.stored == 0


def test_tally_counts_a_refused_publish_found_on_the_log_and_duplicates() -> None:
    """A refused attempt whose target is on the log had its ack lost; a target twice is flagged."""
    attempts = [attempt("check:a"), attempt("check:b", "B", 2)]
    events = [stored("X", 1, "a"), stored("B", 2, "b"), stored("Y", 3, "b")]
    result = tally(attempts, events)
    assert result.stored_unacked == 1 and result.duplicated == ("check:b",)


def group(leader: str, *replicas: tuple[str, bool], size: int = 3) -> jsz.Group:
    return jsz.Group(leader, tuple(jsz.Replica(n, c, 0 if c else 4) for n, c in replicas), size)


NODES = frozenset({"n1", "n2", "n3"})


@pytest.mark.parametrize(
    ("seen", "problem"),
    [
        (group("n1", ("n2", True), ("n3", True)), None),
        (group("", ("n2", True), ("n3", True)), "no leader"),
        (group("n1", ("n2", True), ("n3", True), size=1), "configured for 1 members, not 3"),
        (group("n1", ("n2", True)), "members ['n1', 'n2'], not ['n1', 'n2', 'n3']"),
        (group("n1", ("n2", True), ("n3", False)), "not current: n3 (lag 4)"),
    ],
)
def test_a_group_is_healthy_only_with_every_node_current_under_a_leader(
    seen: jsz.Group, problem: str | None
) -> None:
    """The leader's page must name all three nodes, the configured size, all current."""
    assert seen.problem(NODES) == problem


def test_parse_save_splits_tables_and_ignores_comments_and_counters() -> None:
    """Two saves of the same rules with other counters and timestamps compare equal."""
    first = "# Generated 10:00\n*nat\n:POSTROUTING ACCEPT [4:240]\nCOMMIT\n*filter\n"
    first += ":FORWARD DROP [9:9]\n-A FORWARD -j DOCKER-USER\nCOMMIT\n# Completed\n"
    second = first.replace("10:00", "11:00").replace("[4:240]", "[0:0]")
    assert parse_save(first) == parse_save(second)
    assert set(parse_save(first)) == {"nat", "filter"}
    assert parse_save(first)["filter"].endswith("COMMIT\n")
    assert parse_save("") == {}


def test_the_dockerfile_base_has_a_local_stand_in() -> None:
    """The image the Dockerfile starts FROM is one compose-check can build without a registry."""
    assert from_image(ROOT / "Dockerfile") in STAND_INS


def test_apt_mirror_reads_deb822_and_one_line_sources(tmp_path: Path) -> None:
    """The mirror comes from apt's own sources, skipping the security archive."""
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text("deb http://security.example/debian-security x main\n")
    (tmp_path / "sources.list.d" / "x.list").write_text("deb [arch=amd64] http://one.example/d x\n")
    assert apt_mirror(tmp_path) == "http://one.example/d"
    (tmp_path / "sources.list.d" / "d.sources").write_text("Types: deb\nURIs: http://822.ex/d\n")
    assert apt_mirror(tmp_path) == "http://822.ex/d"


def test_every_command_line_carries_the_connection_flags() -> None:
    """Host and container commands both get the connection: the URLs and the credential
    (the role's file from provision --creds-out on the host, the mounted system one inside)."""
    client = Client("p", "tls://127.0.0.1:4222", "tls://n1:4222", "projector")
    host = client.host("reader", "status", "--project", "p")
    inside = client.container(["docker", "exec"], "operator", *client.finding("check:x", "m"))
    assert host[-6:-3] == ["--nats-url", "tls://127.0.0.1:4222", "--creds"]
    assert host[-3].endswith("secrets/creds/reader.json") and host[-2] == "--tls-ca"
    assert host[-1].endswith("secrets/tls/ca.pem")
    assert inside[:3] == ["docker", "exec", "loopbus"]
    assert inside[-6:] == [
        "--nats-url", "tls://n1:4222", "--creds", "/run/secrets/loopbus_system",
        "--tls-ca", "/run/secrets/loopbus_ca",
    ]  # fmt: skip


def test_the_agents_forged_fact_uses_the_agent_file_and_the_ca() -> None:
    """The hostile move connects from the host with the agent's own credential file."""
    argv = Client("p", "tls://127.0.0.1:4222", "tls://n1:4222", "projector").forge()
    assert argv[1].endswith("compose_check/forge.py") and argv[-2:] == ["--project", "p"]
    assert argv[argv.index("--creds") + 1].endswith("secrets/creds/agent.json")
    assert argv[argv.index("--tls-ca") + 1].endswith("secrets/tls/ca.pem")


SUBJECT = "loop.p.unit.U-forged"
REFUSAL = 'nats: permissions violation for publish to "loop.p.unit.u-forged"'


@pytest.mark.parametrize(
    ("seq", "messages", "refused", "error"),
    [
        pytest.param(None, [REFUSAL], True, "", id="refused-for-this-subject"),
        pytest.param(7, [], False, "", id="acknowledged-so-stored"),
        pytest.param(7, [REFUSAL], False, "", id="an-ack-outweighs-a-refusal"),
        pytest.param(
            None,
            ['nats: permissions violation for publish to "loop.p.other"', "TimeoutError: "],
            False,
            'nats: permissions violation for publish to "loop.p.other"; TimeoutError: ',
            id="a-refusal-of-another-subject-is-not-this-one",
        ),
        pytest.param(None, ["TimeoutError: "], False, "TimeoutError: ", id="only-a-timeout"),
    ],
)
def test_a_forged_fact_counts_as_refused_only_on_the_servers_word_and_no_ack(
    seq: int | None, messages: list[str], refused: bool, error: str
) -> None:
    """Silence is not a refusal: the check needs the server's violation for that subject."""
    judged = forge.judge(SUBJECT, "E1", seq, messages)
    assert (judged.refused, judged.error) == (refused, error)
    assert forge.parse(json_line(judged)) == judged


def json_line(forgery: forge.Forgery) -> str:
    import json
    from dataclasses import asdict

    return json.dumps(asdict(forgery))


def compose_secrets(folder: Path) -> dict[str, Any]:
    """The secrets part of `docker compose config` (absolute paths), for a folder here."""
    files = {"nats_config": "nats.conf", "nats_tls_cert": "tls/node.pem", "loopbus_ca":
             "tls/ca.pem", "loopbus_system": "creds/system.json"}  # fmt: skip
    return {"secrets": {k: {"name": f"loopbus_{k}", "file": str(folder / v)}
                        for k, v in files.items()}}  # fmt: skip


def test_secrets_are_made_by_provision_and_only_the_mounted_ones_shared(tmp_path: Path) -> None:
    """provision --creds-out writes every mounted file; sharing gives them group read and
    leaves the agent's credential, which compose does not mount, private."""
    config = compose_secrets(tmp_path / "secrets")
    made = secret_files.before(tmp_path)
    secret_files.make(made, config, [sys.executable, "-m", "loopbus.cli"], tmp_path / "l")
    assert not made.existed
    shared = secret_files.share(config, os.getgid(), readers=[])  # (this test's own group)
    assert shared == secret_files.mounted(config) and len(shared) == 4
    system = tmp_path / "secrets" / "creds" / "system.json"
    assert stat.S_IMODE(system.stat().st_mode) == 0o640 and system.stat().st_gid == os.getgid()
    agent = tmp_path / "secrets" / "creds" / "agent.json"
    assert stat.S_IMODE(agent.stat().st_mode) == 0o600
    assert secret_files.remove(made) and not (tmp_path / "secrets").exists()


def test_secrets_are_not_shared_with_a_group_host_accounts_are_in(tmp_path: Path) -> None:
    """Group 10001 is the containers': a host account in it could read the system and
    admin credentials once shared, so sharing is refused naming the accounts."""
    import pwd

    me = pwd.getpwuid(os.getuid()).pw_name
    assert me in secret_files.host_readers(os.getgid())  # primary group counts
    config = compose_secrets(tmp_path / "secrets")
    secret_files.make(secret_files.before(tmp_path), config, [sys.executable, "-m", "loopbus.cli"],
                      tmp_path / "l")  # fmt: skip
    with pytest.raises(CheckFailed, match="host accounts mallory are in group"):
        secret_files.share(config, os.getgid(), readers=["mallory"])
    system = tmp_path / "secrets" / "creds" / "system.json"
    assert stat.S_IMODE(system.stat().st_mode) == 0o600  # nothing was shared


def test_secrets_kept_from_before_are_not_removed(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    made = secret_files.before(tmp_path)
    secret_files.make(made, compose_secrets(tmp_path / "secrets"),
                      [sys.executable, "-m", "loopbus.cli"], tmp_path / "l")  # fmt: skip
    assert made.existed and not secret_files.remove(made) and (tmp_path / "secrets").is_dir()


def test_a_node_certificate_without_the_hosts_address_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    """Kept secrets made with other --tls-hosts would fail TLS from the host: say so first."""
    ensure_tls(tmp_path / "secrets" / "tls", ["n1", "n2", "n3"])
    with pytest.raises(CheckFailed, match=r"covers n1, n2, n3, not 127\.0\.0\.1"):
        secret_files.make(secret_files.before(tmp_path), compose_secrets(tmp_path / "secrets"),
                          [sys.executable, "-m", "loopbus.cli"], tmp_path / "l")  # fmt: skip


@pytest.mark.parametrize(
    ("host", "covered"),
    [("127.0.0.1", True), ("localhost", True), ("N1", True), ("10.0.0.1", False), ("n4", False)],
)
def test_certificate_names_cover_addresses_and_names(
    tmp_path: Path, host: str, covered: bool
) -> None:
    ensure_tls(tmp_path, ["n1", "localhost", "127.0.0.1"])
    names = secret_files.certificate_names((tmp_path / "node.pem").read_bytes())
    assert secret_files.covers(names, host) is covered


def test_the_script_refuses_a_bad_outage_in_one_line() -> None:
    """`--outage 0` exits 2 naming the value, before touching Docker."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "deploy" / "compose-check"), "--outage", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith("'0' is not a positive number of seconds")


def test_an_unhealthy_service_is_reported_with_what_its_last_healthcheck_said() -> None:
    """The failure line carries the healthcheck's own words, not only "unhealthy"."""
    log = [{"ExitCode": 0, "Output": "ok"}, {"ExitCode": 1, "Output": "x\nloopbus: stale\n"}]
    inspected = json.dumps({"Status": "unhealthy", "Log": log})
    assert last_health_output(inspected) == "the last healthcheck exited 1: loopbus: stale"
    assert last_health_output(json.dumps({"Log": []})) == "no healthcheck has run"
    assert last_health_output("") == "its healthcheck log cannot be read"


def test_the_checks_first_finding_opens_its_project_and_the_rest_follow_it(
    nats_url: str, project: str
) -> None:
    """compose-check publishes to a project nobody has used: its first finding must say
    ``--new`` (loopbus refuses any other command on a project with no event, which made the
    check fail at its first publish), and the findings after it need not."""
    client = Client(project, nats_url, "nats://n1:4222", "projector")

    def publish_here(argv: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "loopbus.cli", *argv, "--nats-url", nats_url],
            capture_output=True,
            text=True,
            timeout=90,
            stdin=subprocess.DEVNULL,
        )

    first = publish_here(client.finding("check:compose-host", "first", new=True))
    assert first.returncode == 0 and ACK.search(first.stdout), first.stderr
    later = client.finding("check:compose-container", "second")
    assert "--new" not in later
    done = publish_here(later)
    assert done.returncode == 0 and ACK.search(done.stdout), done.stderr


def lease(kind: str, holder: str, item: str = "standards") -> dict[str, Any]:
    return {"kind": f"lease.{kind}.v1", "work": "project", "item": item, "holder": holder}


def test_the_project_holder_is_the_last_taker_and_a_release_frees_it() -> None:
    """A handover (release, then a taking) counts once; another daemon's leases are not
    read; a project whose last lease event is a release is held by nobody."""
    events = [
        lease("taken", "a"),
        lease("renewed", "a"),
        lease("released", "a"),
        lease("taken", "b"),
        lease("taken", "z", item="units"),
    ]
    assert replicas.holding(events, "standards") == replicas.Holding("b", 2, 1)
    assert replicas.holding(events[:3], "standards") is None
    assert replicas.holding([], "standards") is None


def test_a_replicas_health_line_names_its_host() -> None:
    """What `loopbus health NAME --here` prints is what the scaled check reads."""
    found = replicas.HEALTHY.search("units: healthy (pid 7 on 3f2a9c1b, seq 42)\n")
    assert found is not None and found.group(2) == "3f2a9c1b"
