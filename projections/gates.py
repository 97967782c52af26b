"""The ``gates`` projection: the content-addressed gate cache, runner keys, and refusals.

* ``keys``: each runner id's ed25519 public key; the first registration (by role
  ``system``) wins, and a later different key for the same id is refused.
* ``cache``: ``check|inputs|config_sha`` -> the latest accepted pass or fail for it. An
  ``error`` result is counted but never cached, so the next ask runs the check again.
* ``refused``: every gate result or suite whose signature is missing, unknown or does not
  verify, and every refused key registration, with the reason. Each refusal is raised as a
  finding by the gate-runner daemon; ``reported`` turns true when that finding is on the
  log, so a restarted daemon does not raise it twice.
* ``suites``: the latest accepted suite per commit, and which causes have been answered.

Verifying a signature is arithmetic on bytes already in the event, so it stays pure.
"""

import base64
import binascii
from datetime import datetime

import msgspec
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from projections.base import Fold
from schemas import Event, FindingRaised
from schemas.gates import (
    GateOutcome,
    GateResultRecorded,
    GateRunnerKeyRegistered,
    GateSuiteCompleted,
    SignedGateEvent,
    SuiteEntry,
    canonical_bytes,
)

REFUSAL_CRITERION = "signed-gate-results"
"""The criterion of the finding raised for each refused gate event; its evidence names the
refused event under ``refused``."""


class RunnerKey(msgspec.Struct, kw_only=True):
    """A runner id and the public key (raw, base64) its signatures verify against."""

    runner: str
    public_key: str
    registered: str
    at: datetime


class CacheEntry(msgspec.Struct, kw_only=True):
    """The accepted result a cache key answers with."""

    result: str
    check: str
    tree: str
    commit: str | None
    inputs: str
    config_sha: str
    outcome: GateOutcome
    summary: str
    duration_s: float
    runner: str
    at: datetime
    findings: list[str] = []
    findings_total: int = 0
    tests: dict[str, str] = {}


class Refusal(msgspec.Struct, kw_only=True):
    """A gate event the projection would not accept, and why."""

    event: str
    kind: str
    runner: str
    check: str | None = None
    reason: str
    at: datetime
    reported: bool = False


class SuiteView(msgspec.Struct, kw_only=True):
    """The latest accepted suite for one commit."""

    suite: str
    commit: str | None
    tree: str | None
    unit: str | None
    reason: str
    cause: str | None
    outcome: GateOutcome
    error: str
    checks: list[SuiteEntry]
    at: datetime


class GatesState(msgspec.Struct):
    keys: dict[str, RunnerKey] = {}
    cache: dict[str, CacheEntry] = {}
    refused: dict[str, Refusal] = {}
    suites: dict[str, SuiteView] = {}
    answered: dict[str, str] = {}
    by_result: dict[str, str] = {}
    """Result id -> the cache key it is the entry of (what readiness reads tests from)."""
    unit_suites: dict[str, SuiteView] = {}
    """Unit suites by the ask they answer (a later suite on the same commit, asked by
    someone else, never hides the one the system asked for)."""
    results: int = 0
    errors: int = 0


def initial() -> GatesState:
    return GatesState()


def apply(state: GatesState, event: Event) -> GatesState:
    match event:
        case GateRunnerKeyRegistered():
            reason = judge_key(state, event)
            if reason is not None:
                _refuse(state, event.id, event.kind, event.runner, None, reason, event.at)
            elif event.runner not in state.keys:
                state.keys[event.runner] = RunnerKey(
                    runner=event.runner,
                    public_key=event.public_key,
                    registered=event.id,
                    at=event.at,
                )
        case GateResultRecorded():
            reason = judge(state, event)
            if reason is not None:
                _refuse(state, event.id, event.kind, event.runner, event.check, reason, event.at)
                return state
            state.results += 1
            if event.outcome == "error":
                state.errors += 1
                return state
            state.cache[event.cache_key] = CacheEntry(
                result=event.id,
                check=event.check,
                tree=event.tree,
                commit=event.commit,
                inputs=event.inputs,
                config_sha=event.config_sha,
                outcome=event.outcome,
                summary=event.summary,
                duration_s=event.duration_s,
                runner=event.runner,
                at=event.at,
                findings=list(event.findings),
                findings_total=event.findings_total,
                tests=dict(event.tests),
            )
            state.by_result[event.id] = event.cache_key
        case GateSuiteCompleted():
            reason = judge(state, event)
            if reason is not None:
                _refuse(state, event.id, event.kind, event.runner, None, reason, event.at)
                return state
            if event.cause is not None:
                state.answered[event.cause] = event.id
            if event.commit is not None:
                view = state.suites[event.commit] = SuiteView(
                    suite=event.id,
                    commit=event.commit,
                    tree=event.tree,
                    unit=event.unit,
                    reason=event.reason,
                    cause=event.cause,
                    outcome=event.outcome,
                    error=event.error,
                    checks=list(event.checks),
                    at=event.at,
                )
                if event.unit is not None and event.cause is not None:
                    state.unit_suites[event.cause] = view
        case FindingRaised(producer="gate_runner", criterion=criterion, evidence=evidence):
            if criterion == REFUSAL_CRITERION:
                refused = state.refused.get(str(evidence.get("refused", "")))
                if refused is not None:
                    refused.reported = True
        case _:
            pass
    return state


