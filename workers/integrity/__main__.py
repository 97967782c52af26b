"""``python -m loopbus.workers.integrity --nats-url URL``: run the integrity daemon."""

from loopbus.workers.integrity.cli import main

raise SystemExit(main())
