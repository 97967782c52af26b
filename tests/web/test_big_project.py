"""A project of 10,000 units and 100,000 open findings: the page pages it."""

from __future__ import annotations

import time
from typing import Any

from page_events import finding
from pagekit import PageServer, click, elapsed, wait_until
from selenium.webdriver.common.by import By

from bus import Bus
from schemas import Actor, Event, UnitPlanned

UNITS = 10_000
FINDINGS = 100_000
SYSTEM = Actor(role="system", principal="tests")


def big(project: str) -> list[Event]:
    events: list[Event] = [
        UnitPlanned(project=project, actor=SYSTEM, unit=f"U{i}", slice=f"S{i // 100}")
        for i in range(UNITS)
    ]
    events += [
        finding(project, f"finding {i}", unit=f"U{i % UNITS}", line=i // UNITS + 1)
        for i in range(FINDINGS)
    ]
    return events


async def test_a_big_project_is_shown_a_page_at_a_time(
    browser: Any, page_server: PageServer, project: str, bus: Bus
):
    """10,000 units and 100,000 findings: one page of slices and of findings, and paging on."""
    await bus.publish_many(big(project))
    started = time.monotonic()
    browser.get(f"{page_server.url}/")
    wait_until(
        browser,
        lambda d: d.find_element(By.ID, "findings-count").text.startswith(f"{FINDINGS} of"),
        "every finding counted",
    )
    print(f"big project shown {elapsed(started):.1f}s after opening the page")
    drawn = browser.find_elements(By.CSS_SELECTOR, "#slices .unit")
    assert 0 < len(drawn) <= 20 * 100, "one page of slices is drawn, not 10,000 units"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#findings tbody tr[data-id]")) == 50
    pager = browser.find_element(By.CSS_SELECTOR, '.pager[data-section="findings"]')
    assert f"1 to 50 of {FINDINGS}" in pager.text
    click(browser, '.pager[data-section="findings"] [data-move="next"]')
    wait_until(
        browser,
        lambda d: (
            f"51 to 100 of {FINDINGS}"
            in d.find_element(By.CSS_SELECTOR, '.pager[data-section="findings"]').text
        ),
        "the second page",
    )
    slices = browser.find_element(By.CSS_SELECTOR, '.pager[data-section="slices"]')
    assert f"1 to 20 of {UNITS // 100}" in slices.text
    browser.find_element(By.ID, "f-unit").send_keys("U42")
    wait_until(
        browser,
        lambda d: d.find_element(By.ID, "findings-count").text.startswith(
            f"{FINDINGS // UNITS} of"
        ),
        "U42's findings only",
    )
