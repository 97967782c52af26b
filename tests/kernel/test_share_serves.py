"""Project leases between replicas that serve different repositories: one process (or
kernel) serving projects A and another serving B, under one daemon name, each holds every
project it serves. Before a member line said what it serves, the rendezvous over both
members gave about half of A's projects to B, which never took them: nobody acted on them.
"""

from __future__ import annotations

from bus import Bus
from schemas import Actor
from workers.kernel.project_share import ProjectShare

TTL_S = 30.0


async def test_each_replica_holds_every_project_it_serves(bus: Bus, project: str) -> None:
    """Two shares of one daemon, serving six projects each, none in common: after a round
    each, each holds all six of its own, and neither was ever offered the other's."""
    daemon = f"serves-{project}"
    mine = {side: [f"{project}{side}{n}" for n in range(6)] for side in ("a", "b")}
    shares = {
        side: ProjectShare(
            bus,
            daemon,
            Actor(role="system", principal=f"{daemon}-{side}"),
            TTL_S,
            serves=projects,
        )
        for side, projects in mine.items()
    }
    for _ in range(2):  # the second round sees both members
        for side, share in shares.items():
            await share.round(mine[side])
    for side, share in shares.items():
        assert sorted(share.held) == sorted(mine[side])
        members = await share.serving()
        assert {tuple(serves) for _holder, serves in members} == {
            tuple(sorted(projects)) for projects in mine.values()
        }
    for share in shares.values():
        await share.leave()
