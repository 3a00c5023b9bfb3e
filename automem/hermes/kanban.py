"""Kanban workers remember: what the Hermes plugin calls in a kanban worker (each entry point returns quietly;
failures go to automem.log).

- `hook_worker_start` (plugin load in a worker): the backfill and the first-turn recall start at once, in a child
  process (`WorkerRecall`), so they do not hold the GIL against Hermes' own start-up.
- `hook_first_turn` (`pre_llm_call`): the past-task block on the worker's first turn.
- `hook_task_ended` (`kanban_task_completed` / `kanban_task_blocked`): the run's memory.

The work itself: `automem.hermes.kanban_board` (the board DB, read only), `automem.hermes.kanban_record` (task
memories, `kanban_sync`), `automem.hermes.kanban_recall` (the past-task block).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import AutomemError
from ..log import log_event
from ..paths import PACKAGE_PARENT, Location
from .kanban_recall import worker_first_turn
from .kanban_record import kanban_sync, record_task_run

# -- what the Hermes plugin calls (each returns quietly; failures go to automem.log) --------------------------------
FIRST_TURN_WAIT_S = 30.0


def compute_first_turn(location: Location, env: Mapping[str, str]) -> str:
    """What a worker's first turn gets: the backfill, then the block (just the backfill with kanban_recall off)."""
    from ..config import load_config

    config = load_config(location)
    if config.kanban_recall:
        return worker_first_turn(location, config, env=env)
    kanban_sync(location, config, (env.get("HERMES_KANBAN_BOARD") or "").strip() or None, env=env)
    return ""


_CHILD = "import sys; from automem.hermes.kanban import child_main; sys.exit(child_main(sys.argv[1:]))"


def child_main(argv: Sequence[str]) -> int:
    """`python -c _CHILD ROOT PROFILE`: compute the first-turn block and print it as one JSON line."""
    location = Location(root=Path(argv[0]), profile=argv[1])
    start = time.perf_counter()
    block = compute_first_turn(location, os.environ)
    print(json.dumps({"block": block, "compute_ms": round((time.perf_counter() - start) * 1000, 1)},
                     ensure_ascii=False))
    return 0


class WorkerRecall:
    """The first-turn block of a worker, computed from the moment the plugin loads, in a child process.

    A worker is a fresh process: importing chromadb and loading the embedding model cost about 2 s of CPU. Done in a
    thread of the worker, that work holds the GIL against Hermes' own start-up (measured: the first model call came
    as late as without the head start); a child process runs it on another core. Should the child fail, the block
    is computed in this process instead.
    """

    def __init__(self, location: Location, env: Mapping[str, str], in_process: bool = False):
        import threading

        self.location = location
        self.env = dict(env)
        self.task_id = self.env.get("HERMES_KANBAN_TASK", "")
        self.in_process = in_process
        self._block: str | None = None
        self.compute_ms = 0.0
        self.where = ""
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="automem-kanban-recall", daemon=True)

    def start(self) -> "WorkerRecall":
        self._thread.start()
        return self

    def _in_child(self) -> str:
        import subprocess
        import sys

        env = {**os.environ, **self.env}
        here = str(PACKAGE_PARENT)  # the child imports this very automem
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(self.location.root), self.location.profile],
                              env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=FIRST_TURN_WAIT_S, cwd=str(self.location.root))
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not lines:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise AutomemError(f"recall child exited {proc.returncode}: {tail[:300]}")
        out = json.loads(lines[-1])
        self.compute_ms = float(out.get("compute_ms", 0.0))
        return str(out.get("block") or "")

    def _run(self) -> None:
        start = time.perf_counter()
        try:
            if not self.in_process:
                try:
                    self._block, self.where = self._in_child(), "child"
                    return
                except Exception as exc:  # noqa: BLE001 - e.g. the child cannot import automem: do it here
                    log_event(self.location, "kanban_recall_child_failed", task_id=self.task_id,
                              error=f"{exc.__class__.__name__}: {exc}"[:500])
            self._block, self.where = compute_first_turn(self.location, self.env), "thread"
            self.compute_ms = (time.perf_counter() - start) * 1000
        except Exception as exc:  # noqa: BLE001 - a worker without recall still works
            log_event(self.location, "kanban_recall_failed", task_id=self.task_id,
                      error=f"{exc.__class__.__name__}: {exc}"[:500])
            self._block = ""
        finally:
            self._done.set()

    @property
    def ready(self) -> bool:
        return self._done.is_set()

    def block(self, timeout: float = FIRST_TURN_WAIT_S + 5) -> str:
        """The block, waiting at most `timeout` s; logs what the wait cost the first turn."""
        start = time.perf_counter()
        if not self._done.wait(timeout):
            log_event(self.location, "kanban_recall_timeout", task_id=self.task_id, waited_s=timeout)
            return ""
        block = self._block or ""
        log_event(self.location, "kanban_recall", task_id=self.task_id, chars=len(block),
                  tasks=block.count("\n- t_"), compute_ms=round(self.compute_ms, 1), where=self.where,
                  waited_ms=round((time.perf_counter() - start) * 1000, 1))
        return block


