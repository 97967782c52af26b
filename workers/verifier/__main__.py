"""``python -m workers.verifier --nats-url URL --repo PATH``: run the verifier."""

from workers.verifier.cli import main

raise SystemExit(main())
