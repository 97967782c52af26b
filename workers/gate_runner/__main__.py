"""``python -m workers.gate_runner --repo PATH --nats-url URL``: run the gate runner."""

from workers.gate_runner.cli import main

raise SystemExit(main())
