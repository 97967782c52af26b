"""Take docs/img/operator-page.png: the page on a demo-like slice (not collected by pytest).

    python tests/web/screenshot.py [--out docs/img/operator-page.png]

Starts its own nats-server, publishes the chain-versus-fan slice of docs/plans.md with
units in every state, findings and a budget, serves the page and photographs it in
headless Chromium.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from page_events import SYSTEM, accepted_plan, finding
from pagekit import CHROMEDRIVER, CHROMIUM, start_page

from bus import EmbeddedServer, connect, ensure_log, free_port
from projections.claims import Move, transition_event
from schemas import Block, Event, Outcome, new_id

PROJECT = "demo"
UNITS = [("B", []), ("A", []), ("C", ["A"]), ("D", ["C"]), ("E", ["B"]), ("F", ["B"])]


def moves() -> list[Event]:
    done = Outcome(summary="merged on a green trunk", ended_by="merged")
    steps = [
        Move("A", None, "working", "started"),
        Move("B", None, "working", "started"),
        Move("A", "working", "done", "merged", outcome=done),
        Move("C", None, "working", "started"),
        Move("C", "working", "blocked", "blocked", block=Block("awaiting-operator", "spec-C2")),
        Move(
            "F",
            None,
            "failed",
            "halted",
            outcome=Outcome(summary="out of budget", ended_by="halted"),
        ),
    ]
    return [transition_event(m, PROJECT, SYSTEM, new_id()) for m in steps]


async def publish(url: str) -> None:
    bus = await connect(url, name="screenshot")
    await ensure_log(bus.js)
    events = accepted_plan(PROJECT, "S1", UNITS) + moves()
    events += [
        finding(PROJECT, "unchecked None from parse()", unit="C", severity="high", line=14),
        finding(PROJECT, "total rounds half-cents down", unit="C", severity="medium", line=40),
        finding(
            PROJECT,
            "helper is never called",
            unit="B",
            severity="low",
            producer="standards",
            line=7,
        ),
        finding(
            PROJECT,
            "the report should be per customer",
            severity="high",
            producer="operator",
            cls="misaligned",
            line=1,
        ),
    ]
    await bus.publish_many(events)
    await bus.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("docs/img/operator-page.png"))
    args = parser.parse_args()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    store = Path(tempfile.mkdtemp(prefix="loopbus-shot-"))
    server = EmbeddedServer(store / "nats", port=free_port(), auth=None)
    asyncio.run(server.start())
    page = None
    driver = None
    try:
        asyncio.run(publish(server.url))
        page = start_page(server.url, PROJECT)
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in (
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1280,1500",
            f"--user-data-dir={store / 'chromium'}",
        ):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        driver.get(page.url + "/")
        for _ in range(200):
            if driver.execute_script(
                "return document.body.dataset.loaded === 'true' && "
                "document.querySelectorAll('#findings tr[data-id]').length"
                " === 4"
            ):
                break
            time.sleep(0.05)
        time.sleep(0.5)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(args.out))
        print(f"wrote {args.out}")
    finally:
        if driver is not None:
            driver.quit()
        if page is not None:
            page.process.terminate()
            page.process.wait(timeout=10)
        server.stop()
        shutil.rmtree(store, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
