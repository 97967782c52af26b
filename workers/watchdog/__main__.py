"""``python -m workers.watchdog --nats-url URL``: run the watchdog daemon."""

from workers.watchdog.cli import main

raise SystemExit(main())
