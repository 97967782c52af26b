"""A stand-in verify command and a repository configured for it.

The stand-in logs the brief it read, runs its own acceptance check (a command from its
data file) in its working directory — trunk's checkout — and prints an envelope: a
finding when the check fails, the scores from its data file, and the check it ran.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from slice_helpers import make_repo

VERIFIER_SCRIPT = r"""
import json, subprocess, sys
data, log = sys.argv[1], sys.argv[2]
brief = sys.stdin.read()
with open(log, "a") as fh:
    fh.write(brief.strip() + "\n")
spec = json.load(open(data))
run = subprocess.run(spec["check"], shell=True, capture_output=True, text=True)
passed = run.returncode == 0
findings = [] if passed else [{
    "message": "acceptance check failed on trunk: "
    + (run.stderr.strip().splitlines() or ["?"])[-1],
    "check": "acceptance",
}]
print(json.dumps({
    "findings": findings,
    "scores": spec.get("scores", []),
    "unreached": spec.get("unreached", []),
    "checks": [{"id": "acceptance", "command": spec["check"], "passed": passed}],
}))
"""

FULL_MARKS = [
    {"axis": a, "score": 10}
    for a in ("correctness", "testing_strategy", "plan_adherence", "regression_surface")
]


class StandInVerifier:
    def __init__(self, agent_dir: Path, check: str, **data: Any) -> None:
        self.dir = agent_dir / "verifier"
        self.dir.mkdir()
        self.dir.chmod(0o777)
        self.script = self.dir / "verify.py"
        self.script.write_text(VERIFIER_SCRIPT)
        self.script.chmod(0o644)
        self.data = self.dir / "data.json"
        self.data.write_text(json.dumps({"check": check, **data}))
        self.data.chmod(0o644)
        self.log = self.dir / "briefs.jsonl"
        self.log.touch()
        self.log.chmod(0o666)

    @property
    def command(self) -> str:
        return f"{sys.executable} {self.script} {self.data} {self.log}"

    def briefs(self) -> list[str]:
        """Each brief exactly as the command read it on stdin."""
        return self.log.read_text().splitlines()


def verify_repo(path: Path, project: str, verifier: StandInVerifier, extra: str = "") -> str:
    """A repository whose ``loopbus.toml`` has a boot check, ``[verify]`` and ``[agents]``
    letting the stand-in write its log; returns the first commit."""
    toml = (
        f'[project]\nid = "{project}"\n\n'
        f'[[check]]\nid = "boot"\ncommand = "{sys.executable} -c \'print(1)\'"\n\n'
        f'[verify]\ncommand = "{verifier.command}"\ntimeout = 60\n\n'
        f'[agents]\nwritable = ["{verifier.dir.parent}"]\n' + extra
    )
    return make_repo(path, {"loopbus.toml": toml, "README.md": "increment\n"})
