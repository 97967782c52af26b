"""The halt guards: secrets in a diff, edits to frozen artifacts, security findings."""

from __future__ import annotations

import pytest

from workers.reviewer.diff import parse_unified_diff
from workers.reviewer.guards import (
    config_edit_problem,
    find_frozen_edits,
    find_secrets,
    is_security_finding,
)


def added(path: str, *lines: str) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -1,1 +1,{len(lines) + 1} @@\n keep\n{body}"
    )


@pytest.mark.parametrize(
    ("line", "pattern"),
    [
        pytest.param("-----BEGIN RSA PRIVATE KEY-----", "private-key", id="rsa-key"),
        pytest.param("-----BEGIN OPENSSH PRIVATE KEY-----", "private-key", id="openssh-key"),
        pytest.param("-----BEGIN PRIVATE KEY-----", "private-key", id="pkcs8-key"),
        pytest.param('key = "AKIAIOSFODNN7EXAMPLE"', "aws-access-key-id", id="aws-key-id"),
        pytest.param(
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws-secret-access-key",
            id="aws-secret",
        ),
        pytest.param("token: ghp_" + "a1B2" * 9, "github-token", id="github"),
        pytest.param("SLACK=xoxb-123456789012-abcdefghij", "slack-token", id="slack"),
        pytest.param("glpat-abcdefghij0123456789", "gitlab-token", id="gitlab"),
    ],
)
def test_secret_in_an_added_line_is_found(line: str, pattern: str) -> None:
    """Each high-signal credential format is caught where it was added."""
    (found,) = find_secrets(parse_unified_diff(added("cfg.py", "ok = 1", line)))
    assert (found.kind, found.path, found.line, found.detail) == ("secret", "cfg.py", 3, pattern)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param('password = os.environ["PASSWORD"]', id="env-lookup"),
        pytest.param("AKIA_PREFIX = 'AKIA'", id="prefix-only"),
        pytest.param("# rotate the private key yearly", id="prose"),
    ],
)
def test_ordinary_lines_are_not_secrets(line: str) -> None:
    """Low-signal text (an env lookup, a prefix, prose) is not flagged."""
    assert find_secrets(parse_unified_diff(added("cfg.py", line))) == []


def test_a_removed_secret_is_not_a_secret_added() -> None:
    """Deleting a leaked key is the fix, not the offence."""
    text = (
        "diff --git a/k.pem b/k.pem\n--- a/k.pem\n+++ b/k.pem\n@@ -1,2 +1,1 @@\n"
        "------BEGIN RSA PRIVATE KEY-----\n keep\n"
    )
    assert find_secrets(parse_unified_diff(text)) == []


CONFIG = b"""[project]
id = "demo"

[[check]]
id = "tests"
command = "python -m pytest -q"
pending = ["tests/test_c.py::test_a", "tests/test_c.py::test_b"]
"""


@pytest.mark.parametrize(
    ("after", "own", "allowed"),
    [
        pytest.param(
            CONFIG.replace(b'"tests/test_c.py::test_a", ', b""),
            ["tests/test_c.py::test_a"],
            True,
            id="clears-own-marker",
        ),
        pytest.param(
            CONFIG.replace(b', "tests/test_c.py::test_b"', b""),
            ["tests/test_c.py::test_a"],
            False,
            id="clears-another-units-marker",
        ),
        pytest.param(
            CONFIG.replace(b"pytest -q", b"pytest -q -k 'not slow'"),
            ["tests/test_c.py::test_a"],
            False,
            id="changes-a-command",
        ),
        pytest.param(
            CONFIG.replace(b'"tests/test_c.py::test_b"]', b'"tests/test_c.py::test_b", "x::y"]'),
            [],
            False,
            id="adds-a-marker",
        ),
        pytest.param(b"[project\n", [], False, id="breaks-the-file"),
    ],
)
def test_loopbus_toml_may_only_lose_the_units_own_pending_markers(
    after: bytes, own: list[str], allowed: bool
) -> None:
    """Clearing its own markers is the contract; any other edit to the config is frozen."""
    assert (config_edit_problem(CONFIG, after, own) is None) is allowed


def test_frozen_paths_criteria_tests_and_globs() -> None:
    """A criteria test file, a listed glob and a bad config edit are each a violation."""
    text = (
        added("tests/test_c.py", "def test_a(): assert True")
        + added("docs/acceptance.md", "loosened")
        + added("src/app.py", "fine")
        + added("loopbus.toml", "[extra]")
    )
    found = find_frozen_edits(
        parse_unified_diff(text),
        all_criteria=["tests/test_c.py::test_a", "tests/test_c.py::test_b"],
        own_criteria=["tests/test_c.py::test_a"],
        frozen_globs=["docs/*.md"],
        config_before=CONFIG,
        config_after=CONFIG + b"\n[extra]\n",
    )
    assert sorted(v.path for v in found) == [
        "docs/acceptance.md",
        "loopbus.toml",
        "tests/test_c.py",
    ]


@pytest.mark.parametrize(
    ("severity", "criterion", "cls", "halts"),
    [
        pytest.param("high", "security", "defect", True, id="high-security"),
        pytest.param("critical", "SECURITY:injection", "defect", True, id="critical-named"),
        pytest.param("medium", "security", "defect", False, id="medium-security"),
        pytest.param("critical", "correctness", "defect", False, id="critical-other"),
    ],
)
def test_security_findings_that_halt(severity: str, criterion: str, cls: str, halts: bool) -> None:
    """Only high or critical findings whose criterion or class names security halt."""
    assert is_security_finding(severity, criterion, cls) is halts
