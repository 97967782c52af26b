"""``python -m workers.merger.entity_merge BASE OURS THEIRS PATH``: the git driver
under its old name (now :mod:`workers.entity_merge`)."""

import sys

from workers.entity_merge.driver import run_git_driver

raise SystemExit(run_git_driver(sys.argv[1:]))
