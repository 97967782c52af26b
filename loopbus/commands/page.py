"""``loopbus page``: serve the operator page against a running bus.

``loopbus up`` already serves it (``--web-port``); this is for a bus started elsewhere (the
compose cluster, or ``LOOPBUS_NATS_URL``).
"""

from __future__ import annotations

import argparse

from loopbus.web import serve


def run(args: argparse.Namespace) -> int:
    return serve.run(args)
