"""``python -m loopbus.workers.watchdog --nats-url URL``: run the watchdog daemon."""

from loopbus.workers.watchdog.cli import main

raise SystemExit(main())
