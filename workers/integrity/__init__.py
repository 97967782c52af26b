"""The integrity daemon: names every forger in a finding (see projections.integrity)."""