_worker_recall: WorkerRecall | None = None


def _worker_location(hermes_home: str | None) -> Location:
    return Location.resolve(hermes_home)


def hook_worker_start(hermes_home: str | None = None, env: Mapping[str, str] | None = None) -> None:
    """Plugin load: in a kanban worker, start the backfill and the first-turn recall in the background."""
    global _worker_recall
    env = os.environ if env is None else env
    task_id = (env.get("HERMES_KANBAN_TASK") or "").strip()
    if not task_id or (_worker_recall is not None and _worker_recall.task_id == task_id):
        return
    try:
        _worker_recall = WorkerRecall(_worker_location(hermes_home), env).start()
    except Exception as exc:  # noqa: BLE001
        log_event(_worker_location(hermes_home), "kanban_recall_failed", task_id=task_id,
                  error=f"{exc.__class__.__name__}: {exc}"[:500])


def hook_first_turn(hermes_home: str | None = None, env: Mapping[str, str] | None = None,
                    is_first_turn: bool = True) -> dict | None:
    """`pre_llm_call`: on a worker's first turn, {"context": past-task block} (None anywhere else)."""
    env = os.environ if env is None else env
    task_id = (env.get("HERMES_KANBAN_TASK") or "").strip()
    if not task_id or not is_first_turn:
        return None
    if _worker_recall is None or _worker_recall.task_id != task_id:
        hook_worker_start(hermes_home, env)
    if _worker_recall is not None and not _worker_recall.ready and not _server_answers(_worker_recall.location):
        log_event(_worker_recall.location, "kanban_recall_skipped", task_id=task_id,
                  reason="the Chroma server did not answer within server_wait_s")
        return None
    block = _worker_recall.block() if _worker_recall is not None else ""
    return {"context": block} if block else None


def _server_answers(location: Location) -> bool:
    """On a Chroma server: whether it answers a heartbeat within `server_wait_s` (a down or hung server must not
    hold a worker's first turn for the block's whole wait); True for the embedded store."""
    try:
        from ..config import load_config

        config = load_config(location)
        if not config.chroma_url:
            return True
        from ..core.server import heartbeat

        return heartbeat(config, config.server_wait_s)
    except AutomemError:
        return False


def hook_task_ended(event: str, hermes_home: str | None = None, env: Mapping[str, str] | None = None,
                    **kwargs: Any) -> None:
    """`kanban_task_completed` / `kanban_task_blocked` (they fire in the worker): store the run's memory."""
    env = os.environ if env is None else env
    location = _worker_location(hermes_home)
    task_id = str(kwargs.get("task_id") or "")
    try:
        if not task_id:
            return
        from ..config import load_config

        run_id = kwargs.get("run_id")
        decision = record_task_run(
            location, load_config(location), task_id=task_id, run_id=int(run_id) if run_id else None,
            board=kwargs.get("board") or None, outcome="blocked" if event.endswith("blocked") else "completed",
            summary=kwargs.get("reason") if event.endswith("blocked") else kwargs.get("summary"),
            assignee=kwargs.get("assignee") or None, env=env)
        log_event(location, "kanban_task_recorded", hook=event, task_id=task_id, run_id=run_id,
                  decision=decision.action if decision else "already stored")
    except Exception as exc:  # noqa: BLE001 - `automem kanban-sync` backfills what a failed hook missed
        log_event(location, "kanban_record_failed", hook=event, task_id=task_id,
                  error=f"{exc.__class__.__name__}: {exc}"[:500])
