"""Kanban task memories: one episodic memory per task run that ended, recorded by the hook or by `kanban_sync`.

- A run that ended (completed or blocked) becomes one memory in room `kanban`: "<title> — <summary>" (or
  "— blocked: <reason>"), wing `episodic`, the worker's profile, `task_id` and the `kanban_*` metadata below. Its id
  is deterministic from (board, task, run), so the hook and `kanban-sync` can both record a run and it is stored once,
  and two runs of one task are two memories (the write path treats room `kanban` as event records).
- `kanban_sync` reads the board's `task_runs` past a cursor kept in `<root>/automem/cache/`, so the pass a worker
  makes at start costs one SQL query and no store access when nothing was missed.

The board is read through `automem.hermes.kanban_board`; memories go through the write path.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

from ..config import Config
from ..core.memory import held_id, memory_id
from ..log import log_event
from ..paths import Location, ensure_private_dir, write_private
from ..text import normalise, redact_secrets
from .kanban_board import (
    DEFAULT_BOARD,
    BoardError,
    TaskRun,
    ended_runs_after,
    latest_ended_run,
    max_run_id,
    open_board,
    read_run,
    resolve_board,
    settled_cursor,
)

ROOM = "kanban"
WING = "episodic"
TEXT_MAX_CHARS = 200  # the write path's limit
TITLE_MAX_CHARS = 80
SUMMARY_META_MAX_CHARS = 2000


# -- the memory of a run (plain functions) --------------------------------------------------------------------------
def scrub(text: str) -> str:
    """Secrets out of board text before it becomes a memory (the run row itself is not ours to change)."""
    return redact_secrets(text, placeholder="(secret removed)")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def task_memory_id(board: str, task_id: str, run_id: int) -> str:
    """Deterministic per (board, task, run): the hook and the backfill store a run once."""
    return memory_id(f"kanban:{board}", WING, f"{task_id}#{int(run_id)}")


def task_memory_text(run: TaskRun) -> str:
    """"<title> — <summary>" or "<title> — blocked: <reason>", normalised, within the write path's 200 chars.

    Only the title and the summary are embedded: ids, dates and names would pull every task memory toward each other
    (measured: +0.1 cosine distance for a related card), so they live in the metadata.
    """
    title = _cut(normalise(scrub(run.title)) or run.task_id, TITLE_MAX_CHARS)
    summary = normalise(scrub(run.summary))
    if run.outcome == "blocked":
        summary = f"blocked: {summary or '(no reason given)'}"
    elif not summary:
        summary = f"{run.outcome or 'ended'} (no summary)"
    head = f"{title} — "
    return head + _cut(summary, TEXT_MAX_CHARS - len(head))


def task_candidate(run: TaskRun, added_by: str = "kanban-hook"):
    """The write-path candidate of a run: wing episodic, room kanban, the assignee's profile."""
    from ..core.provenance import Evidence
    from ..core.write_path import Candidate

    extra = {
        "kanban_board": run.board,
        "kanban_run_id": int(run.run_id),
        "kanban_title": _cut(normalise(scrub(run.title)), 300),
        "kanban_assignee": run.assignee,
        "kanban_outcome": run.outcome,
        "kanban_summary": _cut(scrub(run.summary or "").strip(), SUMMARY_META_MAX_CHARS),
        "kanban_ended_at": int(run.ended_at),
    }
    # Its source is the task itself (task_id, board, run in the metadata): no conversation turn to quote.
    evidence = Evidence(speaker=f"kanban worker {run.assignee}" if run.assignee else "", origin="kanban",
                        extractor=added_by)
    return Candidate(text=task_memory_text(run), wing=WING, profile=run.profile or run.assignee or DEFAULT_BOARD,
                     room=ROOM, added_by=added_by, session_id=run.worker_session_id, task_id=run.task_id,
                     extra=extra, id=task_memory_id(run.board, run.task_id, run.run_id), evidence=evidence)


def record_runs(store, runs: Sequence[TaskRun], added_by: str) -> list:
    """Store the runs not stored yet (whatever their status: a forgotten one stays forgotten). Decisions of the new."""
    from ..core.write_path import remember

    if not runs:
        return []
    ids = [task_memory_id(r.board, r.task_id, r.run_id) for r in runs]
    cands = [task_candidate(r, added_by) for r in runs]
    # A run held for the owner's review (automem.core.review) is known too: it waits under held_id.
    held = {held_id(i): i for i in ids}
    known = {held.get(m.id, m.id) for m in store.get(ids + list(held))}
    known |= store.forgotten_among([(i, c.profile, c.scope, c.text) for i, c in zip(ids, cands) if i not in known])
    todo = [c for c, i in zip(cands, ids) if i not in known]
    return remember(store, todo) if todo else []


# -- the sync cursor ------------------------------------------------------------------------------------------------
def _state_path(location: Location, board: str, db: Path) -> Path:
    digest = hashlib.sha256(str(db.expanduser().absolute()).encode("utf-8")).hexdigest()[:10]
    return location.cache_dir / f"kanban-sync-{board}-{digest}.json"


@dataclass
class SyncState:
    cursor: int = 0  # every run with id <= cursor has ended and, if it is one to record, is recorded
    recorded: list[int] = field(default_factory=list)  # run ids > cursor already recorded (by a hook or a sync)

    def normalised(self) -> "SyncState":
        return SyncState(self.cursor, sorted({r for r in self.recorded if r > self.cursor}))


def _load_state(path: Path) -> SyncState:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return SyncState(int(data.get("cursor", 0)), [int(r) for r in data.get("recorded", [])])
    except (OSError, ValueError, TypeError, AttributeError):
        return SyncState()


