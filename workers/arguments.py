"""argparse as every loopbus command line uses it, the CLI's and each daemon's: a mistake
is one line naming it and where to look, and a value that is not UTF-8 text is refused by
the option it was given to.

It lives in ``workers/`` because a daemon may not import the front (``loopbus/``) while the
front may use the shared libraries of ``workers/``; it imports argparse alone, so parsing
``loopbus --help`` stays as cheap as before.

Why refuse non-UTF-8 values at the door: Python hands a command-line byte that is not
UTF-8 (``$'\\xff'``) to the program as a lone surrogate (``'\\udcff'``, PEP 383), which
cannot be encoded back to UTF-8; an event carrying it failed deep in the publish path
with a ``UnicodeEncodeError`` traceback. A file path is exempt (``type=Path``): its bytes
go back to the operating system unchanged, where they name the file they named (as do
those of an option marked with :func:`file_names`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NoReturn

WORKER_PROG_ENV = "LOOPBUS_WORKER_PROG"
"""How ``loopbus worker NAME`` tells the daemon it starts what the user typed, so that its
usage errors and ``--help`` name ``loopbus worker NAME`` rather than ``python -m ...``."""


_FILE_NAMES = "_loopbus_file_names"


def file_names(action: argparse.Action) -> argparse.Action:
    """Mark ``action`` as taking file names as the operating system gives them (bytes that
    need not be UTF-8), for an option that cannot be ``type=Path``: git hands the merge
    driver a repository's path, whatever its encoding."""
    setattr(action, _FILE_NAMES, True)
    return action


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line naming the problem and where to look."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        # A subcommand's words (PARSER) and words handed on (REMAINDER) are checked by the
        # parser that reads them, which knows the option each one belongs to.
        passed_on = action.nargs in (argparse.PARSER, argparse.REMAINDER)
        # --repo is a path or a URL on every command and daemon, often typed str; `up`
        # hands its own to each daemon, so a folder named in other bytes must pass.
        names_files = (
            action.type is Path
            or getattr(action, _FILE_NAMES, False)
            or "--repo" in action.option_strings
        )
        if not passed_on and not names_files and not is_text(arg_string):
            self.error(not_text(option_name(action), arg_string, action.default is arg_string))
        return super()._get_value(action, arg_string)


def is_text(value: str) -> bool:
    """``value`` encodes as UTF-8: it holds no lone surrogate (a byte that was not UTF-8)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_bytes(value: str) -> str:
    """``value`` quoted as the bytes it came from: ``'bad \\xff'`` for ``'bad \\udcff'``."""
    try:
        raw = value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that was never a byte: show it as Python does
        return ascii(value)
    return "'" + raw.decode("utf-8", "backslashreplace") + "'"


def not_text(name: str, value: str, from_default: bool = False) -> str:
    """The one line refusing ``value`` given to option ``name``."""
    where = f"{name}'s default (from the environment)" if from_default else name
    return (
        f"{where} {shown_bytes(value)} is not UTF-8 text: loopbus keeps text as UTF-8; "
        "give the value in UTF-8 (a UTF-8 terminal or locale, or convert it with iconv -t UTF-8)"
    )


def option_name(action: argparse.Action) -> str:
    """How the user wrote the option: its long name, else its metavar or destination."""
    if action.option_strings:
        return max(action.option_strings, key=len)
    metavar = action.metavar if isinstance(action.metavar, str) else None
    return metavar or action.dest
