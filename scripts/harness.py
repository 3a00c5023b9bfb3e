"""The benchmark harness every script in scripts/ uses.

- where the checkout is (`REPO`, `DATA`), and the commit the figures were measured on (`commit`, `header`,
  `print_json`);
- temporary Hermes roots (`temp_root`): whatever still runs under one at the end (a resident recall process, a
  detached drainer) is stopped before the folder goes (`stop_processes_under`, `stop_residents`);
- child processes: `python_m` (a script or module as `python -m`), `child_env` (this checkout on PYTHONPATH, the
  caller's AUTOMEM_* settings left out), `run_child` (wall time, peak RSS and CPU of that child alone);
  `child_env`, `stop_processes_under` and `cpu_seconds` live in tests/support/processes.py, which tests use too
  (a test never imports a script);
- timing and figures: `Stopwatch`, `time_ms`, `percentile`, `describe`, `median_interval`;
- memory: `peak_rss_mb`, `rss_mb` (scripts/probe.py, which a child probe imports alone so as not to weigh on
  what it measures), `cpu_seconds`.

Scripts run from the repository root as `python -m scripts.<name>`: nothing edits sys.path.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from scripts.probe import peak_rss_mb, rss_mb
from tests.support.processes import child_env, cpu_seconds, residents_of, stop, stop_processes_under

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
STARTED = time.time()  # when the script started: the date its figures carry

__all__ = ["DATA", "REPO", "Child", "Stopwatch", "child_env", "commit", "cpu_seconds", "describe", "header",
           "median_interval", "peak_rss_mb", "percentile", "print_json", "python_m", "rss_mb", "run_child",
           "stop_processes_under", "stop_residents", "temp_root", "time_ms"]


# -- what the figures were measured on -----------------------------------------------------------------------------
def commit() -> str:
    """HEAD (short, "+dirty(automem/)" when automem/ has uncommitted changes), or $AUTOMEM_COMMIT for a copy
    outside git (e.g. a `git archive` export)."""
    if os.environ.get("AUTOMEM_COMMIT"):
        return os.environ["AUTOMEM_COMMIT"]
    try:
        sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "automem"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return sha + ("+dirty(automem/)" if dirty else "") if sha else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def measured_at() -> str:
    """The script's start, UTC, to the minute."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(STARTED))


def header(name: str) -> str:
    """The line a script prints above its figures: which script, the commit, when, on how many cores, how busy."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{name}: commit {commit()}, {measured_at()}, {os.cpu_count()} cores, load average {load}"


def print_json(result: dict, **dumps: object) -> None:
    """`result` as one JSON object on stdout, led by the commit it was measured on and when."""
    print(json.dumps({"commit": commit(), "measured_at": measured_at(), **result}, **dumps))


# -- temporary roots and what runs under them ----------------------------------------------------------------------
def stop_residents(root: Path | str) -> list[int]:
    """Stop the resident recall processes serving `root` (automem.core.resident); returns their pids."""
    pids = residents_of(root)
    stop(pids)
    return pids


def _exit_on_sigterm() -> object | None:
    """Make SIGTERM (`kill PID`) end the script through its `finally` blocks, so the temporary roots still go;
    returns the handler to put back, or None when another one was set already (or this is not the main thread)."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return None

    def _exit(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    return signal.signal(signal.SIGTERM, _exit)


@contextmanager
def temp_root(prefix: str = "automem-bench-") -> Iterator[Path]:
    """A temporary folder for Hermes roots (never ~/.hermes). On the way out, also when the script is stopped with
    SIGTERM or Ctrl-C, whatever still runs under it is stopped, then it is removed."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    previous = _exit_on_sigterm()
    try:
        yield path
    finally:
        stop_processes_under(path)
        shutil.rmtree(path, ignore_errors=True)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


# -- child processes -----------------------------------------------------------------------------------------------
def python_m(module: str, *args: str) -> list[str]:
    """The command line of `python -m module args` with this interpreter (run it with `cwd=REPO` or a
    `child_env()`, so that `scripts` and `tests` import from this checkout)."""
    return [sys.executable, "-m", module, *args]


@dataclass
class Child:
    """What one finished child process did, measured on it alone (os.wait4)."""

    wall_s: float
    returncode: int
    stdout: str
    stderr: str
    peak_rss_kb: int
    cpu_s: float  # user + sys


def run_child(argv: Sequence[str], env: dict | None = None, cwd: Path | str = REPO) -> Child:
    """Run `argv` to its end; its wall time, output, and the peak RSS and CPU time of that child alone (the CPU
    figure moves less than wall time with whatever else the machine runs)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(argv), stdout=out, stderr=err, env=env, cwd=str(cwd))
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Child(wall, proc.returncode, out.read().decode("utf-8", "replace"),
                     err.read().decode("utf-8", "replace"), usage.ru_maxrss, usage.ru_utime + usage.ru_stime)


# -- timing and figures --------------------------------------------------------------------------------------------
class Stopwatch:
    """`with Stopwatch() as sw: ...` then `sw.s` / `sw.ms` (perf_counter)."""

    def __enter__(self) -> Stopwatch:
        self.start = time.perf_counter()
        self.s = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.s = time.perf_counter() - self.start

    @property
    def ms(self) -> float:
        return self.s * 1000


def time_ms(fn: Callable[..., object], *args: object, **kwargs: object) -> float:
    """Milliseconds one call of `fn(*args, **kwargs)` takes."""
    t0 = time.perf_counter()
    fn(*args, **kwargs)
    return (time.perf_counter() - t0) * 1000


def percentile(values: Iterable[float], p: float) -> float:
    """The p-th percentile (0..100) of `values`, interpolated between the two nearest samples (numpy's default,
    `statistics.quantiles(method="inclusive")`): p50 is the median. NaN when there are none."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    k = (len(ordered) - 1) * min(max(p, 0.0), 100.0) / 100
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def describe(xs: Sequence[float], digits: int = 3) -> dict:
    """Median, mean, min, max and every run, rounded."""
    return {"median": round(statistics.median(xs), digits), "mean": round(statistics.fmean(xs), digits),
            "min": round(min(xs), digits), "max": round(max(xs), digits), "runs": [round(x, digits) for x in xs]}


def median_interval(xs: Sequence[float], reps: int = 4000, seed: int = 0) -> tuple[float, float]:
    """A 95 % bootstrap interval of the median of xs: how far the noise of this many runs lets it move."""
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(reps))
    return round(meds[int(0.025 * reps)], 1), round(meds[int(0.975 * reps) - 1], 1)
