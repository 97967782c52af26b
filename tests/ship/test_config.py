"""``[ship]`` in loopbus.toml: the command, its timeout, the variables it may see."""

from __future__ import annotations

import pytest

from workers.errors import ConfigError
from workers.shipper.config import parse


def test_ship_config_names_the_bad_field() -> None:
    """A wrong [ship] table is one line naming the field and the fix."""
    assert parse('[ship]\ncommand = "x"\nenv = ["GH_TOKEN"]\n').env == ("GH_TOKEN",)
    assert parse(None).command is None
    with pytest.raises(ConfigError, match=r"ship\.env .* a list of variable names"):
        parse('[ship]\ncommand = "x"\nenv = ["not a name"]\n')
    with pytest.raises(ConfigError, match=r"ship\.colour .* known keys"):
        parse('[ship]\ncolour = "red"\n')
