"""The Dockerfile's FROM image: present, pulled, or (when no registry answers) built here.

The local stand-in for ``python:3.11-slim`` is Debian bookworm (whose python3 is 3.11)
made by debootstrap from the Debian mirror apt already uses, with a virtual environment
at /opt/python first on PATH, so ``python`` and ``pip`` behave as in the official image
(pip installs into its own prefix, not into Debian's managed one). It trusts the host's
locally added certificate authorities (/usr/local/share/ca-certificates), so pip inside the
build reaches the package registry through the same TLS the host uses. It is labelled, so
``--remove-images`` knows it was built here.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from .shell import CheckFailed, run, say

LABEL = "org.loopbus.compose-check.base"
VENV = "/opt/python"
# FROM image -> (Debian suite whose python3 matches, the python version it must report)
STAND_INS = {"python:3.11-slim": ("bookworm", "3.11")}
LOCAL_CAS = Path("/usr/local/share/ca-certificates")
DEFAULT_MIRROR = "http://deb.debian.org/debian"


def from_image(dockerfile: Path) -> str:
    """The image the Dockerfile's first ``FROM`` names."""
    for line in dockerfile.read_text().splitlines():
        match = re.match(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)", line, re.IGNORECASE)
        if match:
            return match[1]
    raise CheckFailed(f"{dockerfile} has no FROM line")


def apt_mirror(sources: Path = Path("/etc/apt")) -> str:
    """The Debian archive apt uses here (deb822 ``URIs:`` or a one-line ``deb`` entry)."""
    files = sorted((sources / "sources.list.d").glob("*.sources"))
    for path in files:
        for line in path.read_text().splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    one_line = [sources / "sources.list", *sorted((sources / "sources.list.d").glob("*.list"))]
    for path in one_line:
        if path.exists():
            for line in path.read_text().splitlines():
                words = line.split()
                if words[:1] == ["deb"] and "security" not in line:
                    return next(w for w in words[1:] if not w.startswith("["))
    return DEFAULT_MIRROR


def labelled_here(image: str) -> bool:
    label = f'{{{{index .Config.Labels "{LABEL}"}}}}'
    done = run(["docker", "image", "inspect", "--format", label, image], check=False)
    return done.returncode == 0 and done.stdout.strip() == "1"


def ensure_base(image: str, workdir: Path, log: Path, mirror: str | None) -> str:
    """Make ``image`` available; says how: "present", "pulled" or "built locally"."""
    if run(["docker", "image", "inspect", image], check=False).returncode == 0:
        return "present (built locally earlier)" if labelled_here(image) else "present"
    say(f"pulling {image}")
    if run(["docker", "pull", image], log=log, check=False, timeout=300).returncode == 0:
        return "pulled"
    if image not in STAND_INS:
        raise CheckFailed(
            f"{image} cannot be pulled and compose-check knows no local stand-in for it "
            f"(it knows {', '.join(STAND_INS)}); make it available to the engine first"
        )
    build_base(image, workdir, log, mirror or apt_mirror())
    return "built locally"


def build_base(image: str, workdir: Path, log: Path, mirror: str) -> None:
    """debootstrap a root file system, make it python:3.11-slim-like, import it as ``image``."""
    suite, version = STAND_INS[image]
    if shutil.which("debootstrap") is None:
        raise CheckFailed(f"{image} cannot be pulled and debootstrap is missing; pass --install")
    rootfs = workdir / "rootfs"
    say(f"{image} cannot be pulled: building it with debootstrap {suite} from {mirror}")
    include = "python3,python3-venv,python3-pip,ca-certificates"
    run(
        ["debootstrap", "--variant=minbase", f"--include={include}", suite, str(rootfs), mirror],
        log=log,
        timeout=900,
    )
    for cert in sorted(LOCAL_CAS.rglob("*.crt")) if LOCAL_CAS.is_dir() else []:
        target = rootfs / cert.relative_to("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(cert, target)
    run(["chroot", str(rootfs), "update-ca-certificates"], log=log)
    run(["chroot", str(rootfs), "python3", "-m", "venv", VENV], log=log)
    reported = run(["chroot", str(rootfs), f"{VENV}/bin/python", "--version"]).stdout
    if not reported.startswith(f"Python {version}."):
        raise CheckFailed(f"debootstrap {suite} gave {reported.strip()}, not Python {version}")
    for cache in ("var/lib/apt/lists", "var/cache/apt"):
        shutil.rmtree(rootfs / cache, ignore_errors=True)
    changes = [
        f"ENV PATH={VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "ENV LANG=C.UTF-8",
        f"LABEL {LABEL}=1",
        'CMD ["python3"]',
    ]
    tar = ["tar", "-C", str(rootfs), "--numeric-owner"]
    tar += ["--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*", "-c", "."]
    importer = ["docker", "import", *(w for c in changes for w in ("--change", c)), "-", image]
    with subprocess.Popen(tar, stdout=subprocess.PIPE) as packer:
        done = subprocess.run(importer, stdin=packer.stdout, capture_output=True, text=True)
    if packer.returncode or done.returncode:
        raise CheckFailed(f"importing the root file system as {image} failed: {done.stderr}")
    shutil.rmtree(rootfs)
