"""``[plan]`` and ``[recon]`` in loopbus.toml: defaults, values, and one line per mistake."""

from __future__ import annotations

import pytest

from workers.agents.config import parse
from workers.errors import ConfigError
from workers.gates.config import parse_config

BASE = '[project]\nid = "shop"\n\n[[check]]\nid = "tests"\ncommand = "pytest"\nparser = "pytest"\n'


def test_defaults_and_values() -> None:
    assert parse(BASE).plan.command is None and parse(BASE).recon.command is None
    config = parse(
        BASE + '\n[plan]\ncommand = "python plan.py"\ntimeout = "5m"\nmax_tries = 2\n'
        '\n[recon]\ncommand = "python recon.py"\n'
    )
    assert (config.plan.command, config.plan.timeout_s, config.plan.max_tries) == (
        "python plan.py",
        300.0,
        2,
    )
    assert (config.recon.command, config.recon.timeout_s) == ("python recon.py", 600.0)
    assert parse(BASE + '\n[plan]\ncommand = "p"\n').plan.max_tries == 3
    capped = parse(BASE + "\n[plan]\nmax_run_tries = 7\n[recon]\nmax_runs = 2\n")
    assert (capped.plan.max_run_tries, capped.recon.max_runs) == (7, 2)
    # The gate configuration lets both tables through (the agent configuration reads them).
    parse_config(BASE + '\n[plan]\ncommand = "p"\n[recon]\ncommand = "r"\n', source="t")


@pytest.mark.parametrize(
    ("table", "field"),
    [
        ('[plan]\nmax_tries = 0\ncommand = "p"\n', "plan.max_tries"),
        ("[plan]\nmax_tries = true\n", "plan.max_tries"),
        ('[plan]\ncommand = ""\n', "plan.command"),
        ("[plan]\ntimeout = -1\n", "plan.timeout"),
        ('[plan]\nroster = ["a"]\n', "plan.roster"),
        ('[recon]\ncommand = "unclosed \'quote"\n', "recon.command"),
        ('[recon]\ntimeout = "soon"\n', "recon.timeout"),
        ('[plan]\nmax_run_tries = 0\ncommand = "p"\n', "plan.max_run_tries"),
        ('[plan]\nmax_run_tries = "many"\n', "plan.max_run_tries"),
        ("[recon]\nmax_runs = false\n", "recon.max_runs"),
    ],
)
def test_each_mistake_is_one_line_naming_the_field(table: str, field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(BASE + "\n" + table)
    text = str(caught.value)
    assert field in text and "\n" not in text.strip()
