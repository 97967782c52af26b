"""``python -m workers.reviewer --nats-url URL --repo PATH``: run the reviewer daemon."""

from workers.reviewer.cli import main

raise SystemExit(main())
