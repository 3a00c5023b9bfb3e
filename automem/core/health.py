"""What `automem doctor` checks of the memory store itself, each finding with a fix; and `repair`, the fix.

- recall index: does it account for every record the store holds (`automem.core.index.covered_ids` against
  Chroma's ids)? A gap is repaired by its next reader on the embedded store (`Store.ensure_index`); doctor reports
  it all the same, with `automem repair` to rebuild it now.
- stored values: numbers automem owns outside their bounds (`automem.core.memory.value_problem`), read clamped by
  recall; `automem repair` writes the clamped values back.
- resident socket: the path the resident listens on is free or a socket (a folder there stops it for good).
- resident: it answers, or why its last start failed.

Plain findings (name, status ok | warn | fail, detail, fix); the Hermes side turns them into its checks.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass
from typing import Any

from ..config import Config
from ..paths import Location
from .memory import INT_KEYS, value_problem

REPAIR = "automem repair"
SHOWN = 3  # ids named in a finding


@dataclass
class Finding:
    name: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""


def _some(ids: Any) -> str:
    ids = sorted(ids)
    return ", ".join(ids[:SHOWN]) + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


def index_finding(store: Any) -> Finding:
    """Whether the recall index accounts for every record of the store, id by id."""
    from . import index

    name = "recall index"
    loc = store.location
    held = index.covered_ids(loc)
    active: set[str] = set()
    inactive: set[str] = set()
    for mid, meta in store.iter_metadata():
        (active if (meta or {}).get("status", "active") == "active" else inactive).add(mid)
    if held is None:
        if not active and not inactive:
            return Finding(name, "ok", "no index yet (the first reader builds it)")
        return Finding(name, "warn", f"no readable index for {len(active)} active memories; the next reader builds "
                                     f"it", f"`{REPAIR}` builds it now")
    rows, others = held
    missing, extra = active - rows, rows - active
    missing -= index.raced(loc, sorted(missing))  # a race's loser: active on the server, shown as the winner
    unlisted = inactive - others - rows
    gen = store.generation() if store.backend == "embedded" else None
    fresh = index.is_fresh(loc, gen, max_age=store.config.server_sync_s)
    if missing or extra or unlisted:
        parts = []
        if missing:
            parts.append(f"lacks {len(missing)} of {len(active)} active memories ({_some(missing)})")
        if extra:
            parts.append(f"holds {len(extra)} the store does not have as active ({_some(extra)})")
        if unlisted:
            parts.append(f"does not count {len(unlisted)} inactive records")
        said = "while it calls itself current" if fresh else "(now marked stale: its next reader rebuilds it)"
        status = "fail" if store.backend == "embedded" else "warn"  # a server's index follows it by sync
        return Finding(name, status, f"the index {'; '.join(parts)} {said}",
                       f"`{REPAIR}` rebuilds it from the store (recall misses those memories until then)")
    where = f"generation {gen}" if gen is not None else "following the server by sync"
    state = "current" if fresh else ("stale, rebuilt by its next reader" if gen is not None else
                                     "synced by its next reader")
    return Finding(name, "ok", f"accounts for all {len(active)} active memories and {len(inactive)} others "
                               f"({where}, {state})")


def bad_values(store: Any) -> dict[str, list[str]]:
    """{memory id: [field, ...]} of the records holding a number automem owns outside its bounds."""
    out: dict[str, list[str]] = {}
    for mid, meta in store.iter_metadata():
        fields = [k for k in INT_KEYS if k in (meta or {}) and value_problem(k, meta[k])]
        if fields:
            out[mid] = fields
    return out


def values_finding(store: Any) -> Finding:
    bad = bad_values(store)
    if not bad:
        return Finding("stored values", "ok", "every stored number within its bounds")
    shown = "; ".join(f"{mid}: {', '.join(fields)}" for mid, fields in sorted(bad.items())[:SHOWN])
    more = f" and {len(bad) - SHOWN} more" if len(bad) > SHOWN else ""
    return Finding("stored values", "fail", f"{len(bad)} memories hold values out of bounds ({shown}{more}); recall "
                                           f"reads them clamped", f"`{REPAIR}` writes the clamped values back")


def socket_finding(location: Location, config: Config) -> Finding:
    """The resident's socket path: free, or a socket. A folder there stops every start of it."""
    from . import resident_client as resident

    name = "resident socket"
    if not resident.enabled(config):
        return Finding(name, "ok", "not used: the resident is off (automem.resident / resident_idle_s)")
    path = resident.socket_path(location)
    if path.parent != location.automem_dir:  # the short fallback folder under /tmp
        try:
            st = os.lstat(path.parent)
        except FileNotFoundError:
            st = None
        if st is not None and (not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid()):
            return Finding(name, "fail", f"{path.parent} is not a folder of this user: the resident cannot listen "
                                         f"in it", f"remove {path.parent} (made by someone else), or give Hermes a "
                                                   f"shorter root path")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return Finding(name, "ok", f"{path} is free (the resident makes it when it starts)")
    except OSError as exc:
        return Finding(name, "fail", f"{path}: {exc.strerror}", f"fix the permissions of {path.parent}")
    if stat.S_ISSOCK(st.st_mode):
        return Finding(name, "ok", f"{path} is a socket")
    if stat.S_ISDIR(st.st_mode):
        if not any(os.scandir(path)):
            return Finding(name, "warn", f"{path} is an empty folder, not a socket (the resident's next start "
                                         f"removes it)", f"rmdir {path}")
        return Finding(name, "fail", f"{path} is a folder, not a socket: the resident cannot start",
                       f"move its contents elsewhere, then rm -r {path}")
    return Finding(name, "ok", f"{path} is not a socket (the resident replaces it when it starts)")


