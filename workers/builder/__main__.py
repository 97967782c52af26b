"""``python -m workers.builder --nats-url URL --repo PATH``: run the builder daemon."""

from workers.builder.cli import main

raise SystemExit(main())
