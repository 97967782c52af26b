"""The operator page for real: its server as a subprocess on a real bus, a real headless
Chromium (Debian's ``chromium`` and ``chromium-driver``; ``.ci/run`` installs them)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))

from pagekit import CHROMEDRIVER, CHROMIUM, PageServer, start_page


@pytest.fixture
def page_server(nats_url: str, project: str) -> Iterator[PageServer]:
    """The page's server (``python -m loopbus.web``) opening on this test's project."""
    server = start_page(nats_url, project)
    yield server
    server.process.terminate()
    server.process.wait(timeout=10)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the session, driven through Debian's chromedriver."""
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail(
            f"headless Chromium is needed ({CHROMIUM}, {CHROMEDRIVER}): "
            "apt-get install -y chromium chromium-driver (.ci/run does)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="loopbus-chromium-")
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
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
