"""The argparse type of every option that takes seconds (``--wait``, ``--timeout``).

``float()`` accepts ``nan``, ``inf`` and negative numbers, and each command compared the value
its own way: ``nan`` passed every ``<= 0`` check, ``inf`` waited forever, and ``--wait 0`` was
refused by one command and taken as "do not wait" by the next. Every such option now parses
through :func:`seconds`: a finite number, more than 0 unless the option says 0 means
something. A bad value is a usage error argparse prints as one line naming the option
(``argument --wait: …``), exit 2.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def seconds(*, zero: str | None = None, hint: str = "") -> Callable[[str], float]:
    """An argparse ``type`` for a number of seconds: finite and positive; with ``zero`` (what
    0 means, e.g. "0 does not retry"), 0 is allowed too. ``hint`` is added to the refusal (how
    to get what a bad value might have meant, e.g. "--no-wait does not wait")."""
    wanted = "a number of seconds, 0 or more" if zero else "a positive number of seconds"
    extra = f" ({zero})" if zero else ""
    extra += f"; {hint}" if hint else ""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and (value > 0 or (zero and value == 0)):
            return value
        raise argparse.ArgumentTypeError(f"{text!r} is not {wanted}: give one such as 30{extra}")

    parse.__name__ = "seconds"
    return parse