def resident_finding(location: Location, config: Config) -> Finding:
    """Whether the resident answers; when not, whether its last start failed, and why."""
    from ..log import read_events
    from . import resident_client as resident

    name = "resident"
    if not resident.enabled(config):
        return Finding(name, "ok", "off by configuration (automem.resident is false, or resident_idle_s is 0)")
    reply = resident.ask(location, {"op": "ping"}, timeout=1.0)
    if reply and reply.get("ok"):
        return Finding(name, "ok", f"answering (pid {reply.get('pid')}, automem {reply.get('version')})")
    last = None
    for ev in read_events(location):
        if ev.get("event") in ("resident_started", "resident_stopped", "resident_failed"):
            last = ev
    if last is None or last.get("event") != "resident_failed":
        return Finding(name, "ok", "not running (the next Hermes session starts it)")
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(last.get("ts") or 0)))
    detail = f"not running; its last start ({when}) failed: {last.get('error')}"
    stamp = location.automem_dir / resident.SPAWN_STAMP
    try:
        until = stamp.stat().st_mtime + resident.SPAWN_INTERVAL_S
    except OSError:
        until = 0.0
    wait = f"; no new start before {time.strftime('%H:%M', time.localtime(until))} (delete {stamp} to allow one " \
           f"now)" if until > time.time() else ""
    return Finding(name, "fail", detail, f"fix the cause named (see `resident socket` too){wait}; the next Hermes "
                                         f"session starts it again")


def findings(location: Location, config: Config, store: Any) -> list[Finding]:
    return [index_finding(store), values_finding(store), socket_finding(location, config),
            resident_finding(location, config)]


def repair(store: Any) -> dict[str, int]:
    """`automem repair`: write back the clamped values of records holding values out of bounds, then rebuild the
    recall index from the store. Returns {"values_fixed", "indexed"}."""
    with store.lock():
        bad = bad_values(store)
        mems = store.get(sorted(bad))
        for m in mems:
            m.stored = None  # read clamped (Memory.from_record): written back whole, not as a change
        if mems:
            store.update_metadata(mems)
        indexed = store.rebuild_index()
    return {"values_fixed": len(mems), "indexed": indexed}
