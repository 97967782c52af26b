"""``python -m loopbus.workers.charter --nats-url URL``."""

from loopbus.workers.charter.cli import main

raise SystemExit(main())
