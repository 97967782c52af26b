"""Signed results: the gates projection accepts only results signed by a registered runner
key, refuses unsigned, unknown and forged ones, and the cache never serves a refused one."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from gate_repos import GitRepo, config
from gatekit import run_commit

from bus import Bus
from projections import gates
from schemas import Actor, FindingRaised, decode_event, encode_event
from schemas.gates import (
    GateResultRecorded,
    GateSuiteCompleted,
    SuiteEntry,
    canonical_bytes,
)
from schemas.targets import RecordTarget
from workers.errors import GateError
from workers.gates.cache import GateCache
from workers.gates.runner import GateRunner
from workers.gates.signing import Signer, load_or_create

SYSTEM = Actor(role="system", principal="gate-runner@test")
TREE = "a" * 40
CONFIG = "c" * 64


def result(signer: Signer, outcome: str = "pass", **fields: object) -> GateResultRecorded:
    base: dict[str, object] = {
        "project": "p",
        "actor": SYSTEM,
        "check": "tests",
        "tree": TREE,
        "inputs": TREE,
        "config_sha": CONFIG,
        "outcome": outcome,
        "error": "could not start" if outcome == "error" else "",
        "duration_s": 1.5,
        "runner": signer.runner,
    }
    base.update(fields)
    return GateResultRecorded(**base)  # type: ignore[arg-type]


def registered(signer: Signer) -> gates.GatesState:
    return gates.apply(gates.initial(), signer.registration("p", SYSTEM))


@pytest.fixture
def other(tmp_path: Path) -> Signer:
    return load_or_create(tmp_path / "other", "other")


def test_a_signed_result_is_accepted_and_cached(signer: Signer) -> None:
    """A result signed by its registered runner is a fact: the cache answers with it."""
    event = signer.sign(result(signer))
    state = gates.apply(registered(signer), event)
    entry = gates.lookup(state, event.cache_key)
    assert entry is not None and entry.result == event.id and entry.outcome == "pass"
    assert state.refused == {}


def test_signature_survives_the_log_round_trip(signer: Signer) -> None:
    """Encoding, storing and decoding a result leaves its canonical bytes, and so its
    signature, intact."""
    event = signer.sign(result(signer, "fail", summary="2 failed", findings_total=0))
    decoded = decode_event(encode_event(event))
    assert isinstance(decoded, GateResultRecorded)
    assert canonical_bytes(decoded) == canonical_bytes(event)
    assert gates.judge(registered(signer), decoded) is None


@pytest.mark.parametrize(
    ("forge", "reason"),
    [
        pytest.param(lambda s, o: result(s), "unsigned", id="unsigned"),
        pytest.param(
            lambda s, o: msgspec.structs.replace(s.sign(result(s, "fail")), outcome="pass"),
            "does not verify",
            id="altered-after-signing",
        ),
        pytest.param(
            lambda s, o: o.sign(result(o, runner=s.runner)),
            "does not verify",
            id="signed-by-another-key",
        ),
        pytest.param(lambda s, o: o.sign(result(o)), "unknown runner", id="unknown-runner"),
        pytest.param(
            lambda s, o: s.sign(result(s, actor=Actor(role="builder", principal="agent"))),
            "role 'builder'",
            id="published-by-a-builder",
        ),
        pytest.param(
            lambda s, o: msgspec.structs.replace(s.sign(result(s)), signature="bm90IGJhc2U2NA"),
            "does not verify",
            id="garbage-signature",
        ),
    ],
)
def test_unverifiable_results_are_refused_and_never_cached(
    signer: Signer,
    other: Signer,
    forge: Callable[[Signer, Signer], GateResultRecorded],
    reason: str,
) -> None:
    """Missing, unknown or forged signatures are refused, with the reason recorded."""
    event = forge(signer, other)
    state = gates.apply(registered(signer), event)
    assert gates.lookup(state, event.cache_key) is None
    refusal = state.refused[event.id]
    assert reason in refusal.reason and refusal.check == "tests"
    assert [r.event for r in gates.unreported_refusals(state)] == [event.id]


def test_refusal_is_marked_reported_by_its_finding(signer: Signer) -> None:
    """The finding naming a refused result (evidence ``refused``) marks it reported."""
    event = result(signer)
    state = gates.apply(registered(signer), event)
    finding = FindingRaised(
        project="p",
        actor=SYSTEM,
        producer="gate_runner",
        target=RecordTarget(id=event.id),
        severity="high",
        criterion=gates.REFUSAL_CRITERION,
        message="refused",
        evidence={"refused": event.id},
    )
    state = gates.apply(state, finding)
    assert gates.unreported_refusals(state) == []


def test_error_results_are_counted_but_never_cached(signer: Signer) -> None:
    """An accepted error result changes no cache entry."""
    state = registered(signer)
    passed = signer.sign(result(signer))
    state = gates.apply(state, passed)
    state = gates.apply(state, signer.sign(result(signer, "error")))
    entry = gates.lookup(state, passed.cache_key)
    assert entry is not None and entry.result == passed.id
    assert state.errors == 1 and state.results == 2


def test_latest_accepted_result_wins(signer: Signer) -> None:
    """Two accepted results for one key (a forced re-run): the later one answers."""
    state = registered(signer)
    first = signer.sign(result(signer, "fail"))
    second = signer.sign(result(signer, "pass"))
    for event in (first, second):
        state = gates.apply(state, event)
    entry = gates.lookup(state, first.cache_key)
    assert entry is not None and entry.result == second.id


def test_a_runner_id_keeps_its_first_key(signer: Signer, other: Signer) -> None:
    """Re-registering a runner id with another key is refused; repeating the same key is not."""
    state = registered(signer)
    state = gates.apply(state, signer.registration("p", SYSTEM))
    hijack = signer.registration("p", SYSTEM)
    hijack = msgspec.structs.replace(hijack, public_key=other.public_key_b64)
    state = gates.apply(state, hijack)
    assert state.keys[signer.runner].public_key == signer.public_key_b64
    assert list(state.refused) == [hijack.id]


def test_suites_are_verified_and_answer_their_cause(signer: Signer) -> None:
    """A signed suite answers its cause; an unsigned one answers nothing."""
    entry = SuiteEntry(check="tests", outcome="pass", cached=False, result="0" * 26, duration_s=1)
    fields: dict[str, object] = {
        "project": "p",
        "actor": SYSTEM,
        "commit": "b" * 40,
        "tree": TREE,
        "cause": "1" * 26,
        "outcome": "pass",
        "checks": [entry],
        "runner": signer.runner,
    }
    forged = GateSuiteCompleted(**fields)  # type: ignore[arg-type]
    state = gates.apply(registered(signer), forged)
    assert not gates.is_answered(state, "1" * 26) and forged.id in state.refused
    good = signer.sign(GateSuiteCompleted(**fields))  # type: ignore[arg-type]
    state = gates.apply(state, good)
    assert gates.is_answered(state, "1" * 26)
    suite = gates.suite_for(state, "b" * 40)
    assert suite is not None and suite.suite == good.id


def test_state_materialises_deterministically(signer: Signer, other: Signer) -> None:
    """The fold's state encodes to bytes and back unchanged (the projector stores it)."""
    events = [
        signer.registration("p", SYSTEM),
        signer.sign(result(signer)),
        other.sign(result(other, "fail")),
        signer.sign(result(signer, "error")),
    ]
    state = gates.FOLD.fold(events)
    data = gates.FOLD.encode(state)
    assert gates.FOLD.encode(gates.FOLD.decode(data)) == data
    assert gates.FOLD.encode(gates.FOLD.fold(events)) == data


