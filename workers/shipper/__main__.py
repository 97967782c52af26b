"""``python -m workers.shipper``: run the shipper daemon."""

from workers.shipper.cli import main

raise SystemExit(main())
