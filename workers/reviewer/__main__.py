"""``python -m loopbus.workers.reviewer --nats-url URL --repo PATH``: run the reviewer daemon."""

from loopbus.workers.reviewer.cli import main

raise SystemExit(main())