def test_public_key_is_raw_ed25519(signer: Signer) -> None:
    """The registered key is the raw 32-byte public key, usable by any ed25519 verifier."""
    raw = base64.b64decode(signer.public_key_b64)
    assert len(raw) == 32 and signer.runner.startswith("gate-runner-")
    assert isinstance(signer.key, Ed25519PrivateKey)


def test_key_file_is_private_and_reused(tmp_path: Path) -> None:
    """The key is created once (mode 0600) and loaded again: the runner id is stable."""
    first = load_or_create(tmp_path / "d", "runner")
    again = load_or_create(tmp_path / "d", "runner")
    assert first.runner == again.runner
    assert (first.path.stat().st_mode & 0o777) == 0o600
    assert first.path == tmp_path / "d" / "keys" / "runner.key"


async def test_forged_pass_on_the_log_is_not_served(
    bus: Bus,
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    other: Signer,
) -> None:
    """A forged 'pass' published for a failing tree is refused: the runner still runs the
    check and records the real fail."""
    repo = git("repo")
    checks = (
        '\n[[check]]\nid = "c"\ncommand = "python -c \'import sys; sys.exit(1)\'"\n'
        'parser = "exit-code"\ntimeout = 30\n'
    )
    commit = repo.commit({"loopbus.toml": config(project, checks)})
    runner = make_runner(repo)
    cache = await runner.cache(project)
    from workers.gates.config import parse_config

    spec = parse_config(repo.files["loopbus.toml"]).check("c")
    tree = repo.tree_of(commit)
    forged = other.sign(
        GateResultRecorded(
            project=project,
            actor=SYSTEM,
            check="c",
            tree=tree,
            inputs=tree,
            config_sha=spec.config_sha(),
            outcome="pass",
            duration_s=0.1,
            runner=runner.signer.runner,  # claims to be the real runner
        )
    )
    await bus.publish(forged)
    fresh = await GateCache(bus, project).open()
    assert await fresh.lookup(forged.cache_key) is None
    assert forged.id in fresh.state.refused
    run = (await run_commit(runner, commit)).check("c")
    assert run.outcome == "fail" and not run.cached and runner.executions == 1
    assert cache.state.keys


