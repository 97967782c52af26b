"""Reading one project's log from sequence 1, as ``replay`` and ``findings export`` fold it.

The read shows its progress on a terminal (stream sequence against the log's last one when
the read began), so folding a large log is not a silent wait.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime

from bus import Bus, Record, read
from loopbus.progress import Progress
from schemas import project_subjects


async def project_records(
    bus: Bus,
    project: str,
    progress: Progress,
    *,
    until_seq: int | None = None,
    until_time: datetime | None = None,
) -> AsyncIterator[Record]:
    """``project``'s records in log order up to the bound, reporting progress by sequence."""
    last = await bus.stream_last_seq()
    progress.total = min(last, until_seq) if until_seq is not None else last
    progress.update(0, force=True)
    async for record in read(bus, subjects=[project_subjects(project)], until_seq=until_seq):
        if until_time is not None and record.time is not None and record.time > until_time:
            break
        progress.update(record.seq)
        yield record
    progress.update(progress.total)