def judge(state: GatesState, event: SignedGateEvent) -> str | None:
    """Why a gate result or suite must be refused, or ``None`` when it is a verified fact."""
    if event.actor.role != "system":
        role = event.actor.role
        return f"published by role {role!r}; gate outcomes are facts only the system records"
    if not event.signature:
        return "unsigned: a gate outcome without a signature is a claim, not a measurement"
    key = state.keys.get(event.runner)
    if key is None:
        return f"signed by unknown runner {event.runner!r} (no key registered for it)"
    try:
        signature = base64.b64decode(event.signature, validate=True)
        public = Ed25519PublicKey.from_public_bytes(base64.b64decode(key.public_key))
        public.verify(signature, canonical_bytes(event))
    except (InvalidSignature, binascii.Error, ValueError):
        return (
            f"signature does not verify against runner {event.runner!r}'s key (forged or altered)"
        )
    return None


def judge_key(state: GatesState, event: GateRunnerKeyRegistered) -> str | None:
    """Why a key registration must be refused, or ``None`` when it is accepted (or a repeat)."""
    if event.actor.role != "system":
        return f"published by role {event.actor.role!r}; only the system registers runner keys"
    try:
        raw = base64.b64decode(event.public_key, validate=True)
        Ed25519PublicKey.from_public_bytes(raw)
    except (binascii.Error, ValueError):
        return "public_key is not a base64 raw 32-byte ed25519 key"
    existing = state.keys.get(event.runner)
    if existing is not None and existing.public_key != event.public_key:
        return (
            f"runner {event.runner!r} already has a key (registered by {existing.registered}); "
            "a runner id keeps its first key"
        )
    return None


def _refuse(
    state: GatesState,
    event_id: str,
    kind: str,
    runner: str,
    check: str | None,
    reason: str,
    at: datetime,
) -> None:
    state.refused.setdefault(
        event_id,
        Refusal(event=event_id, kind=kind, runner=runner, check=check, reason=reason, at=at),
    )


FOLD = Fold(name="gates", state_type=GatesState, initial=initial, apply=apply)


# -- queries ----------------------------------------------------------------------------


def lookup(state: GatesState, key: str) -> CacheEntry | None:
    """The cached pass or fail for ``check|inputs|config_sha`` (see ``schemas.gates``)."""
    return state.cache.get(key)


def unreported_refusals(state: GatesState) -> list[Refusal]:
    """Refusals with no finding on the log yet, oldest first."""
    return sorted((r for r in state.refused.values() if not r.reported), key=lambda r: r.event)


def suite_for(state: GatesState, commit: str) -> SuiteView | None:
    """The latest accepted suite run on ``commit``."""
    return state.suites.get(commit)


def unit_suite(state: GatesState, cause: str) -> SuiteView | None:
    """The verified unit suite that answers the ask ``cause`` (a commit transition)."""
    return state.unit_suites.get(cause)


def tests_of(state: GatesState, result: str) -> dict[str, str] | None:
    """How each test ended in the cached result ``result`` (``None``: not a cached result)."""
    key = state.by_result.get(result)
    entry = state.cache.get(key) if key is not None else None
    return entry.tests if entry is not None and entry.result == result else None


def is_answered(state: GatesState, cause: str) -> bool:
    """True when a verified suite already answers the report or request ``cause``."""
    return cause in state.answered
