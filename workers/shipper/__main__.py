"""``python -m loopbus.workers.shipper``: run the shipper daemon."""

from loopbus.workers.shipper.cli import main

raise SystemExit(main())
