"""Leases: how the replicas of one daemon split its work items, each item done once.

:mod:`.decide` (pure) turns the effects a daemon's decision wants into lease takings and
the effects of the items this replica holds; :mod:`.holding` (the shell) renews a lease
while its work runs, stops the work when the lease was taken over, and releases it.
"""
