"""Draining the spool (`automem.extract.spool`): claiming and running its jobs, and the drainers that do it.

A job is claimed under its own non-blocking lock, and its attempt counted when it is claimed (`process_one`), so a
drainer killed mid-job leaves a job that is retried after its back-off and, after `spool_max_attempts`, moved to
`dead/`. Failed jobs back off exponentially (or as the server's Retry-After says: `backoff_seconds`). A job that
failed because the Chroma server did not answer spends no attempt (`_outage`), and every drainer puts such jobs
back as soon as the server answers again (`after_outage`).

Drainers: `drain()` (one pass, optionally waiting for jobs that come due soon), `drain_single()` (at most one per
root: `SingleDrainer`), `BackgroundDrainer` (a thread for long-lived processes such as the gateway) and
`spawn_detached_drainer()` (a process in its own session for one-shot `hermes chat -q` runs, which outlives its
parent).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from ..config import Config
from ..core.erase import jobs_lock, prune_guard
from ..errors import AutomemError, LLMError, StoreUnavailable
from ..log import log_event
from ..paths import PACKAGE_PARENT, Location, ensure_private_dir, open_private
from ..text import redact_secrets, scrub_surrogates
from .spool import (
    Job,
    JobLock,
    TryLock,
    cleanup_done,
    cleanup_leftovers,
    dead_jobs,
    ensure_spool,
    is_done,
    job_path,
    locks_dir,
    mark_done,
    move_to_dead,
    pending_jobs,
    read_job,
    revive_dead,
    write_atomic,
)

DETACHED_WAIT_SECONDS = 90.0  # a detached drainer stays this long for jobs backing off (5 + 10 + 20 + 40 s)
ERRORS_KEPT = 10  # the last attempts' errors a job keeps (`Job.errors`)


def backoff_seconds(attempts: int, config: Config, retry_after: float | None = None) -> float:
    """How long a job waits after its `attempts`-th failure: the server's Retry-After when it gave one, else
    exponential from spool_backoff_seconds; never more than spool_backoff_max_seconds."""
    if retry_after is not None:
        return min(max(0.0, retry_after), config.spool_backoff_max_seconds)
    return min(config.spool_backoff_seconds * (2 ** max(0, attempts - 1)), config.spool_backoff_max_seconds)


@dataclass
class DrainReport:
    processed: int = 0
    done: int = 0
    retry: int = 0
    dead: int = 0
    locked: int = 0
    revived: int = 0
    pending: int = 0
    next_due_in: float | None = None
    jobs: list = field(default_factory=list)  # one dict per processed job (what was logged)

    def to_json(self) -> dict:
        return asdict(self)


# process(job, details) does the work; it fills `details` (candidates, decisions, tokens, latency) as it goes and
# raises on failure (LLMError with .retryable and maybe .retry_after; anything else is retried too).
Processor = Callable[[Job, dict], Any]


def process_one(location: Location, config: Config, job: Job, process: Processor, now: float | None = None,
                report: DrainReport | None = None) -> str:
    """Claim and run one job. Returns done | retry | dead | locked | gone. Never raises for the job's failure."""
    lock = JobLock(location, job.id)
    if not lock.try_acquire():
        return "locked"
    finished = False
    try:
        now = time.time() if now is None else now
        with jobs_lock(location):  # a forget may rewrite the file (automem.core.erase.scrub_jobs): read, then write
            current = read_job(job_path(location, job.id))
            if current is None:
                return "gone"  # another drainer finished it meanwhile
            if is_done(location, current.id):  # finished, but killed before the file was removed
                job_path(location, current.id).unlink(missing_ok=True)
                return "gone"
            if current.next_attempt_at > now:
                return "locked"
            job = current
            if job.attempts >= config.spool_max_attempts:
                error = job.last_error or "the drainer stopped during every attempt"
                move_to_dead(location, job, f"gave up after {job.attempts} attempts: {error}")
                _log_job(location, job, "dead", {}, job.last_error, report)
                return "dead"
            # Claim: count the attempt first, with a lease, so a drainer killed from here on is visible afterwards.
            job.attempts += 1
            job.next_attempt_at = now + backoff_seconds(job.attempts, config)
            job.last_error = job.last_error or ""
            write_atomic(job_path(location, job.id), job.to_json())
        details: dict = {}
        start = time.monotonic()
        try:
            process(job, details)
        except Exception as exc:  # noqa: BLE001 - a job's failure is recorded, never raised into the host
            details.setdefault("job_ms", round((time.monotonic() - start) * 1000, 1))
            error = str(exc) if isinstance(exc, AutomemError) else f"{exc.__class__.__name__}: {exc}"
            error = redact_secrets(scrub_surrogates(error))  # an API may echo the request back in its error
            retryable = getattr(exc, "retryable", True) if isinstance(exc, LLMError) else True
            with jobs_lock(location):
                on_disk = read_job(job_path(location, job.id))
                if on_disk is not None:  # what a forget left of the transcript and the errors since the claim
                    job.transcript, job.errors = on_disk.transcript, on_disk.errors
                job.errors = (job.errors + [[round(time.time(), 3), error]])[-ERRORS_KEPT:]
                job.last_error = error
                if isinstance(exc, StoreUnavailable):
                    return _outage(location, config, job, details, error, report)
                job.outage_since, job.outage_retries = 0.0, 0
                if not retryable or job.attempts >= config.spool_max_attempts:
                    why = "not retryable" if not retryable else f"gave up after {job.attempts} attempts"
                    move_to_dead(location, job, f"{why}: {error}")
                    _log_job(location, job, "dead", details, error, report)
                    return "dead"
                delay = backoff_seconds(job.attempts, config, getattr(exc, "retry_after", None))
                job.next_attempt_at = time.time() + delay
                write_atomic(job_path(location, job.id), job.to_json())
            details["retry_in_s"] = round(delay, 3)
            _log_job(location, job, "retry", details, error, report)
            return "retry"
        details.setdefault("job_ms", round((time.monotonic() - start) * 1000, 1))
        if job.outage_since:
            details["after_outage_s"] = round(time.time() - job.outage_since, 1)
        mark_done(location, job)
        finished = True
        _log_job(location, job, "done", details, "", report)
        return "done"
    finally:
        lock.release(remove=finished)


