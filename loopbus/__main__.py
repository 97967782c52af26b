"""``python -m loopbus``: the same entry point as the ``loopbus`` script (``python -X
importtime -m loopbus --version`` shows what a command imports)."""

from loopbus.cli import main

raise SystemExit(main())
