"""The first program of every local run (:data:`LAUNCH`) and what it says when the run's
uid, not the program, is refused.

:data:`LAUNCH` is started as the daemon's user by loopbus's own interpreter (``-I -S``:
nothing of the environment or site-packages): the limits, then (a root daemon) the run's
uid, no groups, an empty capability bounding set (dropped first: that needs CAP_SETPCAP),
then ``no_new_privs``, then the command, with the run's environment (an argument:
bubblewrap and this launcher start as the daemon's user, so nothing the environment names —
``LD_PRELOAD`` of a check's ``env`` — may reach them). A fresh process, not a
``preexec_fn``: forking a threaded daemon and running Python (``dlopen``, imports) in the
child before exec can deadlock it.

When the command cannot start, one line says why: the system's words, unless the uid alone
fences the run (not ``wrapped`` in bubblewrap) and the refusal is the uid's (looked at after
the drop, as the uid sees it):

* a program named by a path behind a folder closed to that uid: :data:`UID_DENIED`, that
  folder and the fix;
* a bare name found in no folder on ``PATH`` the uid may enter while some are closed to it:
  :data:`NOT_ON_PATH`, those folders and the fix.

A bare name that some folder the uid may enter holds (a script that is not executable, a
``noexec`` mount) and a name found nowhere with no folder closed keep the system's words.
"""

from __future__ import annotations

UID_DENIED = "Permission denied to the run's uid"
"""What :data:`LAUNCH` says after a program's path when a folder on the way to it is closed
to the run's uid and nothing else fences the run."""

NOT_ON_PATH = "not found in any folder on PATH the run's uid"
"""What :data:`LAUNCH` says after a bare command name found in no folder on ``PATH`` the
run's uid may enter, when some folder there is closed to it."""

LAUNCH = f"""\
import ctypes, json, os, resource, sys
import warnings  # os.execvpe imports it: once the uid drops, the library may be out of reach
uid, memory, cpu, files, processes, wrapped = (int(word) for word in sys.argv[1:7])
fix = sys.argv[7]  # what to do about a folder closed to the uid, before 'or put it ...'
env = json.loads(sys.argv[8])
argv = sys.argv[9:]
if memory >= 0:
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))
if processes >= 0:
    resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
libc = ctypes.CDLL(None, use_errno=True)
if uid >= 0:
    for cap in range(64):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP; EINVAL past the kernel's last cap
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
    sys.stderr.write("loopbus: cannot set no_new_privs\\n")
    os._exit(126)
def shut(way):  # the folder on the way to `way` that this uid may not enter, or None
    for path in (os.path.abspath(way), os.path.realpath(way)):  # realpath stops there
        folders = []
        while path != "/":
            path = os.path.dirname(path)
            folders.insert(0, path)
        for folder in folders:
            if os.path.isdir(folder) and not os.access(folder, os.X_OK):
                return folder
    return None
def denied(name):  # why the uid, not the program, is refused; None: the system's words
    if "/" in name:
        folder = shut(name)
        return folder and f"{UID_DENIED} {{uid}} ({{folder}} is closed to other users)"
    closed = []
    for entry in env.get("PATH", os.defpath).split(os.pathsep):
        way = os.path.join(entry or ".", name)
        if shut(way) is None:
            if os.path.lexists(way):
                return None  # reached, refused for itself: not executable, noexec
        elif entry not in closed:
            closed.append(entry)
    if closed:
        return f"{NOT_ON_PATH} {{uid}} may enter (closed to it: {{', '.join(closed)}})"
    return None
try:
    os.execvpe(argv[0], argv, env)
except OSError as exc:
    why = exc.strerror
    denial = denied(argv[0]) if uid >= 0 and not wrapped and exc.errno == 13 else None
    if denial:
        why = f"{{denial}}: {{fix + ', or ' if fix else ''}}put it where any user can read it"
    sys.stderr.write(f"{{argv[0]}}: {{why}}\\n")
    os._exit(127)
"""
"""The launcher's source: ``python -I -S -c LAUNCH uid memory cpu files processes wrapped
fix env command...`` (see this module's docstring)."""

NO_BUBBLEWRAP = "install bubblewrap"
"""The fix :data:`LAUNCH` names for a closed folder where bubblewrap is not installed."""

BUBBLEWRAP_FAILS = (
    "bubblewrap is installed but cannot make a sandbox here (allow the namespaces it makes, "
    "or run agents in containers with [agents] image)"
)
"""The fix :data:`LAUNCH` names where bubblewrap is installed but fails (a container or a
kernel that forbids its namespaces): installing it again would change nothing."""
