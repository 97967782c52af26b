"""``python -m loopbus.workers.planner --nats-url URL --repo PATH``: run the planner."""

from loopbus.workers.planner.cli import main

raise SystemExit(main())
