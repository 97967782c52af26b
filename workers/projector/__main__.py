"""``python -m workers.projector --nats-url URL``: run the projector daemon."""

from workers.projector.cli import main

raise SystemExit(main())
