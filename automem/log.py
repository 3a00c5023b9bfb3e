"""automem's own log: one JSON object per line in `<root>/automem/logs/automem.log`.

Hermes never sees a traceback from automem; what went wrong is written here instead (and `automem doctor` and
`automem stats` read it back).
"""

from __future__ import annotations

import json
import os
import time

from .paths import Location, ensure_private_dir


def log_event(location: Location, event: str, **fields) -> None:
    """Append one event. Never raises: logging must not be the thing that breaks a hook."""
    record = {"ts": round(time.time(), 3), "pid": os.getpid(), "event": event, "profile": location.profile}
    record.update(fields)
    try:
        ensure_private_dir(location.logs_dir)
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        # O_APPEND writes of one small line do not interleave between processes.
        fd = os.open(location.log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
    except OSError:
        pass


def read_events(location: Location, event: str | None = None) -> list[dict]:
    """All logged events (of one kind), oldest first; unreadable lines are skipped."""
    out: list[dict] = []
    try:
        with open(location.log_file, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and (event is None or rec.get("event") == event):
                    out.append(rec)
    except OSError:
        pass
    return out
