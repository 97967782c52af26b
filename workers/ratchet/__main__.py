"""``python -m loopbus.workers.ratchet --nats-url URL``: run the ratchet daemon."""

from loopbus.workers.ratchet.cli import main

raise SystemExit(main())
