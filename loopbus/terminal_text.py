"""A string from the log made safe to print as one line of a terminal.

Agents write much of what loopbus shows (a finding's message, a decision's question, a
path, a reason). A terminal obeys control characters in that text: ESC starts a sequence
that can recolour, move the cursor, erase what loopbus printed or retitle the window; a
newline or carriage return breaks one-line-per-entry layouts or overwrites a line; a bidi
override makes a line read as something it does not say. So every human-readable line
that holds log text goes through :func:`one_line` (or is printed with :func:`say`), and
the rule is one rule everywhere:

* a line break or tab (``\\n \\r \\t \\v \\f``, U+2028, U+2029) becomes one space;
* every other C0 control (ESC among them), DEL, a C1 control (U+0080-U+009F) and a bidi
  control (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) is shown as its escape,
  ``\\x1b``, ``\\x7f``, ``\\x9b``, ``\\u202e``: visible, and inert.

What is stored is untouched: ``--json`` output escapes these itself.
"""

from __future__ import annotations

import re
import sys
from typing import TextIO

_BREAKS = "\t\n\v\f\r\u2028\u2029"
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[{_BREAKS}]|[\x00-\x1f\x7f-\x9f{_BIDI}]")


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    if char in _BREAKS:
        return " "
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def one_line(text: object) -> str:
    """``text`` with every control and bidi character made visible (see the module)."""
    return _UNSAFE.sub(_shown, str(text))


def say(line: object = "", file: TextIO | None = None) -> None:
    """``print`` for a human-readable line that may hold log text."""
    print(one_line(line), file=file if file is not None else sys.stdout)


def count(number: int, one: str, many: str | None = None) -> str:
    """``number`` with its noun agreeing: ``1 wave``, ``3 waves``, ``1 criterion`` (``many``
    for a plural that is not ``one`` + s)."""
    return f"{number} {one if number == 1 else many or one + 's'}"
