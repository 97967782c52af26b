"""Helpers of the page tests: the page's server as a subprocess, waiting on the browser."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

import pytest

from bus import free_port

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
DEADLINE_S = 20.0
"""A generous bound for the page to show what the log says (it normally takes well under a
second); reaching it fails the test, being fast is never asserted."""


@dataclass
class PageServer:
    url: str
    process: subprocess.Popen[bytes]

    def get(self, path: str) -> tuple[int, dict[str, str], bytes]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=30) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    def json(self, path: str) -> Any:
        status, _headers, body = self.get(path)
        assert status == 200, body
        return json.loads(body)


def start_page(nats_url: str, project: str | None = None) -> PageServer:
    port = free_port()
    command = [sys.executable, "-m", "loopbus.web", "--nats-url", nats_url, "--port", str(port)]
    if project:
        command += ["--project", project]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert process.stdout is not None
    line = process.stdout.readline().decode()
    assert f":{port}/" in line, f"the page did not start: {line}"
    return PageServer(f"http://127.0.0.1:{port}", process)


def wait_until(driver: Any, probe: Any, what: str) -> Any:
    """Poll ``probe(driver)`` until it is truthy; fail naming ``what`` after the deadline."""
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    def safe(d: Any) -> Any:
        try:
            return probe(d)
        except StaleElementReferenceException:
            return False  # the page redrew between finding and reading an element

    try:
        return WebDriverWait(driver, DEADLINE_S, poll_frequency=0.05).until(safe)
    except TimeoutException:
        pytest.fail(f"after {DEADLINE_S}s the page still does not show {what}")


def elapsed(start: float) -> float:
    return time.monotonic() - start


def choose(driver: Any, select_id: str, value: str) -> None:
    """Pick ``value`` in a select as a person would (in one step in the page, so a redraw
    between finding the option and clicking it cannot make the click miss)."""
    driver.execute_script(
        "const s = document.getElementById(arguments[0]); s.value = arguments[1];"
        "s.dispatchEvent(new Event('change'));",
        select_id,
        value,
    )


def click(driver: Any, selector: str) -> None:
    """Click the element ``selector`` names, found and clicked in one step in the page."""
    driver.execute_script("document.querySelector(arguments[0]).click();", selector)


def look(driver: Any, selector: str, script: str) -> Any:
    """``script`` (a JS expression over ``el``) on the element ``selector`` names, read in
    one step, or ``None`` when there is no such element."""
    return driver.execute_script(
        f"const el = document.querySelector(arguments[0]); return el ? ({script}) : null;",
        selector,
    )
