"""The host networking dockerd changes, recorded before it starts and put back after it stops.

dockerd leaves behind, when it exits: the ``docker0`` bridge, its iptables chains and NAT
rules (``DOCKER``, ``DOCKER-USER``, ``DOCKER-ISOLATION-STAGE-*``, a MASQUERADE rule), the
FORWARD chain's policy turned to DROP, and ``net.ipv4.ip_forward`` turned on. Only used when
compose-check itself started dockerd: an engine someone else runs is theirs to keep.

Tables are put back whole: a table that existed before is restored from its
``iptables-save`` text, one that did not is emptied and (with the nf_tables backend)
deleted, so afterwards ``iptables-save`` prints what it printed before.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from .shell import run

FAMILIES = {"ip": "iptables", "ip6": "ip6tables"}
SYSCTLS = (
    "net/ipv4/ip_forward",
    "net/ipv6/conf/all/forwarding",
    "net/bridge/bridge-nf-call-iptables",
    "net/bridge/bridge-nf-call-ip6tables",
    "net/bridge/bridge-nf-call-arptables",
)
# Links dockerd and compose create: the default bridge, compose networks, container ends.
DOCKER_LINK = re.compile(r"^(docker0|br-[0-9a-f]{12}|veth[0-9a-f]{7})$")
BUILTIN = {
    "filter": ("INPUT", "FORWARD", "OUTPUT"),
    "nat": ("PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"),
    "mangle": ("PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"),
    "raw": ("PREROUTING", "OUTPUT"),
}


@dataclass(frozen=True)
class NetState:
    tables: dict[str, dict[str, str]]  # family -> table -> its iptables-save block
    links: frozenset[str]
    sysctls: dict[str, str]


def parse_save(text: str) -> dict[str, str]:
    """``iptables-save`` output as table name -> the table's block, comments dropped.

    Packet counters (``[0:0]``) are zeroed so two saves of the same rules compare equal.
    """
    tables: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("*"):
            current = tables.setdefault(line[1:], [])
        if current is not None:
            current.append(re.sub(r"\[\d+:\d+\]$", "[0:0]", line))
    return {name: "\n".join(lines) + "\n" for name, lines in tables.items()}


def _links() -> frozenset[str]:
    return frozenset(p.name for p in Path("/sys/class/net").iterdir())


def _sysctls() -> dict[str, str]:
    found = {}
    for name in SYSCTLS:
        path = Path("/proc/sys") / name
        if path.exists():
            found[name] = path.read_text().strip()
    return found


def _tables() -> dict[str, dict[str, str]]:
    return {
        family: parse_save(run([f"{tool}-save"], check=False).stdout)
        for family, tool in FAMILIES.items()
    }


def snapshot() -> NetState:
    """What the host's networking looks like now."""
    return NetState(tables=_tables(), links=_links(), sysctls=_sysctls())


def dump(state: NetState) -> str:
    """``state`` as JSON, for a later process to restore (.ci/run keeps it across pytest)."""
    return json.dumps(
        {"tables": state.tables, "links": sorted(state.links), "sysctls": state.sysctls}
    )


def load(text: str) -> NetState:
    """The :class:`NetState` :func:`dump` wrote."""
    data = json.loads(text)
    return NetState(
        tables={f: dict(t) for f, t in data["tables"].items()},
        links=frozenset(data["links"]),
        sysctls=dict(data["sysctls"]),
    )


def _nf_tables_backend(tool: str) -> bool:
    return "nf_tables" in run([tool, "--version"], check=False).stdout


def _empty_table(family: str, table: str) -> None:
    tool = FAMILIES[family]
    run([tool, "-t", table, "-F"], check=False)
    run([tool, "-t", table, "-X"], check=False)
    for chain in BUILTIN.get(table, ()):
        run([tool, "-t", table, "-P", chain, "ACCEPT"], check=False)
    if _nf_tables_backend(tool):
        run(["nft", "delete", "table", family, table], check=False)


def restore(before: NetState) -> list[str]:
    """Put back what dockerd changed since ``before``; the lines say what was done."""
    done = []
    for link in sorted(_links() - before.links):
        if DOCKER_LINK.match(link):
            run(["ip", "link", "delete", link], check=False)
            done.append(f"deleted link {link}")
    now = _tables()
    for family, tables in now.items():
        for table, block in tables.items():
            old = before.tables[family].get(table)
            if old == block:
                continue
            if old is None:
                _empty_table(family, table)
                done.append(f"removed {family} table {table}")
            else:
                run([f"{FAMILIES[family]}-restore"], stdin=old)  # COMMIT included
                done.append(f"restored {family} table {table}")
    for name, value in before.sysctls.items():
        path = Path("/proc/sys") / name
        if path.exists() and path.read_text().strip() != value:
            path.write_text(value + "\n")
            done.append(f"{name.replace('/', '.')} back to {value}")
    return done


def residue(before: NetState) -> list[str]:
    """What still differs from ``before`` (empty when the host is as it was)."""
    after = snapshot()
    left = [f"link {name}" for name in sorted(after.links - before.links)]
    for family, tables in after.tables.items():
        for table in sorted(set(tables) | set(before.tables[family])):
            if tables.get(table) != before.tables[family].get(table):
                left.append(f"{family} table {table}")
    left += [
        f"{name.replace('/', '.')}={value} (was {before.sysctls.get(name)})"
        for name, value in after.sysctls.items()
        if before.sysctls.get(name) != value
    ]
    return left
