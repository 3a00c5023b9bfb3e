"""The durable extraction spool: one job file per session under `<root>/automem/spool/`.

A session's prepared transcript is written here (tmp file, fsync, rename) before anything else happens, so the work
survives the process that asked for it. The job id is a hash of (profile, session, transcript), so the same content
enqueued twice is one job; processing a job again cannot duplicate memories either (deterministic memory ids and
the write path). A job is claimed under its own non-blocking lock, so two drainers never process the same job; the
attempt is counted when it is claimed, so a drainer killed mid-job leaves a job that is retried after its back-off
and, after `spool_max_attempts`, moved to `dead/` rather than retried forever. Failed jobs back off exponentially
(or as the server's Retry-After says); `dead/` jobs are kept for `automem drain --retry-dead`.

A job that failed because the Chroma server did not answer (`StoreUnavailable`: down, unreachable, hung) is not
at fault: such attempts are not counted; it is retried with the same back-off for `spool_outage_hours`, then waits
in `dead/` marked `waiting_for_server`, and every drainer puts it back in the spool (due at once, as are the jobs
still backing off from the outage) as soon as the server answers a heartbeat again (`after_outage`).

Besides extraction jobs (`kind` "extract": a transcript), the spool holds memories `automem add` could not store
because the server did not answer (`kind` "add": the candidates, written through the write path when it answers).

This module is the job files (enqueue, read, done, dead/, leftovers, each written atomically) and their locks; what
runs them (claiming, back-off, outages, the drain loop, the drainers for hosts) is `automem.extract.drainer`.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Collection

from ..config import Config
from ..core.erase import jobs_lock
from ..errors import AutomemError
from ..log import log_event
from ..paths import Location, ensure_private_dir, open_private

JOB_VERSION = 1
DONE_KEEP_SECONDS = 30 * 24 * 3600  # how long "this content was already extracted" is remembered


@dataclass
class Job:
    id: str
    profile: str
    transcript: list  # [[role, text], ...], prepared (redacted, cut)
    session_id: str = ""
    task_id: str = ""
    origin: str = "cli"  # hermes | cli | api: where it came from (the `auto` backend choice depends on it)
    identity: dict = field(default_factory=dict)  # whose memories (automem.core.identity); {}: the owner's
    created_at: float = 0.0
    attempts: int = 0
    next_attempt_at: float = 0.0
    last_error: str = ""
    errors: list = field(default_factory=list)  # the last attempts' [time, error]
    version: int = JOB_VERSION
    kind: str = "extract"  # extract: a transcript | add: `candidates` the CLI could not store (server down)
    candidates: list = field(default_factory=list)  # kind add: the write path's Candidate fields, one dict each
    outage_since: float = 0.0  # the first failure of the current outage of the Chroma server (0: none)
    outage_retries: int = 0  # failed attempts during that outage (not counted in `attempts`)
    waiting_for_server: bool = False  # in dead/ after spool_outage_hours of outage: revived when it answers

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "Job":
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


def job_id(profile: str, session_id: str, transcript: list, identity: dict | None = None) -> str:
    """Deterministic: the same content of the same session (and person) is one job, however often it is
    enqueued. The owner's job ids are what they always were."""
    parts = [profile, session_id, transcript] + ([identity] if identity else [])
    payload = json.dumps(parts, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return "j_" + hashlib.sha256(payload.encode("utf-8")).hexdigest()[:24]

# -- files -----------------------------------------------------------------------------------------------------
def _done_dir(location: Location) -> Path:
    return location.spool_dir / ".done"


def locks_dir(location: Location) -> Path:
    return location.spool_dir / ".locks"


def job_path(location: Location, jid: str, dead: bool = False) -> Path:
    return (location.dead_dir if dead else location.spool_dir) / f"{jid}.json"


def write_atomic(path: Path, data: dict) -> None:
    """tmp file + fsync + rename (+ fsync of the folder): a reader sees the old file or the new one, never half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    raw = json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, raw)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    try:
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def read_job(path: Path) -> Job | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return Job.from_json(json.load(fh))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as exc:
        raise AutomemError(f"cannot read job file {path}: {exc}") from None


def ensure_spool(location: Location) -> None:
    for d in (location.automem_dir, location.spool_dir, location.dead_dir, location.logs_dir, _done_dir(location),
              locks_dir(location)):
        ensure_private_dir(d)


def is_done(location: Location, jid: str) -> bool:
    return (_done_dir(location) / jid).exists()


def enqueue_job(location: Location, job: Job) -> bool:
    """Write `job` to the spool unless it is already pending, dead or done. True when a new file was written."""
    ensure_spool(location)
    if job_path(location, job.id).exists() or job_path(location, job.id, dead=True).exists() \
            or is_done(location, job.id):
        return False
    if not job.created_at:
        job.created_at = time.time()
    write_atomic(job_path(location, job.id), job.to_json())
    return True


def pending_jobs(location: Location, profile: str | None = None) -> list[Job]:
    """Every readable job in the spool (oldest first); an unreadable file is moved to dead/ and logged."""
    out = []
    try:
        names = sorted(p for p in os.listdir(location.spool_dir) if p.endswith(".json") and not p.startswith("."))
    except FileNotFoundError:
        return []
    for name in names:
        path = location.spool_dir / name
        try:
            job = read_job(path)
        except AutomemError as exc:
            _quarantine(location, path, str(exc))
            continue
        if job is not None and (profile is None or job.profile == profile):
            out.append(job)
    out.sort(key=lambda j: (j.created_at, j.id))
    return out


def dead_jobs(location: Location) -> list[Job]:
    out = []
    try:
        names = sorted(p for p in os.listdir(location.dead_dir) if p.endswith(".json") and not p.startswith("."))
    except FileNotFoundError:
        return []
    for name in names:
        try:
            job = read_job(location.dead_dir / name)
        except AutomemError:
            continue
        if job is not None:
            out.append(job)
    return out


def _quarantine(location: Location, path: Path, error: str) -> None:
    ensure_private_dir(location.dead_dir)
    target = location.dead_dir / (path.name + ".unreadable")
    try:
        os.replace(path, target)
    except OSError:
        return
    log_event(location, "job", job=path.stem, status="dead", error=error, file=str(target))


def mark_done(location: Location, job: Job) -> None:
    ensure_private_dir(_done_dir(location))
    marker = _done_dir(location) / job.id
    with open_private(marker) as fh:
        fh.write(str(int(time.time())))
    try:
        os.unlink(job_path(location, job.id))
    except FileNotFoundError:
        pass


def move_to_dead(location: Location, job: Job, error: str) -> None:
    ensure_private_dir(location.dead_dir)
    job.last_error = error
    write_atomic(job_path(location, job.id, dead=True), job.to_json())
    try:
        os.unlink(job_path(location, job.id))
    except FileNotFoundError:
        pass


def add_job_id(candidates: list, at: float) -> str:
    """The id of `automem add`'s queued memories: one per command (the same memories added twice while the server
    is away are two adds, as they would have been with it)."""
    payload = json.dumps([candidates, at], ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return "a_" + hashlib.sha256(payload.encode("utf-8")).hexdigest()[:24]


def revive_dead(location: Location, ids: Collection[str] | None = None, *, outage_over: bool = False) -> list[str]:
    """Move every dead job (or those of `ids`) back into the spool with a fresh attempt budget (`automem drain
    --retry-dead`, the dashboard's retry; `outage_over`: the server answers again, and the job keeps when its
    outage began, for the log)."""
    revived = []
    ensure_spool(location)
    with jobs_lock(location):
        for job in dead_jobs(location):
            if ids is not None and job.id not in ids:
                continue
            job.attempts, job.next_attempt_at = 0, 0.0
            job.outage_retries, job.waiting_for_server = 0, False
            if not outage_over:
                job.outage_since = 0.0
            write_atomic(job_path(location, job.id), job.to_json())
            try:
                os.unlink(job_path(location, job.id, dead=True))
            except FileNotFoundError:
                pass
            revived.append(job.id)
    return revived


def cleanup_done(location: Location, now: float) -> None:
    try:
        entries = list(os.scandir(_done_dir(location)))
    except FileNotFoundError:
        return
    for entry in entries:
        try:
            if now - entry.stat().st_mtime > DONE_KEEP_SECONDS:
                os.unlink(entry.path)
        except OSError:
            pass


TMP_KEEP_SECONDS = 3600.0  # a temporary file older than this belongs to a writer that died


def cleanup_leftovers(location: Location, config: Config, now: float | None = None) -> dict[str, int]:
    """What killed or finished work leaves behind: lock files of jobs that are no longer pending (taken only
    while free, so a running drainer keeps its lock), temporary files of dead writers, and dead jobs older than
    `spool_dead_keep_days` (each one logged, by id). Returns how many of each were removed."""
    now = time.time() if now is None else now
    removed = {"locks": 0, "tmp": 0, "dead_expired": 0}
    pending = {name[:-len(".json")] for name in _names(location.spool_dir) if name.endswith(".json")}
    for name in _names(locks_dir(location)):
        jid = name[:-len(".lock")] if name.endswith(".lock") else None
        if not jid or jid == "drainer" or jid in pending:
            continue
        lock = TryLock(locks_dir(location) / name)
        if not lock.try_acquire():
            continue  # held: a drainer is finishing that job right now
        try:
            if not job_path(location, jid).exists():
                os.unlink(locks_dir(location) / name)
                removed["locks"] += 1
        except OSError:
            pass
        finally:
            lock.release()
    for folder in (location.spool_dir, location.dead_dir):
        for name in _names(folder):
            if name.startswith(".") and name.endswith(".tmp"):
                try:
                    if now - os.stat(folder / name).st_mtime > TMP_KEEP_SECONDS:
                        os.unlink(folder / name)
                        removed["tmp"] += 1
                except OSError:
                    pass
    keep = config.spool_dead_keep_days * 86400.0
    for name in _names(location.dead_dir):
        path = location.dead_dir / name
        try:
            age = now - os.stat(path).st_mtime
        except OSError:
            continue
        if age > keep and not name.startswith("."):
            try:
                os.unlink(path)
            except OSError:
                continue
            removed["dead_expired"] += 1
            log_event(location, "dead_job_expired", job=name.split(".")[0], age_days=round(age / 86400.0, 1))
    return removed


def _names(folder: Path) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


class TryLock:
    """A non-blocking lock file (flock via filelock): released by the OS when its holder dies."""

    def __init__(self, path):
        from filelock import FileLock

        self.path = path
        self._lock = FileLock(str(path), mode=0o600)

    def try_acquire(self) -> bool:
        from filelock import Timeout

        try:
            self._lock.acquire(timeout=0)
            return True
        except Timeout:
            return False

    def release(self) -> None:
        self._lock.release()


class JobLock(TryLock):
    """The lock of one job: two drainers never process the same job."""

    def __init__(self, location: Location, jid: str):
        ensure_private_dir(locks_dir(location))
        super().__init__(locks_dir(location) / f"{jid}.lock")

    def release(self, remove: bool = False) -> None:
        if remove:
            try:
                os.unlink(self.path)  # while still held: the next claimant re-reads the job file and finds it gone
            except OSError:
                pass
        self._lock.release()


def spool_stats(location: Location) -> dict:
    jobs = pending_jobs(location) if location.spool_dir.is_dir() else []
    now = time.time()
    dead = dead_jobs(location)
    return {
        "spool_depth": len(jobs),
        "spool_due": sum(1 for j in jobs if j.next_attempt_at <= now),
        "spool_oldest_age_s": round(now - min(j.created_at for j in jobs), 1) if jobs else 0,
        "dead_jobs": len(dead),
        "dead_last_errors": [f"{j.id}: {j.last_error}" for j in dead[-3:]],
        "waiting_for_server": sum(1 for j in jobs if j.outage_since) + sum(1 for j in dead if j.waiting_for_server),
        "queued_adds": sum(1 for j in jobs if j.kind == "add"),
    }
