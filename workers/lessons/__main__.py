"""``python -m workers.lessons --nats-url URL``: run the lessons daemon."""

from workers.lessons.cli import main

raise SystemExit(main())
