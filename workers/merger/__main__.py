"""``python -m workers.merger --nats-url URL --repo PATH [--trunk main]``: the merger."""

from workers.merger.cli import main

raise SystemExit(main())
