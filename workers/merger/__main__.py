"""``python -m loopbus.workers.merger --nats-url URL --repo PATH [--trunk main]``: the merger."""

from loopbus.workers.merger.cli import main

raise SystemExit(main())
