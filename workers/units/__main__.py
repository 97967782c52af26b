"""``python -m workers.units --nats-url URL``: run the units daemon."""

from workers.units.cli import main

raise SystemExit(main())
