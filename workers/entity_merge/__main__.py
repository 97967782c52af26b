"""``python -m workers.entity_merge BASE OURS THEIRS PATH`` — the git driver."""

import sys

from .driver import run_git_driver

raise SystemExit(run_git_driver(sys.argv[1:]))
