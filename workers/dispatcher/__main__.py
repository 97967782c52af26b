"""``python -m workers.dispatcher --nats-url URL [--repo PATH] [--capacity N]``."""

from workers.dispatcher.cli import main

raise SystemExit(main())
