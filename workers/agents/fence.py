"""A network for one agent container that reaches only the ``host:port`` pairs it was given.

``[agents] network`` lists what an agent may reach (a package index, an API). The fence
is a bridge network of its own for the run (inter-container traffic off) and one
iptables chain, ``LB-<run>``, that every packet from the network's subnet jumps to, both
where Docker forwards it (``DOCKER-USER``) and where the host receives it (``INPUT``):
TCP to each allowed address and port is accepted, everything else rejected. Names are
resolved on the host when the run starts and handed to the container as ``/etc/hosts``
entries, because DNS itself would be a way out (the engine's resolver asks upstream from
inside the container's namespace, where the chain rejects it).

The rules exist before the container does and are removed, with the network, only after
it is gone. A crash in between leaves a chain named ``LB-…`` and a network labelled
``org.loopbus.agent``; both are safe to delete by hand (they only ever narrow).
"""

from __future__ import annotations

import asyncio
import ipaddress
import shutil
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import aiodocker
    from aiodocker.networks import DockerNetwork


class FenceError(Exception):
    """Raised when the fence cannot be built; the message says what to fix."""


@dataclass(frozen=True, slots=True)
class Allowed:
    host: str
    address: str
    port: int


async def resolve(pairs: tuple[str, ...]) -> list[Allowed]:
    """Each ``host:port`` with the IPv4 addresses its host has now."""
    loop = asyncio.get_running_loop()
    allowed: list[Allowed] = []
    for pair in pairs:
        host, _, port_text = pair.rpartition(":")
        if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise FenceError(
                f"[agents] network entry {pair!r} is not host:port (e.g. 'pypi.org:443')"
            )
        try:
            infos = await loop.getaddrinfo(host, int(port_text), family=socket.AF_INET)
        except socket.gaierror as exc:
            raise FenceError(
                f"[agents] network entry {pair!r}: {host} does not resolve ({exc}); "
                "fix the name or remove the entry"
            ) from exc
        for address in dict.fromkeys(str(info[4][0]) for info in infos):
            allowed.append(Allowed(host, address, int(port_text)))
    return allowed


async def _iptables(*words: str) -> None:
    process = await asyncio.create_subprocess_exec(
        "iptables",
        "-w",  # wait for the xtables lock Docker also takes
        *words,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await process.communicate()
    if process.returncode != 0:
        raise FenceError(f"iptables {' '.join(words)}: {err.decode(errors='replace').strip()}")


@dataclass
class Fence:
    """One run's network and chain; :meth:`close` removes both and may be called twice."""

    docker: aiodocker.Docker
    run_id: str
    allowed: list[Allowed]
    labels: dict[str, str]
    network: DockerNetwork | None = None
    subnet: str = ""
    jumps: list[tuple[str, ...]] = field(default_factory=list)
    chain_made: bool = False

    @property
    def name(self) -> str:
        return f"loopbus-agent-{self.run_id}"

    @property
    def chain(self) -> str:
        return f"LB-{self.run_id}"[:28]  # iptables' limit on chain names

    def extra_hosts(self) -> list[str]:
        """``/etc/hosts`` lines for the allowed names that are not addresses already."""
        return [f"{a.host}:{a.address}" for a in self.allowed if not _is_address(a.host)]

    async def open(self) -> None:
        if shutil.which("iptables") is None:
            raise FenceError(
                "[agents] network needs iptables on the host to limit what the agent "
                "reaches, and there is none: install iptables or set [agents] network = []"
            )
        config: dict[str, Any] = {
            "Name": self.name,
            "Driver": "bridge",
            "CheckDuplicate": True,
            # No IPv6: Docker then turns it off inside the container, so the IPv4 chain
            # is the only way out (an agent without CAP_NET_ADMIN cannot turn it back on).
            "EnableIPv6": False,
            "Labels": self.labels,
            "Options": {"com.docker.network.bridge.enable_icc": "false"},
        }
        self.network = await self.docker.networks.create(config)
        info = await self.network.show()
        self.subnet = str(info["IPAM"]["Config"][0]["Subnet"])
        await _iptables("-N", self.chain)
        self.chain_made = True
        for a in self.allowed:
            await _iptables(
                "-A", self.chain, "-d", a.address, "-p", "tcp", "--dport", str(a.port),
                "-j", "ACCEPT",
            )  # fmt: skip
        await _iptables("-A", self.chain, "-j", "REJECT")
        for table_chain in ("DOCKER-USER", "INPUT"):
            jump = (table_chain, "-s", self.subnet, "-j", self.chain)
            await _iptables("-I", jump[0], "1", *jump[1:])
            self.jumps.append(jump)

    async def close(self) -> None:
        """Remove the jumps, the chain and the network; each step even if one failed."""
        errors: list[str] = []
        while self.jumps:
            jump = self.jumps.pop()
            try:
                await _iptables("-D", *jump)
            except FenceError as exc:
                errors.append(str(exc))
        if self.chain_made:
            try:
                await _iptables("-F", self.chain)
                await _iptables("-X", self.chain)
                self.chain_made = False
            except FenceError as exc:
                errors.append(str(exc))
        if self.network is not None:
            from aiodocker.exceptions import DockerError

            try:
                await self.network.delete()
                self.network = None
            except DockerError as exc:
                errors.append(f"network {self.name}: {exc.message}")
        if errors:
            raise FenceError("; ".join(errors))


async def remove_fence(docker: aiodocker.Docker, run_id: str) -> None:
    """Remove what a :class:`Fence` for ``run_id`` left (its process died before
    :meth:`Fence.close`): every jump to its chain, the chain, the network."""
    from aiodocker.exceptions import DockerError

    shape = Fence(docker, run_id, [], {})
    chain = shape.chain
    for parent in ("DOCKER-USER", "INPUT"):
        process = await asyncio.create_subprocess_exec(
            "iptables", "-w", "-S", parent, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        listing, _ = await process.communicate()
        for rule in listing.decode().splitlines():
            words = rule.split()
            if words[:1] == ["-A"] and words[-2:] == ["-j", chain]:
                await _iptables("-D", *words[1:])
    listing_chains = await asyncio.create_subprocess_exec(
        "iptables", "-w", "-S", chain, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    if await listing_chains.wait() == 0:
        await _iptables("-F", chain)
        await _iptables("-X", chain)
    try:
        network = await docker.networks.get(shape.name)
    except DockerError as exc:
        if exc.status == 404:
            return
        raise
    await network.delete()


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
