"""An example for every command's ``--help``, shown under ``examples:``.

Kept in one table so a test can walk every subparser and check that each has examples and
that each example parses with the parser it documents (``tests/cli/test_conventions.py``);
a new command without one fails that test.
"""

from __future__ import annotations

import argparse

SHA = "3f786850e387550fdab836ed7e6dc881de23001b"

EXAMPLES: dict[str, list[str]] = {
    "": [
        "loopbus up",
        "loopbus tail --project demo",
        "loopbus completion bash > ~/.local/share/bash-completion/completions/loopbus",
    ],
    "up": [
        "loopbus up --data-dir .loopbus --port 4222",
        "loopbus up --repo ../app --sync always",
        "loopbus up --web-port 8080",
    ],
    "page": [
        "loopbus page --project demo",
        "loopbus page --nats-url nats://127.0.0.1:4222 --host 0.0.0.0 --port 8080",
    ],
    "report": [
        "loopbus report finding --project demo --producer reviewer "
        "--target code:src/app.py:10-14 --severity high --message 'unchecked None'",
        "loopbus report started --project demo --unit U1",
    ],
    "report finding": [
        "loopbus report finding --project demo --producer reviewer "
        "--target code:src/app.py:10-14 --severity high --criterion C1 "
        "--message 'unchecked None'",
        "loopbus report finding --producer operator --target plan:S1 --severity medium "
        "--class misaligned --message 'not what I asked for'",
    ],
    "report started": ["loopbus report started --project demo --unit U1 --wait 5"],
    "report heartbeat": ["loopbus report heartbeat --project demo --unit U1"],
    "report blocked": [
        "loopbus report blocked --project demo --unit U2 --reason awaiting-dependency "
        "--subject U1 --wait 5"
    ],
    "report unblocked": ["loopbus report unblocked --project demo --unit U2"],
    "report commit": [f"loopbus report commit --project demo --unit U1 --sha {SHA}"],
    "report gave-up": [
        "loopbus report gave-up --project demo --unit U1 --why 'the API it needs does not exist'"
    ],
    "report usage": [
        "loopbus report usage --project demo --unit U1 --tokens-in 1200 --tokens-out 300"
    ],
    "report risk": [
        "loopbus report risk S1 --project demo",
        "loopbus report risk S1 --project demo --repo . --json",
    ],
    "approve": [
        "loopbus approve --project demo --unit U1 --why 'reviewed by hand; the suite is green'",
        "loopbus approve --project demo --plan S2 --why 'small units, the right order'",
        "loopbus approve --project demo --skeleton --why 'signatures and pending tests match'",
        "loopbus approve --project demo --charter calc-v1 --why 'scope agreed' --wait",
        "loopbus approve --project demo --config 01J9ZQ4V6X0N8E7K2M3P5R7 --why 'new reviewer'",
    ],
    "charter": ["loopbus charter submit charter.md --project demo"],
    "charter submit": [
        "loopbus charter submit charter.md --project demo",
        "loopbus charter submit charter.toml --project demo --check",
    ],
    "charter show": [
        "loopbus charter show --project demo",
        "loopbus charter show --project demo --json",
    ],
    "run": [
        "loopbus run --project demo",
        "loopbus run --project demo --json",
        "loopbus run --project demo --stop --why 'the objective changed'",
    ],
    "creds": ["loopbus creds add --role agent --principal builder-2"],
    "creds add": [
        "loopbus creds add --role agent --principal builder-2",
        "loopbus creds add --role operator --principal alice --data-dir .loopbus",
    ],
    "init": ["loopbus init calc", "loopbus init ~/projects/shop --project shop-v2"],
    "agent": [
        "loopbus agent claude --role builder",
        "loopbus agent codex --role reviewer -- --model gpt-5-codex",
    ],
    "demo": ["loopbus demo", "loopbus demo --keep --timeout 300"],
    "config": ["loopbus config adopt --project demo --why 'the integration suite gates too'"],
    "config propose": [
        "loopbus config propose --project demo --file new-loopbus.toml --why 'review with claude'",
    ],
    "config adopt": [
        "loopbus config adopt --project demo --why 'reviewed the new checks'",
        "loopbus config adopt --project demo --commit 3bd22e9 --why 'add the lint check'",
    ],
    "trunk": ["loopbus trunk recheck --project demo --why 'pytest installed'"],
    "trunk recheck": [
        "loopbus trunk recheck --project demo --why 'pytest installed in the gate env'"
    ],
    "decide": [
        "loopbus decide --project demo --unit U2 --decision rounding --choose cents",
        "loopbus decide --unit U2 --decision rounding --choose raw --why 'speed first' --wait 10",
        "loopbus decide --unit U3 --decision currency --confirm",
    ],
    "tail": [
        "loopbus tail",
        "loopbus tail --all-projects --kind finding --since 10m",
        "loopbus tail --project demo --no-follow --json",
    ],
    "replay": [
        "loopbus replay --project demo",
        "loopbus replay --project demo --until 2026-11-30T10:00:00Z --state-only",
    ],
    "status": [
        "loopbus status --project demo",
        "loopbus status --project demo --waiting",
        "loopbus status --project demo --unit U1 --json",
    ],
    "worker": ["loopbus worker projector --nats-url nats://127.0.0.1:4222"],
    "health": ["loopbus health projector", "loopbus health projector --json"],
    "provision": [
        "loopbus provision --nats-url nats://nats-1:4222 --replicas 3 --wait 60",
        "loopbus provision --creds-out deploy/secrets",
    ],
    "plan": ["loopbus plan check plan.toml --repo ."],
    "plan check": ["loopbus plan check plan.toml --repo .", "loopbus plan check plan.json --json"],
    "plan submit": [
        "loopbus plan submit plan.toml --project calc",
        "loopbus plan submit plan.toml --project shop --new",
        "loopbus plan submit plan.toml --project demo --wait 60",
        "loopbus plan submit plan.toml --project demo --no-wait",
    ],
    "record": ["loopbus record --project demo", "loopbus record --project demo --slice S1 --json"],
    "gate": [
        "loopbus gate run --check tests",
        "loopbus gate move --gate no-print --move approve --why 'caught a leak' --wait 10",
    ],
    "gate move": [
        "loopbus gate move --gate no-print --move draft --role builder --check no-print "
        "--defect 'secrets printed' --why 'a token leaked through a print'",
        "loopbus gate move --gate no-print --move approve --why 'it would have caught it'",
        "loopbus gate move --project catalogue --scope profile --gate cli --move lower-cadence "
        "--every 20 --role standards --why 'cli broke twice this month'",
    ],
    "gate run": [
        "loopbus gate run",
        "loopbus gate run --repo ../app --commit HEAD~1 --check lint --json",
    ],
    "merge-driver": ["loopbus merge-driver %O %A %B %P %L"],
    "findings": ["loopbus findings export --project demo --format sarif -o findings.sarif"],
    "findings export": [
        "loopbus findings export --project demo --format sarif -o findings.sarif",
        "loopbus findings export --all --for sarif --min-severity medium",
    ],
    "finding": [
        "loopbus finding dismiss --project demo --id 01JD5Q7X3M0000000000000000 "
        "--as false-positive --why 'generated code'"
    ],
    "finding dismiss": [
        "loopbus finding dismiss --project demo --id 01JD5Q7X3M0000000000000000 "
        "--as false-positive --why 'generated code' --wait 10"
    ],
    "finding resolve": [
        "loopbus finding resolve --project demo --id 01JD5Q7X3M0000000000000000 --why 'fixed'"
    ],
    "finding reopen": [
        "loopbus finding reopen --project demo --id 01JD5Q7X3M0000000000000000 --why 'it came back'"
    ],
    "decision": [
        "loopbus decision record --project demo --question 'which queue?' --option nats "
        "--option redis --chosen nats --serves O1 --file bus/ --wait 10",
        "loopbus decision list --project demo",
    ],
    "decision record": [
        "loopbus decision record --project demo --question 'which queue?' --option nats "
        "--option redis --chosen nats --serves O1 --file bus/ --wait 10"
    ],
    "decision supersede": [
        "loopbus decision supersede --project demo --id 01JD5Q7X3M0000000000000000 "
        "--option nats --option redis --chosen redis --serves O1 --file bus/ --wait 10"
    ],
    "decision objective": [
        "loopbus decision objective --project demo --id O1 --text 'one log for everything'"
    ],
    "decision show": ["loopbus decision show --project demo --id 01JD5Q7X3M0000000000000000"],
    "decision list": ["loopbus decision list --project demo --all"],
    "completion": [
        "loopbus completion bash > ~/.local/share/bash-completion/completions/loopbus",
        "loopbus completion fish > ~/.config/fish/completions/loopbus.fish",
    ],
}
"""subcommand path (``""`` for ``loopbus`` itself) -> example command lines."""


def subparsers(
    parser: argparse.ArgumentParser, path: str = ""
) -> list[tuple[str, argparse.ArgumentParser]]:
    """(path, parser) for ``parser`` and every subparser below it, depth first."""
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += subparsers(sub, f"{path} {name}".strip())
    return found


HEADING = "examples:\n"


class ExampleFormatter(argparse.HelpFormatter):
    """argparse's formatter, except that the examples are kept as written (one a line)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith(HEADING):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def attach(parser: argparse.ArgumentParser) -> None:
    """Put each command's examples under its ``--help``."""
    for path, sub in subparsers(parser):
        lines = EXAMPLES.get(path)
        if lines:
            sub.epilog = HEADING + "\n".join(f"  $ {line}" for line in lines)
            sub.formatter_class = ExampleFormatter
