"""``python -m loopbus.workers.projector --nats-url URL``: run the projector daemon."""

from loopbus.workers.projector.cli import main

raise SystemExit(main())
