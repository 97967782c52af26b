"""loopbus.toml parsing and validation; capability profiles and the add-only rule."""

from __future__ import annotations

import pytest

from workers.errors import ConfigError, WeakensProfile
from workers.gates.config import parse_config
from workers.gates.profiles import (
    DEFAULT_DISMISSED_ACROSS,
    DEFAULT_REVIEW_EVERY,
    load_profiles,
    parse_profile,
)

ISSUE_EXAMPLE = """
[project]
id = "demo"
capabilities = ["cli"]

[[check]]
id = "tests"
command = "python -m pytest -q"
parser = "pytest"
timeout = 300
pending = ["tests/test_criteria.py::test_total_is_sum"]

[[check]]
id = "lint"
command = "ruff check --output-format json ."
parser = "ruff"
"""


def test_issue_example_parses_with_profile_checks_first() -> None:
    """The documented shape works: the cli profile's checks come first, then the project's."""
    config = parse_config(ISSUE_EXAMPLE)
    assert config.project == "demo"
    assert [c.id for c in config.checks] == ["cli-help", "cli-usage-error", "tests", "lint"]
    tests = config.check("tests")
    assert tests.pending == ("tests/test_criteria.py::test_total_is_sum",)
    assert tests.timeout_s == 300.0
    assert config.check("lint").timeout_s == 600.0
    assert config.check("cli-help").origin == "profile:cli@1"
    assert tests.origin == "project"


def _check(**fields: object) -> str:
    lines = ["[project]", 'id = "demo"', "", "[[check]]"]
    base: dict[str, object] = {"id": '"t"', "command": '"true"'}
    base.update(fields)
    for key, value in base.items():
        if value is None:
            continue
        lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "field", "needle"),
    [
        pytest.param('[project]\nid = "a.b"\n', "project.id", "no dots", id="project-id-dots"),
        pytest.param("[[check]]\nid='x'\ncommand='y'\n", "project", "[project]", id="no-project"),
        pytest.param(_check(parser='"pytst"'), "check[0].parser", "pytest, ruff", id="parser"),
        pytest.param(_check(timeout="-5"), "check[0].timeout", "greater than zero", id="timeout"),
        pytest.param(_check(timeout='"soon"'), "check[0].timeout", "duration", id="timeout-text"),
        pytest.param(_check(command='""'), "check[0].command", "command to run", id="command"),
        pytest.param(_check(command='"a \'b"'), "check[0].command", "split", id="quote"),
        pytest.param(_check(colour='"red"'), "check[0].colour", "unknown key", id="unknown-key"),
        pytest.param(
            _check(pending='["tests/test_x.py::t"]'),
            "check[0].pending",
            "pytest",
            id="pending-parser",
        ),
        pytest.param(
            _check(parser='"pytest"', pending='["tests/test_x.py"]'),
            "check[0].pending",
            "PATH::TEST",
            id="pending-file",
        ),
        pytest.param(
            _check(env='{ LOOPBUS_X = "1" }'), "check[0].env.LOOPBUS_X", "runner", id="env"
        ),
        pytest.param(
            _check(env='{ LD_PRELOAD = "./x.so" }'),
            "check[0].env.LD_PRELOAD",
            "load code",
            id="env-loader",
        ),
        pytest.param(_check(reads='["../x"]'), "check[0].reads", "relative", id="reads"),
        pytest.param(
            '[project]\nid = "d"\ncapabilities = ["gui"]\n',
            "project.capabilities",
            "cli",
            id="unknown-capability",
        ),
        pytest.param('[project]\nid = "d"\n', "check", "at least one", id="no-checks"),
        pytest.param("[project\n", "file", "TOML", id="not-toml"),
        pytest.param(
            '[project]\nid = "d"\ncapabilities = ["service:http"]\n',
            'capability."service:http".command',
            "$PORT",
            id="missing-param",
        ),
    ],
)
def test_invalid_config_is_one_line_naming_field_value_and_fix(
    text: str, field: str, needle: str
) -> None:
    """Every mistake is a single line that names the field and says what to do."""
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("loopbus.toml: ")
    assert info.value.field == field
    assert needle in message


def test_duplicate_check_ids_are_refused() -> None:
    """Two project checks may not share an id."""
    text = _check() + '\n[[check]]\nid = "t"\ncommand = "false"\n'
    with pytest.raises(ConfigError, match=r"check\[1\]\.id = 't'.*unique"):
        parse_config(text)


@pytest.mark.parametrize(
    ("capability", "check_id"),
    [
        pytest.param("cli", "cli-help", id="cli"),
        pytest.param("library", "lib-lint", id="library"),
        pytest.param("service:http", "http-boot", id="service-http"),
    ],
)
def test_project_check_replacing_a_profile_check_is_rejected_naming_it(
    capability: str, check_id: str
) -> None:
    """A project may add checks to a profile but never replace (or relax) one of its checks."""
    params = {
        "cli": "",
        "library": "",
        "service:http": f'[capability."{capability}"]\ncommand = "python -m app"\n',
    }[capability]
    text = (
        f'[project]\nid = "d"\ncapabilities = ["{capability}"]\n{params}\n'
        f'[[check]]\nid = "{check_id}"\ncommand = "true"\nparser = "exit-code"\ntimeout = 1\n'
    )
    with pytest.raises(WeakensProfile) as info:
        parse_config(text)
    assert info.value.profile == capability and info.value.check == check_id
    assert f"profile check {capability}/{check_id}" in str(info.value)


