"""Each shipped capability profile brings checks that pass on a sound project and go red on
a project that lacks what the capability promises (real runs of the profile's probes)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from gate_repos import GitRepo
from gatekit import run_commit

from workers.gates.runner import GateRunner

CLI_GOOD = (
    "import argparse\n\n\ndef main():\n"
    "    parser = argparse.ArgumentParser(prog='demo')\n"
    "    parser.add_argument('--name', default='world')\n"
    "    args = parser.parse_args()\n    print('hello', args.name)\n    return 0\n"
)
CLI_BAD = "def main():\n    return 0\n"  # prints nothing, accepts anything
PYPROJECT = (
    '[project]\nname = "demo"\nversion = "0.1"\ndependencies = [{deps}]\n\n'
    '[project.scripts]\ndemo = "demo.cli:main"\n'
)

SERVER = """\
import http.server
import os


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        known = {KNOWN}
        body = {BODY}
        self.send_response(200 if (known is None or self.path in known) else 404)
        self.send_header("Content-Type", {CTYPE})
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
"""


def server(known: str, body: str, ctype: str) -> str:
    return SERVER.replace("{KNOWN}", known).replace("{BODY}", body).replace("{CTYPE}", ctype)


HTML = "b'<html><head><title>demo</title></head><body>hi</body></html>'"
PIPE_GOOD = (
    "import os, pathlib\n"
    "out = pathlib.Path(os.environ['OUTPUT_DIR'])\n"
    "(out / 'totals.csv').write_text('a,3\\n')\n"
)
PIPE_BAD = (
    "import os, pathlib, time\n"
    "out = pathlib.Path(os.environ['OUTPUT_DIR'])\n"
    "(out / 'totals.csv').write_text(str(time.time_ns()))\n"
)

CASES = [
    pytest.param(
        "cli",
        "",
        {
            "pyproject.toml": PYPROJECT.format(deps=""),
            "demo/__init__.py": "",
            "demo/cli.py": CLI_GOOD,
        },
        {
            "pyproject.toml": PYPROJECT.format(deps=""),
            "demo/__init__.py": "",
            "demo/cli.py": CLI_BAD,
        },
        {"cli-help", "cli-usage-error"},
        id="cli",
    ),
    pytest.param(
        "library",
        "",
        {"pyproject.toml": PYPROJECT.format(deps='"msgspec>=0.18"'), "demo/__init__.py": "X = 1\n"},
        {
            "pyproject.toml": PYPROJECT.format(deps='"msgspec"'),
            "demo/__init__.py": "import not_installed_anywhere\n",
        },
        {"lib-imports", "lib-lint", "deps-bounded"},
        id="library",
    ),
    pytest.param(
        "service:http",
        '[capability."service:http"]\ncommand = "python app.py"\nhealth = "/health"\n',
        {"app.py": server("{'/health'}", "b'ok'", "'text/plain'")},
        {"app.py": server("None", "b'ok'", "'text/plain'")},
        {"http-boot"},
        id="service-http",
    ),
    pytest.param(
        "ui:web",
        '[capability."ui:web"]\ncommand = "python app.py"\nbudget_kb = "1"\n',
        {"app.py": server("{'/'}", HTML, "'text/html'"), "static/app.js": "x=1\n"},
        {"app.py": server("{'/'}", "b'{}'", "'application/json'"), "static/app.js": "x" * 2048},
        {"web-page-renders", "web-bundle-budget"},
        id="ui-web",
    ),
    pytest.param(
        "data-pipeline",
        '[capability.data-pipeline]\ncommand = "python pipe.py"\n',
        {"pipe.py": PIPE_GOOD},
        {"pipe.py": PIPE_BAD},
        {"pipeline-deterministic"},
        id="data-pipeline",
    ),
]


@pytest.mark.parametrize(("capability", "params", "good", "bad", "red"), CASES)
async def test_profile_checks_pass_on_sound_projects_and_fail_on_unsound_ones(
    git: Callable[[str], GitRepo],
    make_runner: Callable[..., GateRunner],
    project: str,
    capability: str,
    params: str,
    good: dict[str, str],
    bad: dict[str, str],
    red: set[str],
) -> None:
    """Declaring a capability brings its profile's checks; they measure the project."""
    toml = f'[project]\nid = "{project}"\ncapabilities = ["{capability}"]\n{params}'
    repo = git("repo")
    runner = make_runner(repo)
    sound = await run_commit(runner, repo.commit({"loopbus.toml": toml, **good}))
    assert sound.outcome == "pass", [
        (c.check, [f.message for f in c.findings]) for c in sound.checks
    ]
    unsound = await run_commit(runner, repo.commit({"loopbus.toml": toml, **bad}))
    failed = {c.check for c in unsound.checks if c.outcome == "fail"}
    assert failed == red, [(c.check, c.outcome, c.result.error) for c in unsound.checks]
    assert all(c.outcome != "error" for c in unsound.checks)
