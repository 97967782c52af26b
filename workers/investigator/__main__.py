"""``python -m loopbus.workers.investigator --nats-url URL --repo PATH``: run the investigator."""

from loopbus.workers.investigator.cli import main

raise SystemExit(main())
