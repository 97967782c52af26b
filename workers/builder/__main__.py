"""``python -m loopbus.workers.builder --nats-url URL --repo PATH``: run the builder daemon."""

from loopbus.workers.builder.cli import main

raise SystemExit(main())
