"""The operator page's routes: the page itself, its assets, its JSON and its live stream.

``/`` and ``/evidence`` are static pages (shipped in the package: no CDN); they read
``/api/*`` and listen on ``/api/events`` (server-sent events: one ``data`` line each time the
project's log moved, after the page's states folded it), then read the JSON again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from bus import Bus
from loopbus.render import record_json
from loopbus.web import model
from loopbus.web.http import Request, Response, error, json_response
from loopbus.web.live import LiveProject, Projects, evidence_event
from schemas.ids import is_token

MAX_LIMIT = 500
UNITS_PER_SLICE = 400
"""Units drawn per slice on one page of slices (a slice of more says how many are left)."""
KEEPALIVE_S = 15.0
COALESCE_S = 0.05
"""A burst of records becomes one event: the page reads once per burst, not per record."""
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
PAGES = {"/": "index.html", "/evidence": "evidence.html"}


class BadRequest(Exception):
    """A parameter the page cannot use; its text says which and why."""


def asset(name: str) -> bytes | None:
    """A file shipped in ``loopbus/web/static`` (package data), or ``None``."""
    if "/" in name or name.startswith(".") or not name:
        return None
    path = resources.files("loopbus.web").joinpath("static", name)
    return path.read_bytes() if path.is_file() else None


def _int(query: dict[str, str], name: str, default: int, top: int | None = None) -> int:
    text = query.get(name)
    if text is None or text == "":
        return default
    if not text.isdigit():
        raise BadRequest(f"{name}={text!r} is not a whole number; give 0 or more")
    value = int(text)
    return min(value, top) if top is not None else value


def _project(query: dict[str, str]) -> str:
    project = query.get("project", "")
    if not is_token(project):
        raise BadRequest(
            f"project={project!r} is not a project id (letters, digits, '_' or '-', max 64)"
        )
    return project


class PageApp:
    """Answers the page's requests from the live projects."""

    def __init__(self, bus: Bus, default_project: str | None = None) -> None:
        self.bus = bus
        self.projects = Projects(bus)
        self.default_project = default_project

    async def __call__(self, request: Request) -> Response:
        try:
            return await self.route(request)
        except BadRequest as exc:
            return error(400, str(exc))

    async def route(self, request: Request) -> Response:
        path = request.path
        if path in PAGES:
            body = asset(PAGES[path])
            assert body is not None, f"{PAGES[path]} is missing from the package"
            return Response(200, body, TYPES[".html"])
        if path.startswith("/static/"):
            name = path.removeprefix("/static/")
            body = asset(name)
            if body is None:
                return error(404, f"no asset {name!r}")
            return Response(200, body, TYPES.get(name[name.rfind(".") :], "text/plain"))
        handlers = {
            "/api/projects": self.list_projects,
            "/api/overview": self.overview,
            "/api/findings": self.findings,
            "/api/finding": self.finding,
            "/api/events": self.events,
        }
        handler = handlers.get(path)
        if handler is None:
            return error(404, f"no page {path!r}")
        return await handler(request.query)

    async def list_projects(self, query: dict[str, str]) -> Response:
        known = await self.projects.known()
        if self.default_project and self.default_project not in known:
            known.insert(0, self.default_project)
        return json_response({"projects": known, "default": self.default_project})

    async def _live(self, query: dict[str, str]) -> LiveProject:
        return await self.projects.get(_project(query))

    async def overview(self, query: dict[str, str]) -> Response:
        live = await self._live(query)
        pages = {
            name: model.Page(_int(query, name, 0), _int(query, f"{name}_limit", size, MAX_LIMIT))
            for name, size in (
                ("slices", 20),
                ("waiting", 50),
                ("convergence", 50),
                ("record", 20),
                ("queue", 50),
            )
        }
        document = model.overview(live.states, pages, UNITS_PER_SLICE, datetime.now(UTC))
        document |= {"project": live.project, "seq": live.seq, "log_last": await self._last()}
        return json_response(document)

    async def _last(self) -> int:
        return await self.bus.stream_last_seq()

    async def findings(self, query: dict[str, str]) -> Response:
        live = await self._live(query)
        wanted = {name: query.get(name, "") for name in model.FILTERS}
        page = model.Page(_int(query, "offset", 0), _int(query, "limit", 50, MAX_LIMIT))
        document = model.findings_doc(live.states, wanted, page)
        return json_response(document | {"project": live.project, "seq": live.seq})

    async def finding(self, query: dict[str, str]) -> Response:
        """One finding with its evidence: the open finding, and the event that raised it."""
        live = await self._live(query)
        finding_id = query.get("id", "")
        if not finding_id or len(finding_id) > 128:
            raise BadRequest(f"id={finding_id!r}: give the id of a finding")
        found = model.find_open(live.states, finding_id)
        record = await evidence_event(
            self.bus, live.project, finding_id, found.raised_at if found else None
        )
        if found is None and record is None:
            return error(404, f"no finding {finding_id!r} in project {live.project}")
        return json_response(
            {
                "project": live.project,
                "open": model.finding_row(found) if found else None,
                "event": record_json(record) if record else None,
            }
        )

    async def events(self, query: dict[str, str]) -> Response:
        live = await self._live(query)
        return Response(
            200,
            content_type="text/event-stream",
            stream=_event_stream(live),
            headers={"X-Accel-Buffering": "no"},
        )

    async def close(self) -> None:
        await self.projects.stop()


async def _event_stream(live: LiveProject) -> AsyncIterator[bytes]:
    """``data: {"seq": N}`` each time the project's states moved; a comment line while
    nothing happens, so a dead connection is noticed."""
    seen = live.version
    yield b"retry: 1000\n" + _data(live)
    while True:
        version = await live.wait_change(seen, KEEPALIVE_S)
        if version == seen:
            yield b": idle\n\n"
            continue
        await asyncio.sleep(COALESCE_S)
        seen = live.version
        yield _data(live)


def _data(live: LiveProject) -> bytes:
    payload: dict[str, Any] = {"seq": live.seq, "version": live.version}
    return f"data: {json.dumps(payload)}\n\n".encode()