@pytest.mark.parametrize(
    ("data_dir", "env", "expected"),
    [
        pytest.param(
            "data",
            {"LOOPBUS_KEY_DIR": "{tmp}/k", "XDG_DATA_HOME": "{tmp}/xdg"},
            "{tmp}/data/keys",
            id="data-dir-overrides-all",
        ),
        pytest.param(
            None,
            {"LOOPBUS_KEY_DIR": "{tmp}/k", "XDG_DATA_HOME": "{tmp}/xdg"},
            "{tmp}/k",
            id="key-dir-variable",
        ),
        pytest.param(None, {"XDG_DATA_HOME": "{tmp}/xdg"}, "{tmp}/xdg/loopbus/keys", id="xdg"),
        pytest.param(
            None,
            {"XDG_DATA_HOME": "relative/xdg"},
            "{tmp}/home/.local/share/loopbus/keys",
            id="relative-xdg-is-ignored",
        ),
        pytest.param(None, {}, "{tmp}/home/.local/share/loopbus/keys", id="home"),
    ],
)
def test_key_location_is_per_user_unless_given(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    data_dir: str | None,
    env: dict[str, str],
    expected: str,
) -> None:
    """--data-dir, then $LOOPBUS_KEY_DIR, then $XDG_DATA_HOME/loopbus/keys, then
    ~/.local/share/loopbus/keys; never the current directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("LOOPBUS_KEY_DIR", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(tmp=tmp_path))
    given = tmp_path / data_dir if data_dir else None
    made = load_or_create(given, "runner")
    assert made.path == Path(expected.format(tmp=tmp_path)) / "runner.key"
    assert made.path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_an_unreadable_key_location_is_a_one_line_error(tmp_path: Path) -> None:
    """An OSError where the key should be (here: a file standing in for the folder) is a
    GateError naming the key's path and what to do, not a bare OSError."""
    (tmp_path / "plain").write_text("x\n")
    with pytest.raises(GateError) as caught:
        load_or_create(tmp_path / "plain", "runner")
    message = str(caught.value)
    assert message.startswith(f"cannot keep the runner key at {tmp_path}/plain/keys/runner.key")
    assert "\n" not in message and "LOOPBUS_KEY_DIR" in message