def _save_state(path: Path, state: SyncState) -> None:
    ensure_private_dir(path.parent)
    state = state.normalised()
    write_private(path, json.dumps({"cursor": state.cursor, "recorded": state.recorded}))


SYNC_LOCK_TIMEOUT_S = 60.0


@contextmanager
def _state_lock(path: Path, timeout: float | None = None) -> Iterator[None]:
    """One sync per board at a time (a worker start and a CLI sync may overlap)."""
    from filelock import FileLock, Timeout

    timeout = SYNC_LOCK_TIMEOUT_S if timeout is None else timeout

    ensure_private_dir(path.parent)
    lock = FileLock(str(path) + ".lock", mode=0o600)
    try:
        lock.acquire(timeout=timeout)
    except Timeout:
        raise BoardError(f"another kanban-sync has held {lock.lock_file} for {timeout:.0f} s; "
                         f"if none is running, delete that file") from None
    try:
        yield
    finally:
        lock.release()


def _mark_recorded(location: Location, board: str, db: Path, run_ids: Iterable[int]) -> None:
    path = _state_path(location, board, db)
    with _state_lock(path):
        state = _load_state(path)
        state.recorded = list(state.recorded) + [int(r) for r in run_ids]
        _save_state(path, state)


@dataclass
class SyncResult:
    board: str
    db: str
    scanned: int = 0  # ended runs looked at past the cursor
    recorded: int = 0  # new task memories
    already: int = 0  # runs whose memory was there already
    rejected: int = 0  # runs the write path refused (reasons in automem.log)
    held: int = 0  # runs held for the owner's review as injection-shaped (`automem review`)
    cursor: int = 0

    def to_json(self) -> dict:
        return dict(self.__dict__)


def kanban_sync(location: Location, config: Config, board: str | None = None, *, store=None,
                env: Mapping[str, str] | None = None, added_by: str = "kanban-sync") -> SyncResult:
    """Backfill the memories of runs that ended without a hook (a SIGTERMed worker, `hermes kanban complete`).

    Idempotent; with nothing missed it is one SQL query and opens no store. `store`: an open store to use, else one
    is opened (and closed) only when there is something to record.
    """
    slug, db = resolve_board(location, board, env)
    result = SyncResult(board=slug, db=str(db))
    conn = open_board(db)
    path = _state_path(location, slug, db)
    try:
        with _state_lock(path):
            state = _load_state(path)
            if max_run_id(conn) < state.cursor:  # the board was re-created: start over (ids make that safe)
                state = SyncState()
            done = set(state.recorded)
            pending = [r for r in ended_runs_after(conn, slug, state.cursor) if r.run_id not in done]
            new_cursor = settled_cursor(conn, state.cursor)
            result.scanned = len(pending)
            if pending:
                own = store is None
                store = store if store is not None else _open_store(location, config)
                try:
                    decisions = record_runs(store, pending, added_by)
                finally:
                    if own:
                        store.close()
                result.recorded = sum(d.action == "new" for d in decisions)
                result.rejected = sum(d.action == "rejected" for d in decisions)
                result.held = sum(d.action == "held" for d in decisions)
                result.already = len(pending) - result.recorded - result.rejected - result.held
                for d in decisions:
                    if d.action == "rejected":
                        log_event(location, "kanban_sync_rejected", board=slug, text=d.text, reason=d.reason)
            state = SyncState(new_cursor, list(done) + [r.run_id for r in pending])
            _save_state(path, state)
            result.cursor = new_cursor
    finally:
        conn.close()
    if result.scanned:
        log_event(location, "kanban_sync", **result.to_json())
    return result


def _open_store(location: Location, config: Config):
    from ..core.store import open_store

    return open_store(location, config)


def record_task_run(location: Location, config: Config, *, task_id: str, run_id: int | None = None,
                    board: str | None = None, outcome: str = "completed", summary: str | None = None,
                    assignee: str | None = None, store=None, env: Mapping[str, str] | None = None,
                    added_by: str = "kanban-hook"):
    """Store the memory of one ended run (what `kanban_task_completed` / `kanban_task_blocked` report).

    The run is read back from the board, so the hook and `kanban-sync` write the same memory; when the board cannot
    be read the hook's own fields are used. Returns the write path's Decision (None: nothing to store).
    """
    env = os.environ if env is None else env
    slug, db = resolve_board(location, board, env)
    run: TaskRun | None = None
    try:
        conn = open_board(db)
        try:
            run = read_run(conn, slug, run_id) if run_id else latest_ended_run(conn, slug, task_id)
            if run is not None and run.task_id != task_id:
                run = None
        finally:
            conn.close()
    except BoardError as exc:
        log_event(location, "kanban_board_unreadable", board=slug, db=str(db), error=str(exc))
    if run is None:
        if not run_id:
            log_event(location, "kanban_run_unknown", board=slug, task_id=task_id)
            return None
        run = TaskRun(board=slug, task_id=task_id, run_id=int(run_id), title=task_id,
                      assignee=assignee or location.profile, profile=assignee or location.profile,
                      outcome=outcome, summary=summary or "", started_at=0, ended_at=int(time.time()))
    own = store is None
    store = store if store is not None else _open_store(location, config)
    try:
        decisions = record_runs(store, [run], added_by)
    finally:
        if own:
            store.close()
    try:
        _mark_recorded(location, slug, db, [run.run_id])
    except Exception as exc:  # the cursor is an optimisation: the next sync checks the store instead
        log_event(location, "kanban_sync_state_failed", error=f"{exc.__class__.__name__}: {exc}")
    return decisions[0] if decisions else None
