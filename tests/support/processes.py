"""Child processes of tests and benchmarks: the environment they get, and what they left under a temporary Hermes
root (a resident recall process, a drainer), found through /proc, so a script can report and stop them whichever
automem version started them. scripts/harness.py hands these to the scripts."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

RESIDENT = b"automem.core.resident"
REPO = Path(__file__).resolve().parents[2]


def child_env(root: Path | str | None = None, *, home: Path | str | None = None, clean: bool = True,
              **overrides: str) -> dict[str, str]:
    """The environment of a child process: this checkout first on PYTHONPATH (so it imports this automem, and
    `scripts` / `tests`), HERMES_HOME = `root` and HOME = `home` when given, then `overrides`. `clean` leaves out
    the caller's AUTOMEM_* settings and GLM_API_KEY (a figure must not depend on the shell it ran in)."""
    env = {k: v for k, v in os.environ.items()
           if not (clean and (k.startswith("AUTOMEM_") or k == "GLM_API_KEY"))}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    if root is not None:
        env["HERMES_HOME"] = str(root)
    if home is not None:
        env["HOME"] = str(home)
    env.update(overrides)
    return env


def processes_naming(root: Path | str, marker: bytes | None = None) -> list[tuple[int, str]]:
    """(pid, command line) of the processes other than this one whose command line or environment names `root`
    (and whose command line holds `marker`, when given)."""
    mark = str(root).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                environ = b""
        except OSError:
            continue
        if (mark in cmdline or mark in environ) and (marker is None or marker in cmdline):
            found.append((int(entry.name), cmdline.replace(b"\0", b" ").decode(errors="replace").strip()))
    return found


def is_resident(pid: int) -> bool:
    """Whether `pid` is a resident recall process (of any root)."""
    try:
        return RESIDENT in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def residents_of(root: Path | str) -> list[int]:
    """Pids of the resident recall processes serving `root`."""
    return [pid for pid, _ in processes_naming(root, RESIDENT)]


def cpu_seconds(pid: int) -> float:
    """CPU (user + sys) a process has spent so far; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def running(pid: int) -> bool:
    """Whether `pid` runs (a zombie, exited but not yet reaped, counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is gone
    except (OSError, IndexError):
        return False


def stop(pids, grace_s: float = 3.0) -> list[int]:
    """SIGTERM `pids`, then SIGKILL what still runs after `grace_s`; returns the pids that had to be killed."""
    pids = set(pids)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + grace_s
    while pids and time.monotonic() < deadline:
        pids = {pid for pid in pids if running(pid)}
        time.sleep(0.1)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return sorted(pids)


def stop_processes_under(root: Path | str) -> list[tuple[int, str]]:
    """Stop (TERM, then KILL) every other process whose command line or environment names `root` (a resident, a
    drainer, a worker); returns (pid, command line) of what it found."""
    found = processes_naming(root)
    stop(pid for pid, _ in found)
    return found
