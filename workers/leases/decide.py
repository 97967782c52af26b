"""Which work items this replica may start: the pure half of leasing.

A daemon's decision names the items it would work on, each as the :class:`Effect` that
does it, in the order it wants them done. :func:`claim` passes through the effects of
items this replica holds a live lease on, and asks to take a lease (a conditional
publish on the item's lease subject, so one replica wins) for as many free items as it
has free slots. An item another replica holds live is left to it; one whose lease ran out
unrenewed (its holder stopped or died mid-item) is taken over, the taking naming the
lapsed holder. A replica therefore never takes more than ``slots`` items at once, and the
others take the rest.

Each taking carries the project's deadline from the policy (``deadlines``): the holder
gives the item up by then, and past it any replica takes the item over even while its
holder still renews (a stuck holder). A replica that gave an item up as overran leaves
it to the others for one lease lifetime.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import msgspec

from projections import leases
from projections.intents import E, Intent, IntentOf, PublishIf
from projections.intents import Held as Held  # named here too, where lease readers look
from schemas.ids import fixed_id
from schemas.leases import LeaseTaken, Work
from schemas.subjects import lease_subject
from workers.kernel import World
from workers.leases.names import holder_name as holder_name
from workers.leases.names import item_token as item_token


@dataclass(frozen=True)
class Policy:
    """This replica's part in leasing: who it is, how long a lease lives, how many items
    it works on at once."""

    holder: str
    ttl_s: float
    slots: int
    deadlines: Mapping[str, float] = field(default_factory=dict)
    """Project -> seconds an item may be held from its taking (none: no deadline)."""


Asked = TypeVar("Asked", bound=Intent)


@dataclass(frozen=True)
class Item(Generic[E]):
    """One work item a decision wants done: its lease token, a short description, and
    the effect that does it."""

    work: Work
    item: str
    what: str
    effect: E


def claim(world: World, items: Sequence[Item[E]], policy: Policy) -> list[IntentOf[E]]:
    """The effects of held items, and the takings of free or lapsed ones (see module)."""
    state: leases.LeasesState = world.state(leases.FOLD.name)
    keys = {i.effect.key for i in items}
    free = policy.slots - sum(1 for key in world.running if key in keys)
    intents: list[IntentOf[E]] = []
    ms = int(world.now.timestamp() * 1000)
    for wanted in items:
        key = wanted.effect.key
        if key in world.running or key in world.failed:
            continue
        if leases.left_by(state, wanted.work, wanted.item, policy.holder, world.now):
            continue  # it overran here: another replica's turn first
        lease = leases.lease_of(state, wanted.work, wanted.item)
        subject = lease_subject(world.project, wanted.work, wanted.item)
        seq = world.seqs.get(subject, 0)
        mine = lease is not None and lease.holder == policy.holder
        if mine and leases.live(lease, world.now):
            if free <= 0:
                continue  # held, but every slot is busy: it waits (renewed by nobody)
            held = Held(
                project=world.project,
                work=wanted.work,
                item=wanted.item,
                holder=policy.holder,
                ttl_s=policy.ttl_s,
                seq=seq,
                deadline=lease.deadline if lease is not None else None,
            )
            intents.append(msgspec.structs.replace(wanted.effect, lease=held))
            free -= 1
            continue
        if lease is not None and leases.live(lease, world.now):
            continue  # another replica works on it
        if free <= 0:
            continue
        taking = LeaseTaken(
            # A retried publish of this same taking is stored once.
            id=fixed_id(ms, f"lease:{wanted.work}:{wanted.item}:{policy.holder}:{seq}"),
            project=world.project,
            actor=world.actor,
            at=world.now,
            work=wanted.work,
            item=wanted.item,
            holder=policy.holder,
            ttl_s=policy.ttl_s,
            what=wanted.what,
            lapsed=lease.holder if lease is not None else None,
            deadline_s=policy.deadlines.get(world.project),
        )
        intents.append(PublishIf(taking, seq))
        free -= 1
    return intents


def leased(
    world: World,
    intents: Sequence[Asked],
    kind: type[E],
    work: Work,
    policy: Policy,
    what: Callable[[E], str],
) -> list[Asked | IntentOf[E]]:
    """``intents`` with every effect of type ``kind`` put under a lease (its item named by
    its key): the effects this replica holds, the takings of free items, nothing for the
    items another replica holds. (``kind`` is one of the effects in ``Asked``, so the result
    is ``Asked``'s intents again.)"""
    kept: list[Asked | IntentOf[E]] = []
    items: list[Item[E]] = []
    for intent in intents:
        if isinstance(intent, kind):
            items.append(Item(work, item_token(intent.key), what(intent), intent))
        else:
            kept.append(intent)
    return [*kept, *claim(world, items, policy)]
