"""``python -m loopbus.workers.units --nats-url URL``: run the units daemon."""

from loopbus.workers.units.cli import main

raise SystemExit(main())
