"""Command line of the verifier daemon: ``python -m workers.verifier``."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from workers.agents import config as agent_config
from workers.agents.cli import TRUNK_ENV, add_repo, load_configs, serving_body
from workers.cli import Body, daemon_parser, main_for
from workers.errors import ConfigError
from workers.verifier.daemon import Verifier


def main(argv: Sequence[str] | None = None) -> int:
    parser = daemon_parser("verifier", "Verify each merged wave code-cold.")
    add_repo(parser)

    def make_body(args: argparse.Namespace) -> Body:
        from workers.agents.verify_config import parse_verify_text

        configs = load_configs(parser, args.repo)
        trunk = os.environ.get(TRUNK_ENV) or None
        verify = {}
        for project, config in configs.items():
            try:
                text = agent_config.config_text(Path(config.repo), trunk) or ""
                verify[project] = parse_verify_text(text)
            except ConfigError as exc:
                parser.error(f"--repo {config.repo}: {exc}")
        return serving_body(
            Verifier(configs, verify), "no project configures [verify] command or [review] wave"
        )

    return main_for(Verifier.name, parser, make_body, argv)