def _outage(location: Location, config: Config, job: Job, details: dict, error: str,
            report: DrainReport | None) -> str:
    """The Chroma server did not answer: not the job's fault, so the attempt is not counted. Retried with back-off
    for spool_outage_hours, then kept in dead/ until the server answers again (`after_outage`)."""
    now = time.time()
    job.attempts = max(0, job.attempts - 1)
    job.outage_since = job.outage_since or now
    job.outage_retries += 1
    if now - job.outage_since >= config.spool_outage_hours * 3600.0:
        job.waiting_for_server = True
        move_to_dead(location, job, f"the Chroma server has not answered for {config.spool_outage_hours:g} h "
                                    f"(retried when it answers again): {error}")
        details["waiting_for_server"] = True
        _log_job(location, job, "dead", details, error, report)
        return "dead"
    delay = backoff_seconds(job.outage_retries, config)
    job.next_attempt_at = now + delay
    write_atomic(job_path(location, job.id), job.to_json())
    details["retry_in_s"] = round(delay, 3)
    details["outage_for_s"] = round(now - job.outage_since, 1)
    _log_job(location, job, "retry", details, error, report)
    return "retry"


def server_answers(config: Config) -> bool:
    """Whether the configured Chroma server answers a heartbeat now (True for the embedded store)."""
    if not config.chroma_url:
        return True
    from ..core.server import diagnose, target_of

    try:
        return diagnose(target_of(config), timeout=min(5.0, config.chroma_timeout)) is None
    except AutomemError:
        return False


def after_outage(location: Location, config: Config, now: float | None = None) -> list[str]:
    """When the server answers again: the jobs that waited out an outage in dead/ go back to the spool, and the
    ones still backing off from it are due at once. Returns their ids (nothing asked of the server when no job
    waits for it)."""
    waiting = [j for j in dead_jobs(location) if j.waiting_for_server]
    backing_off = [j for j in pending_jobs(location) if j.outage_since]
    if not (waiting or backing_off) or not server_answers(config):
        return []
    now = time.time() if now is None else now
    revived = revive_dead(location, {j.id for j in waiting}, outage_over=True) if waiting else []
    for job in backing_off:
        lock = JobLock(location, job.id)
        if not lock.try_acquire():
            continue
        try:
            with jobs_lock(location):
                current = read_job(job_path(location, job.id))
                if current is not None and current.outage_since and current.next_attempt_at > now:
                    current.next_attempt_at = now
                    write_atomic(job_path(location, job.id), current.to_json())
                    revived.append(job.id)
        finally:
            lock.release()
    if revived:
        log_event(location, "server_back", jobs=revived)
    return revived


def _log_job(location: Location, job: Job, status: str, details: dict, error: str,
             report: DrainReport | None) -> None:
    record = {"job": job.id, "status": status, "job_profile": job.profile, "session_id": job.session_id,
              "attempt": job.attempts, "error": error, **details}
    log_event(location, "job", **record)
    if report is not None:
        report.jobs.append(record)


