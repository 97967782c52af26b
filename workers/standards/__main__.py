"""``python -m loopbus.workers.standards --nats-url URL``: run the standards daemon."""

from loopbus.workers.standards.cli import main

raise SystemExit(main())