def test_adding_checks_next_to_a_profile_is_allowed() -> None:
    """A new id alongside the profile's checks is an addition, and it is accepted."""
    text = ISSUE_EXAMPLE + '\n[[check]]\nid = "types"\ncommand = "mypy ."\n'
    assert parse_config(text).check("types").parser == "exit-code"


def test_capability_params_are_bound_into_profile_commands() -> None:
    """A profile's {param} placeholders take the project's values (or the profile default)."""
    text = (
        '[project]\nid = "d"\ncapabilities = ["service:http"]\n'
        '[capability."service:http"]\ncommand = "python -m app.serve"\n'
    )
    boot = parse_config(text).check("http-boot")
    assert boot.argv()[-3:] == ["python", "-m", "app.serve"]
    assert "--path /" in boot.command


def test_unknown_capability_param_is_refused() -> None:
    """A param the profile does not declare is a mistake, named with the ones it has."""
    text = '[project]\nid = "d"\ncapabilities = ["cli"]\n[capability.cli]\ncmd = "x"\n'
    with pytest.raises(ConfigError, match=r"capability\.\"cli\"\.cmd.*its params: command"):
        parse_config(text)


def test_config_sha_tracks_every_input_and_the_salt() -> None:
    """The digest changes with the command, timeout, pending list, env, image and salt."""
    base = parse_config(_check(parser='"pytest"')).check("t")
    variants = [
        parse_config(_check(parser='"pytest"', command='"false"')).check("t"),
        parse_config(_check(parser='"pytest"', timeout="5")).check("t"),
        parse_config(_check(parser='"pytest"', pending='["a.py::t"]')).check("t"),
        parse_config(_check(parser='"pytest"', env='{ A = "1" }')).check("t"),
        parse_config(_check(parser='"pytest"', image='"python:3.12"')).check("t"),
    ]
    digests = {base.config_sha()} | {v.config_sha() for v in variants}
    assert len(digests) == 6
    assert base.config_sha("s1") != base.config_sha() != base.config_sha("s2")
    assert base.config_sha() == parse_config(_check(parser='"pytest"')).check("t").config_sha()


def test_every_shipped_profile_loads_with_a_review_cadence() -> None:
    """cli, service:http, ui:web, data-pipeline and library ship, each with checks and N."""
    profiles = load_profiles()
    assert {"cli", "service:http", "ui:web", "data-pipeline", "library"} <= set(profiles)
    for profile in profiles.values():
        assert profile.checks and profile.version >= 1 and profile.review_every >= 1


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param("", DEFAULT_REVIEW_EVERY, id="absent-is-50"),
        pytest.param("review_every = 7", 7, id="stated"),
        pytest.param("review_every = 0", None, id="zero"),
        pytest.param("review_every = -3", None, id="negative"),
        pytest.param("review_every = 2.5", None, id="non-integer"),
        pytest.param("review_every = true", None, id="boolean"),
    ],
)
def test_profile_review_cadence_defaults_then_validates(line: str, expected: int | None) -> None:
    """No N means 50; a stated N must be a positive integer, anything else is refused."""
    text = f'[profile]\nname = "x"\nversion = 1\n{line}\n[[check]]\nid = "x-ok"\ncommand = "true"\n'
    if expected is None:
        with pytest.raises(ConfigError, match=r"profile\.review_every"):
            parse_profile(text, "profiles/x.toml")
    else:
        assert parse_profile(text, "profiles/x.toml").review_every == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param("", DEFAULT_DISMISSED_ACROSS, id="absent-is-3"),
        pytest.param("dismissed_across = 2", 2, id="stated"),
        pytest.param("dismissed_across = 0", None, id="zero"),
        pytest.param("dismissed_across = -1", None, id="negative"),
        pytest.param("dismissed_across = 1.5", None, id="non-integer"),
        pytest.param('dismissed_across = "2"', None, id="string"),
        pytest.param("dismissed_across = false", None, id="boolean"),
    ],
)
def test_profile_dismissal_threshold_defaults_then_validates(
    line: str, expected: int | None
) -> None:
    """No threshold means 3 projects; a stated one must be a positive integer, anything
    else is refused with one line naming the field."""
    text = f'[profile]\nname = "x"\nversion = 1\n{line}\n[[check]]\nid = "x-ok"\ncommand = "true"\n'
    if expected is None:
        with pytest.raises(ConfigError, match=r"profile\.dismissed_across .*positive whole"):
            parse_profile(text, "profiles/x.toml")
    else:
        assert parse_profile(text, "profiles/x.toml").dismissed_across == expected


def test_profile_command_may_only_use_declared_params() -> None:
    """A profile check using an undeclared {param} is refused when the profile loads."""
    text = '[profile]\nname = "x"\nversion = 1\n[[check]]\nid = "x-a"\ncommand = "run {what}"\n'
    with pytest.raises(ConfigError, match=r"\{what\}"):
        parse_profile(text, "profiles/x.toml")
