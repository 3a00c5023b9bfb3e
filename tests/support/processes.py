"""Processes a test or benchmark left under a temporary Hermes root (a resident recall process, a drainer): found
through /proc, so a script can report and stop them whichever automem version started them."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

RESIDENT = b"automem.core.resident"


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
