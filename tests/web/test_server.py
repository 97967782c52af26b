"""The page's server over HTTP: read-only, one-line errors, its own assets, status's folds."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

from page_events import accepted_plan, finding, halted
from pagekit import PageServer, start_page
from plannerview import CYCLE, fold_with_projector, planner_events

from bus import Bus, Views
from schemas import Actor
from schemas.leases import LeaseTaken


def test_the_page_is_read_only_and_ships_its_own_assets(page_server: PageServer):
    """GET serves the page and its assets from the package under a self-only policy; any
    other method is refused, and an unknown asset is a 404."""
    status, headers, body = page_server.get("/")
    assert status == 200 and b"/static/page.js" in body
    assert b"http://" not in body and b"https://" not in body, "nothing from elsewhere"
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    for asset in ("page.js", "page.css", "evidence.js"):
        status, _headers, body = page_server.get(f"/static/{asset}")
        assert status == 200 and body
    assert page_server.get("/static/../serve.py")[0] == 404
    request = "POST /api/findings HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
    host, port = page_server.url.removeprefix("http://").split(":")
    answer = asyncio.run(_raw(host, int(port), request.encode()))
    assert answer.startswith(b"HTTP/1.1 405"), answer[:80]
    assert b"read-only" in answer


async def _raw(host: str, port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(request)
    await writer.drain()
    data = await reader.read()
    writer.close()
    return data


def test_bad_parameters_get_one_line_naming_them(page_server: PageServer):
    """A bad project id or offset is a 400 whose one line names the parameter and value."""
    status, _headers, body = page_server.get("/api/overview?project=no%20spaces")
    assert status == 400
    assert json.loads(body)["error"].startswith("project='no spaces' is not a project id")
    status, _headers, body = page_server.get("/api/findings?project=p&offset=-3")
    assert status == 400 and "offset='-3'" in json.loads(body)["error"]
    assert page_server.get("/api/nothing")[0] == 404


async def test_the_page_shows_what_status_shows(
    nats_url: str, project: str, bus: Bus, page_server: PageServer
):
    """After the projector folded the log, the page (live, and restarted from the views)
    counts the same units, states and open findings as `loopbus status --json`."""
    events = accepted_plan(project, "S1", [("U1", []), ("U2", ["U1"]), ("U3", [])])
    events += [finding(project, f"f{i}", unit="U1", line=i) for i in range(1, 6)]
    events.append(halted(project, "U3"))
    await bus.publish_many(events)
    last = await bus.stream_last_seq()
    projector = subprocess.Popen(
        [sys.executable, "-m", "workers.projector", "--nats-url", nats_url],
        stderr=subprocess.DEVNULL,
    )
    try:
        views = await Views.open(bus)
        for _ in range(600):
            if (await views.checkpoint()).seq >= last:
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the projector did not fold the log within a minute")
    finally:
        projector.terminate()
        projector.wait(timeout=10)
    status = subprocess.run(
        [sys.executable, "-m", "loopbus.cli", "status", "--project", project, "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=os.environ | {"LOOPBUS_NATS_URL": nats_url},
    )
    state = json.loads(status.stdout)["state"]
    expected_states = {u: v["state"] or "planned" for u, v in state["units"]["units"].items()}
    expected_open = sum(len(scope) for scope in state["findings"]["open"].values())
    restarted = start_page(nats_url, project)
    try:
        for server in (page_server, restarted):
            overview = server.json(f"/api/overview?project={project}")
            drawn = {
                u["unit"]: u["state"]
                for s in overview["slices"]["items"]
                for wave in s["waves"]
                for group in wave
                for u in group
            }
            assert drawn == expected_states == {"U1": "planned", "U2": "planned", "U3": "failed"}
            assert overview["counts"]["open_findings"] == expected_open == 5
            assert server.json(f"/api/findings?project={project}")["total"] == 5
    finally:
        restarted.process.terminate()
        restarted.process.wait(timeout=10)


async def test_the_page_shows_where_planning_stands(
    nats_url: str, project: str, bus: Bus, page_server: PageServer
):
    """The overview document carries the planner of the running charter — the slice being
    planned, the proposal awaiting approval, the refused try with its first reason,
    reconnaissance — from the projector's views, and the page draws it in its own box."""
    events = planner_events(project)
    await bus.publish_many(events)
    await fold_with_projector(bus, nats_url)
    planner = page_server.json(f"/api/overview?project={project}")["planner"]
    assert planner["run"] == events[0].id
    assert planner["planning"] == "S1" and planner["running"] == []
    assert planner["proposal"]["status"] == "awaiting approval"
    assert (planner["proposal"]["slice"], planner["proposal"]["attempt"]) == ("S1", 2)
    assert planner["refused"] == [{"slice": "S1", "attempt": 1, "reason": CYCLE, "reasons": 2}]
    assert planner["recon"] == {
        "at": events[2].at.isoformat(),
        "facts": 2,
        "error": "",
        "invalidated": 0,
    }
    assert planner["stopped"] == ""
    assert f"refused: S1 try 1: {CYCLE} (+1 more reasons)" in [
        line.strip() for line in planner["lines"]
    ]
    _status, _headers, html = page_server.get("/")
    assert b'id="planner"' in html
    _status, _headers, script = page_server.get("/static/page.js")
    assert b"renderPlanner(overview.planner)" in script


def test_the_page_shows_no_planner_without_a_charter(page_server: PageServer, project: str):
    planner = page_server.json(f"/api/overview?project={project}")["planner"]
    assert planner["run"] == "" and planner["lines"] == []


async def test_the_page_shows_who_holds_which_work_item(
    nats_url: str, project: str, bus: Bus, page_server: PageServer
):
    """A lease taken and one taken over after a lapse are on the overview, as status
    says them, and the page draws them in their own box."""
    system = Actor(role="system", principal="gate-runner@h")
    first = LeaseTaken(
        project=project, actor=system, work="gate", item="A1", holder="r1", ttl_s=600, what="ask"
    )
    over = LeaseTaken(
        project=project,
        actor=system,
        work="gate",
        item="A1",
        holder="r2",
        ttl_s=600,
        what="ask",
        lapsed="r1",
    )
    await bus.publish_many([first, over])
    await fold_with_projector(bus, nats_url)
    leases = page_server.json(f"/api/overview?project={project}")["leases"]
    assert leases["live"] == 1
    assert leases["lines"][0].startswith("leases: 1 live (gate 2 taken, 0 released, 1 lapsed)")
    assert any("r2 holds gate ask" in line for line in leases["lines"])
    assert any("ask of r1, taken over by r2" in line for line in leases["lines"])
    _status, _headers, html = page_server.get("/")
    assert b'id="leases"' in html
