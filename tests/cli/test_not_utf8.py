"""A value that is not UTF-8 text is one line naming where it was given, on every command
and every daemon: Python hands such a byte on as a lone surrogate (``'\\udcff'``), which
ended a report or a decision in a ``UnicodeEncodeError`` traceback when the event was
encoded."""

from __future__ import annotations

import pytest

from .conftest import loopbus

NOT_UTF8 = "bad \udcff"
"""What Python makes of the argument bytes ``b'bad \\xff'`` (subprocess gives them back)."""


@pytest.mark.parametrize(
    ("args", "option"),
    [
        pytest.param(
            (
                "report",
                "finding",
                "--new",
                "--producer",
                "reviewer",
                "--target",
                "code:a.py:1-2",
                "--severity",
                "low",
                "--message",
                NOT_UTF8,
            ),
            "--message",
            id="report-finding",
        ),
        pytest.param(
            ("decision", "record", "--question", NOT_UTF8, "--chosen", "x"),
            "--question",
            id="decision-record",
        ),
        pytest.param(
            ("decision", "record", f"--question={NOT_UTF8}", "--chosen", "x"),
            "--question",
            id="option-equals-value",
        ),
        pytest.param(("status", "--project", NOT_UTF8), "--project", id="project"),
    ],
)
def test_an_argument_that_is_not_utf8_is_one_line(
    nats_url: str, project: str, args: tuple[str, ...], option: str
) -> None:
    """Refused before anything is sent, naming the option and the bytes, exit 2."""
    done = loopbus(*args, env={"LOOPBUS_NATS_URL": nats_url, "LOOPBUS_PROJECT": project})
    assert done.code == 2, done.err
    assert done.err.count("\n") == 1 and "Traceback" not in done.err, done.err
    assert f"{option} 'bad \\xff' is not UTF-8 text" in done.err, done.err


def test_a_variable_that_is_not_utf8_is_one_line(nats_url: str, project: str) -> None:
    """A LOOPBUS_ variable read as text (the principal, the server) is refused naming it;
    the server's URL reached the resolver, which failed with a traceback."""
    for name, value in (("LOOPBUS_NATS_URL", "nats://\udcff"), ("LOOPBUS_PRINCIPAL", NOT_UTF8)):
        env = {"LOOPBUS_NATS_URL": nats_url, name: value}
        done = loopbus("status", "--project", project, env=env)
        assert done.code == 2 and done.err.count("\n") == 1, done.err
        assert done.err.startswith(f"loopbus: error: ${name} ") and "UTF-8" in done.err


def test_a_daemon_argument_that_is_not_utf8_is_one_line() -> None:
    """`loopbus worker` hands its words to the daemon, which refuses them the same way."""
    done = loopbus("worker", "gate-runner", "--trunk", NOT_UTF8)
    assert done.code == 2 and done.err.count("\n") == 1, done.err
    assert done.err.startswith("loopbus worker gate-runner: error: --trunk 'bad \\xff' is not")


def test_a_host_name_the_resolver_cannot_encode_is_one_line(project: str) -> None:
    """`nats://a..b:4222`: the resolver's IDNA encoding raised a UnicodeError traceback."""
    done = loopbus("status", "--project", project, "--nats-url", "nats://a..b:4222")
    assert done.code == 1 and done.err.count("\n") == 1, done.err
    assert "cannot reach NATS at nats://a..b:4222 ('a..b' is not a host name)" in done.err
