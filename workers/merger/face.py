"""The merger's public face: what the front (the CLI, the page) may use of it.

``loopbus up`` adopts trunk's configuration before any daemon starts (with the merger's
own rule, so a restarted merger finds it adopted); ``loopbus repo check`` reads the
``[merge]`` table as the merger will.
"""

from workers.merger.adoption import adopt_on_first_start, adopted_on_log, operator
from workers.merger.config import parse_merge_config

__all__ = ["adopt_on_first_start", "adopted_on_log", "operator", "parse_merge_config"]
