"""``python -m workers.standards --nats-url URL``: run the standards daemon."""

from workers.standards.cli import main

raise SystemExit(main())
