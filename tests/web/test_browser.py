"""The operator page in a real headless Chromium, against a real bus and the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

from page_events import accepted_plan, finding, halted
from pagekit import PageServer, choose, click, elapsed, look, wait_until
from plannerview import CYCLE, planner_events
from selenium.webdriver.common.by import By

from bus import Bus


def open_page(browser: Any, server: PageServer, query: str = "") -> None:
    browser.get(f"{server.url}/{query}")
    wait_until(
        browser,
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "true",
        "its first read",
    )
    # A mark that a reload would erase: the checks below prove no reload happened.
    browser.execute_script("window.stillTheSamePage = true;")


def same_page(browser: Any) -> bool:
    return bool(browser.execute_script("return window.stillTheSamePage === true;"))


def rows(browser: Any) -> list[Any]:
    return browser.find_elements(By.CSS_SELECTOR, "#findings tbody tr[data-id]")


def live(browser: Any) -> bool:
    return "on" in browser.find_element(By.ID, "live").get_attribute("class")


def test_the_page_loads_with_every_section(browser: Any, page_server: PageServer, project: str):
    """The page opens on the project, says it is live, and has every section it promises."""
    open_page(browser, page_server)
    wait_until(browser, live, "the live stream connected")
    assert look(browser, "#project", "el.value") == project
    headings = [h.text for h in browser.find_elements(By.TAG_NAME, "h2")]
    for wanted in (
        "Trunk and merge queue",
        "What the run is waiting on",
        "Slices",
        "Open findings",
        "Budgets",
        "Convergence",
        "Run record",
    ):
        assert wanted in headings
    assert browser.find_element(By.ID, "trunk").get_attribute("data-colour") == "unknown"


def test_a_finding_reported_through_the_cli_appears_without_a_reload(
    browser: Any, page_server: PageServer, project: str, nats_url: str
):
    """`loopbus report finding` shows up on an open page by itself, linked to its evidence."""
    open_page(browser, page_server)
    wait_until(browser, live, "the live stream connected")
    assert rows(browser) == []
    reported = subprocess.run(
        [
            sys.executable,
            "-m",
            "loopbus.cli",
            "report",
            "finding",
            "--project",
            project,
            "--new",
            "--producer",
            "reviewer",
            "--target",
            "code:src/app.py:10-14",
            "--severity",
            "high",
            "--criterion",
            "C1",
            "--message",
            "unchecked None",
        ],
        capture_output=True,
        text=True,
        env=os.environ | {"LOOPBUS_NATS_URL": nats_url},
        timeout=60,
        check=False,
    )
    assert reported.returncode == 0, reported.stderr
    published = time.monotonic()
    wait_until(browser, lambda d: any("unchecked None" in r.text for r in rows(d)), "the finding")
    print(f"finding shown {elapsed(published):.3f}s after the CLI returned")
    assert same_page(browser)
    first = "#findings tbody tr[data-id]"
    assert look(browser, first, "el.dataset.severity") == "high"
    browser.get(look(browser, f"{first} a", "el.href"))
    wait_until(
        browser,
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "true",
        "the evidence page",
    )
    event = browser.find_element(By.ID, "event").text
    assert "unchecked None" in event and '"seq"' in event and "code" in event


async def test_a_unit_state_change_recolours_it(
    browser: Any, page_server: PageServer, project: str, bus: Bus
):
    """A unit drawn in its wave changes colour when the log moves it, without a reload."""
    await bus.publish_many(accepted_plan(project, "S1", [("U1", []), ("U2", ["U1"])]))
    open_page(browser, page_server)
    box = '.unit[data-unit="U2"]'
    wait_until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, box), "unit U2")
    assert look(browser, box, "el.dataset.state") == "planned"
    before = look(browser, box, "getComputedStyle(el).backgroundColor")
    waves = browser.find_elements(By.CSS_SELECTOR, '[data-slice="S1"] .wave')
    assert len(waves) == 2, "U2 depends on U1: two waves"
    await bus.publish(halted(project, "U2"))
    wait_until(
        browser,
        lambda d: look(d, box, "el.dataset.state") == "failed",
        "U2 failed",
    )
    after = look(browser, box, "getComputedStyle(el).backgroundColor")
    assert after != before
    assert same_page(browser)


async def test_filters_narrow_the_open_findings(
    browser: Any, page_server: PageServer, project: str, bus: Bus
):
    """Each filter (severity, producer, class, unit) shows only the findings that match."""
    await bus.publish_many(
        [
            finding(project, "first", unit="U1", severity="high", line=1),
            finding(project, "second", unit="U2", severity="low", line=2),
            finding(
                project,
                "third",
                unit="U2",
                severity="high",
                producer="standards",
                cls="misaligned",
                line=3,
            ),
        ]
    )
    open_page(browser, page_server)
    wait_until(browser, lambda d: len(rows(d)) == 3, "three findings")

    def shown(d: Any) -> set[str]:
        return {r.find_element(By.CSS_SELECTOR, "td.msg").text for r in rows(d)}

    choose(browser, "f-severity", "high")
    wait_until(browser, lambda d: shown(d) == {"first", "third"}, "only the high ones")
    choose(browser, "f-producer", "standards")
    wait_until(browser, lambda d: shown(d) == {"third"}, "only the standards one")
    click(browser, "#f-clear")
    wait_until(browser, lambda d: len(rows(d)) == 3, "all three again")
    choose(browser, "f-class", "misaligned")
    wait_until(browser, lambda d: shown(d) == {"third"}, "only the misaligned one")
    click(browser, "#f-clear")
    browser.find_element(By.ID, "f-unit").send_keys("U2")
    wait_until(browser, lambda d: shown(d) == {"second", "third"}, "only U2's")
    assert "unit=U2" in browser.current_url, "the filter is in the address, to share it"
    assert same_page(browser)


async def test_the_planner_box_shows_where_planning_stands(
    browser: Any, page_server: PageServer, project: str, bus: Bus
):
    """A running charter's planner is drawn in its own box: the slice being planned, the
    proposal awaiting approval, the refused try with its first reason, reconnaissance."""
    open_page(browser, page_server)
    assert look(browser, "#planner", "el.hidden") is True  # no charter: no planner
    await bus.publish_many(planner_events(project))
    wait_until(
        browser,
        lambda d: look(d, "#planner", "el.dataset.proposal") == "awaiting approval",
        "the planner's proposal",
    )
    assert look(browser, "#planner", "el.hidden") is False
    assert look(browser, "#planner", "el.dataset.planning") == "S1"
    text = browser.find_element(By.ID, "planner").text
    assert f"refused: S1 try 1: {CYCLE} (+1 more reasons)" in text
    assert "reconnaissance: ran " in text and ", 2 facts" in text
    assert same_page(browser)
