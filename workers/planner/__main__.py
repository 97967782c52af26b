"""``python -m workers.planner --nats-url URL --repo PATH``: run the planner."""

from workers.planner.cli import main

raise SystemExit(main())
