"""``python -m loopbus.web --nats-url URL [--host H] [--port P]``: serve the operator page."""

from loopbus.web.serve import main

raise SystemExit(main())
