"""What a child probe imports to measure itself: its memory, read from /proc, and nothing heavier than `resource`
(a probe that imported the whole harness would add its modules to the peak it reports). scripts/harness.py hands
the same functions to the scripts."""

from __future__ import annotations

import math
import resource


def _status_mb(pid: int | None, field: str) -> float | None:
    try:
        with open(f"/proc/{pid or 'self'}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def peak_rss_mb(pid: int | None = None) -> float:
    """Peak resident memory (VmHWM) of `pid`, or of this process: its own peak (ru_maxrss would carry a forking
    parent's over exec; it is the fallback where /proc is missing)."""
    found = _status_mb(pid, "VmHWM")
    if found is None and pid is None:
        return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return found if found is not None else math.nan


def rss_mb(pid: int | None = None) -> float:
    """Resident memory (VmRSS) of `pid`, or of this process, now."""
    found = _status_mb(pid, "VmRSS")
    return found if found is not None else math.nan
