"""``python -m workers.gate_runner --repo PATH --nats-url URL``: run the gate-runner daemon."""

from workers.gate_runner.daemon import main

raise SystemExit(main())