def drain(location: Location, config: Config, process: Processor, *, retry_dead: bool = False,
          profile: str | None = None, wait_seconds: float = 0.0, max_jobs: int | None = None,
          stop: threading.Event | None = None) -> DrainReport:
    """Process every due job (of `profile`, or all). With `wait_seconds`, stay for jobs that come due by then."""
    ensure_spool(location)
    report = DrainReport()
    if retry_dead:
        report.revived = len(revive_dead(location))
    else:
        report.revived = len(after_outage(location, config))
    deadline = time.monotonic() + max(0.0, wait_seconds)
    cleanup_done(location, time.time())
    cleanup_leftovers(location, config)
    while stop is None or not stop.is_set():
        now = time.time()
        jobs = pending_jobs(location, profile)
        due = [j for j in jobs if j.next_attempt_at <= now]
        progressed = False
        for job in due:
            if stop is not None and stop.is_set():
                break
            status = process_one(location, config, job, process, report=report)
            if status == "locked":
                report.locked += 1
                continue
            if status == "gone":
                continue
            progressed = True
            report.processed += 1
            setattr(report, status, getattr(report, status) + 1)
            if max_jobs is not None and report.processed >= max_jobs:
                break
        if max_jobs is not None and report.processed >= max_jobs:
            break
        if progressed:
            continue
        waiting = [j.next_attempt_at for j in pending_jobs(location, profile)]
        if not waiting:
            break
        sleep_for = max(0.05, min(waiting) - time.time())
        if time.monotonic() + sleep_for > deadline:
            break
        if stop is not None:
            if stop.wait(sleep_for):
                break
        else:
            time.sleep(sleep_for)
    prune_guard(location)  # the forget guard's entries go once no job older than their forget waits
    remaining = pending_jobs(location, profile)
    report.pending = len(remaining)
    if remaining:
        report.next_due_in = round(max(0.0, min(j.next_attempt_at for j in remaining) - time.time()), 3)
    return report

# -- drainers for hosts --------------------------------------------------------------------------------------
class SingleDrainer(TryLock):
    """At most one detached drainer per root: a lock held for the drainer's lifetime."""

    def __init__(self, location: Location):
        ensure_spool(location)
        super().__init__(locks_dir(location) / "drainer.lock")

    @property
    def held_elsewhere(self) -> bool:
        if self.try_acquire():
            self.release()
            return False
        return True


def drain_single(location: Location, config: Config, process: Processor, **kwargs) -> DrainReport | None:
    """`drain` unless another single drainer runs (None then). After letting go of the lock it looks once more,
    so a job enqueued while it was finishing is not left behind."""
    guard = SingleDrainer(location)
    total = DrainReport()
    while True:
        if not guard.try_acquire():
            return total if total.processed or total.revived else None
        try:
            report = drain(location, config, process, **kwargs)
        finally:
            guard.release()
        for key in ("processed", "done", "retry", "dead", "locked", "revived"):
            setattr(total, key, getattr(total, key) + getattr(report, key))
        total.jobs += report.jobs
        total.pending, total.next_due_in = report.pending, report.next_due_in
        kwargs["retry_dead"] = False
        profile = kwargs.get("profile")
        if not any(j.next_attempt_at <= time.time() for j in pending_jobs(location, profile)):
            return total


def spawn_detached_drainer(location: Location, *, python: str | None = None, wait_seconds: float | None = None,
                           env: dict | None = None) -> int | None:
    """Start `python -m automem drain` in a new session (it survives the parent's exit); its stdin and stdout go
    to /dev/null, its stderr to automem's log folder. Returns the pid, or None when a drainer already runs."""
    ensure_spool(location)
    if SingleDrainer(location).held_elsewhere:
        return None
    wait = DETACHED_WAIT_SECONDS if wait_seconds is None else wait_seconds
    cmd = [python or sys.executable, "-m", "automem", "drain", "--quiet", "--single", "--own-profile",
           "--wait", str(wait), "--hermes-home", str(location.profile_home), "--profile", location.profile]
    child_env = dict(os.environ if env is None else env)
    child_env["HERMES_HOME"] = str(location.profile_home)
    parent = str(PACKAGE_PARENT)
    paths = [p for p in child_env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if parent not in paths:
        child_env["PYTHONPATH"] = os.pathsep.join([parent, *paths])
    ensure_private_dir(location.logs_dir)
    err = open_private(location.logs_dir / "drainer.stderr", "ab")
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True, close_fds=True, env=child_env, cwd=str(location.automem_dir))
    except OSError as exc:
        log_event(location, "drainer_spawn_failed", error=str(exc))
        return None
    finally:
        err.close()
    log_event(location, "drainer_spawned", child=proc.pid)
    return proc.pid


class BackgroundDrainer:
    """A daemon thread that drains the spool for a long-lived process (the gateway). `kick()` after an enqueue.

    If the process dies mid-job, the job is still in the spool and the next drainer finishes it.
    """

    def __init__(self, location: Location, config: Config, process: Processor, profile: str | None = None,
                 idle_seconds: float = 30.0):
        self.location, self.config, self.process, self.profile = location, config, process, profile
        self.idle_seconds = idle_seconds
        self._kick = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.passes = 0

    def start(self) -> "BackgroundDrainer":
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="automem-drainer", daemon=True)
            self._thread.start()
        return self

    def kick(self) -> None:
        self._kick.set()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._kick.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._kick.clear()
            try:
                report = drain(self.location, self.config, self.process, profile=self.profile, stop=self._stop)
                self.passes += 1
                wait = self.idle_seconds if report.next_due_in is None else min(self.idle_seconds,
                                                                               max(0.05, report.next_due_in))
            except Exception as exc:  # noqa: BLE001 - the thread must not die; the failure is logged
                log_event(self.location, "drainer_error", error=f"{exc.__class__.__name__}: {exc}")
                wait = self.idle_seconds
            self._kick.wait(wait)
