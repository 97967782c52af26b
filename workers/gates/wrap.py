"""Run a check's command and record how it ended and what it cost.

``python -I -S wrap.py STATUS_FILE ARGV...`` — started by the subprocess executor as the
leader of a new process group. It starts ARGV (no shell), waits for it with ``wait4`` so
the CPU time and peak memory of the command's own process tree are known, and writes one
JSON object to STATUS_FILE: ``{"rc": …, "signal": …, "cpu_s": …, "max_rss_kb": …}``, or
``{"start_error": "…"}`` when ARGV could not be started at all. When the executor kills the
group on a timeout, this process dies with it and writes nothing, which the executor reads
as "killed". Standard library only; ``-I -S`` keeps it independent of the environment.
"""

import json
import os
import signal
import subprocess
import sys


def main() -> int:
    status_file, argv = sys.argv[1], sys.argv[2:]
    try:
        child = subprocess.Popen(argv)
    except OSError as exc:
        with open(status_file, "w") as out:
            json.dump({"start_error": f"{argv[0]}: {exc.strerror or exc}"}, out)
        return 127
    _pid, status, usage = os.wait4(child.pid, 0)
    child.returncode = 0  # reaped here; stop Popen from waiting on it again
    report = {
        "rc": os.waitstatus_to_exitcode(status),
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 6),
        "max_rss_kb": int(usage.ru_maxrss),
    }
    with open(status_file, "w") as out:
        json.dump(report, out)
    rc = os.waitstatus_to_exitcode(status)
    return rc if rc >= 0 else 128 + int(report["signal"] or signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main())
