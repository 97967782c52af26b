"""``python -m loopbus.workers.verifier --nats-url URL --repo PATH``: run the verifier."""

from loopbus.workers.verifier.cli import main

raise SystemExit(main())
