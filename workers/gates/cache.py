"""The gate cache: the log is the truth, a KV index makes a lookup one get.

A result is a :class:`GateResultRecorded` on ``loop.<project>.gate.<check>``, published in
one atomic batch after its findings (so the findings sit at the sequences just before it).
The cache publishes nothing: the runner returns each batch and its caller's kernel
publishes it; the index learns it from the log.
For a fast lookup each accepted pass or fail is also indexed in the projections bucket::

    gatecache.<project>.<sha256 of check|inputs|config_sha>  ->  stream sequence
    gatecache.<project>._checkpoint                            ->  log indexed through N

The index follows the same rule as the ``gates`` projection (the latest accepted pass or
fail per key; errors and refused results never), and :meth:`GateCache.sync` catches it up
from the checkpoint before every lookup, so it answers what a fold of the log answers —
including results whose publisher died before it could index them. An entry is never
trusted blindly: the result it points at is decoded and its signature checked again.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog

from bus import PROJECTION_BUCKET, Bucket, Bus, KeyChanged, read
from projections import gates as gates_projection
from schemas import Event, FindingRaised
from schemas.gates import (
    GateResultRecorded,
    GateRunnerKeyRegistered,
    cache_key_digest,
)
from schemas.subjects import finding_subjects, gate_subjects

log = structlog.get_logger()

INDEX_PREFIX = "gatecache"
CHECKPOINT = "_checkpoint"
CAS_ATTEMPTS = 8


@dataclass(frozen=True)
class CachedResult:
    """A verified result from the log, with its findings, and where it is stored."""

    result: GateResultRecorded
    findings: list[FindingRaised]
    seq: int


def index_key(project: str, key: str) -> str:
    return f"{INDEX_PREFIX}.{project}.{cache_key_digest(key)}"


class GateCache:
    """One project's gate cache on the log, shared by every runner process on the bus."""

    def __init__(self, bus: Bus, project: str):
        self.bus = bus
        self.project = project
        self.state = gates_projection.initial()
        self.synced = 0
        self._kv: Bucket | None = None
        self._syncing = asyncio.Lock()  # concurrent lookups share one catch-up

    @property
    def subjects(self) -> list[str]:
        return gate_subjects(self.project)

    async def open(self) -> GateCache:
        """Load the runner keys registered up to the checkpoint, then catch up from it (in
        log order, so a key registered after a result never vouches for that result)."""
        self._kv = await self.bus.bucket(PROJECTION_BUCKET)
        self.synced = await self._checkpoint()
        if self.synced:
            async for record in read(self.bus, subjects=[self.subjects[0]], until_seq=self.synced):
                if record.event is not None:
                    gates_projection.apply(self.state, record.event)
        await self.sync()
        return self

    @property
    def kv(self) -> Bucket:
        assert self._kv is not None, "call open() first"
        return self._kv

    async def _checkpoint(self) -> int:
        entry = await self.kv.get(f"{INDEX_PREFIX}.{self.project}.{CHECKPOINT}")
        return int(entry.value or b"0") if entry is not None else 0

    async def sync(self) -> int:
        """Index every accepted result appended since the last sync; return how many.

        Everything up to the log's end as it is now is read, so the checkpoint can move to
        that end even when the last messages belong to other subjects.
        """
        async with self._syncing:
            return await self._sync()

    async def _sync(self) -> int:
        end = await self.bus.stream_last_seq()
        if end <= self.synced:
            return 0
        indexed = 0
        async for record in read(
            self.bus, subjects=self.subjects, start_seq=self.synced + 1, until_seq=end
        ):
            if record.event is None:
                continue
            if self.observe(record.event) and isinstance(record.event, GateResultRecorded):
                await self._index(record.event.cache_key, record.seq)
                indexed += 1
        self.synced = end
        await self._advance(f"{INDEX_PREFIX}.{self.project}.{CHECKPOINT}", end)
        return indexed

    def observe(self, event: Event) -> bool:
        """Fold a gate event into the local state; True for a result the cache may serve."""
        if isinstance(event, GateResultRecorded):
            accepted = gates_projection.judge(self.state, event) is None
            gates_projection.apply(self.state, event)
            return accepted and event.outcome != "error"
        gates_projection.apply(self.state, event)
        return False

    async def _index(self, key: str, seq: int) -> None:
        await self._advance(index_key(self.project, key), seq)

    async def _advance(self, kv_key: str, seq: int) -> None:
        """Set ``kv_key`` to ``seq`` unless it already holds a later sequence (CAS loop)."""
        value = str(seq).encode()
        for _ in range(CAS_ATTEMPTS):
            entry = await self.kv.get(kv_key)
            try:
                if entry is None:
                    await self.kv.create(kv_key, value)
                    return
                if int(entry.value or b"0") >= seq:
                    return
                await self.kv.update(kv_key, value, entry.revision)
                return
            except KeyChanged:
                continue
        log.warning("gate_cache.index_contended", key=kv_key, seq=seq)

    async def lookup(self, key: str) -> CachedResult | None:
        """The latest verified pass or fail for ``check|inputs|config_sha``, or ``None``."""
        await self.sync()
        entry = await self.kv.get(index_key(self.project, key))
        if entry is None:
            return None
        seq = int(entry.value or b"0")
        return await self.fetch(seq, key)

    async def fetch(self, seq: int, key: str | None = None) -> CachedResult | None:
        """The result stored at ``seq`` with its findings, verified; ``None`` if it is not one."""
        from schemas import decode_event

        _subject, data = await self.bus.get(seq)
        result = decode_event(data)
        if not isinstance(result, GateResultRecorded) or result.project != self.project:
            log.warning("gate_cache.index_points_elsewhere", seq=seq)
            return None
        if key is not None and result.cache_key != key:
            log.warning("gate_cache.index_key_mismatch", seq=seq)
            return None
        refusal = gates_projection.judge(self.state, result)
        if refusal is not None or result.outcome == "error":
            log.warning("gate_cache.index_unverified", seq=seq, refusal=refusal)
            return None
        findings = await self._findings(result, seq)
        if findings is None:
            return None
        return CachedResult(result=result, findings=findings, seq=seq)

    async def _findings(self, result: GateResultRecorded, seq: int) -> list[FindingRaised] | None:
        if not result.findings:
            return []
        first = seq - len(result.findings)
        found: list[FindingRaised] = []
        async for record in read(
            self.bus,
            subjects=[finding_subjects(self.project, "gate_runner")],
            start_seq=first,
            until_seq=seq - 1,
        ):
            if isinstance(record.event, FindingRaised):
                found.append(record.event)
        if [f.id for f in found] != list(result.findings):
            log.warning("gate_cache.findings_missing", seq=seq, result=result.id)
            return None
        return found

    def unregistered(self, registration: GateRunnerKeyRegistered) -> GateRunnerKeyRegistered | None:
        """``registration`` when the log does not hold that key for its runner yet (what to
        publish before the runner's first result), else ``None``. Folded here at once, so a
        runner offers it once; whoever publishes it (the kernel) retries until it is stored."""
        known = self.state.keys.get(registration.runner)
        if known is not None and known.public_key == registration.public_key:
            return None
        gates_projection.apply(self.state, registration)
        return registration
