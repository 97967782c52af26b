"""``python -m loopbus.workers.lessons --nats-url URL``: run the lessons daemon."""

from loopbus.workers.lessons.cli import main

raise SystemExit(main())
