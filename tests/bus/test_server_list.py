"""A NATS URL may list several servers separated by commas (how a cluster is addressed)."""

from __future__ import annotations

import pytest

from bus import BusUnreachable, connect, connect_once, free_port
from bus.connection import server_urls


@pytest.mark.parametrize(
    ("url", "servers"),
    [
        pytest.param("nats://a:4222", ["nats://a:4222"], id="one"),
        pytest.param(
            "nats://n1:4222,nats://n2:4222,nats://n3:4222",
            ["nats://n1:4222", "nats://n2:4222", "nats://n3:4222"],
            id="three",
        ),
        pytest.param(" nats://a:1 , nats://b:2 ,", ["nats://a:1", "nats://b:2"], id="spaces"),
    ],
)
def test_server_urls_splits_on_commas(url: str, servers: list[str]) -> None:
    """A comma-separated URL becomes the list of servers, blanks and spaces dropped."""
    assert server_urls(url) == servers


@pytest.mark.parametrize("connector", [connect, connect_once], ids=["connect", "connect_once"])
async def test_a_list_with_one_live_server_connects(connector: object, nats_url: str) -> None:
    """connect and connect_once reach the cluster when any listed server answers."""
    dead = f"nats://127.0.0.1:{free_port()}"
    bus = await connector(f"{dead},{nats_url}")  # type: ignore[operator]
    try:
        assert bus.nc.is_connected
    finally:
        await bus.close()


async def test_a_list_with_no_live_server_names_the_whole_url() -> None:
    """When no listed server answers, the error names the URL as given."""
    url = f"nats://127.0.0.1:{free_port()},nats://127.0.0.1:{free_port()}"
    with pytest.raises(BusUnreachable, match=url):
        await connect_once(url)
