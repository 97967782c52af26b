"""``python -m workers.investigator --nats-url URL --repo PATH``: run the investigator."""

from workers.investigator.cli import main

raise SystemExit(main())
