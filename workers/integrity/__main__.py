"""``python -m workers.integrity --nats-url URL``: run the integrity daemon."""

from workers.integrity.cli import main

raise SystemExit(main())
