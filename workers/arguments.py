"""argparse as every loopbus command line uses it, the CLI's and each daemon's: a mistake
is one line naming it and where to look.

It lives in ``workers/`` because a daemon may not import the front (``loopbus/``) while the
front may use the shared libraries of ``workers/``; it imports argparse alone, so parsing
``loopbus --help`` stays as cheap as before.
"""

from __future__ import annotations

import argparse
from typing import NoReturn

WORKER_PROG_ENV = "LOOPBUS_WORKER_PROG"
"""How ``loopbus worker NAME`` tells the daemon it starts what the user typed, so that its
usage errors and ``--help`` name ``loopbus worker NAME`` rather than ``python -m ...``."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line naming the problem and where to look."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")
