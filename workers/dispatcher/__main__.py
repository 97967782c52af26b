"""``python -m loopbus.workers.dispatcher --nats-url URL [--repo PATH] [--capacity N]``."""

from loopbus.workers.dispatcher.cli import main

raise SystemExit(main())
