"""``python -m workers.charter --nats-url URL``."""

from workers.charter.cli import main

raise SystemExit(main())
