"""``python -m workers.ratchet --nats-url URL``: run the ratchet daemon."""

from workers.ratchet.cli import main

raise SystemExit(main())
