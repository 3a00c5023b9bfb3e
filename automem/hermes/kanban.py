"""Kanban workers remember: one episodic memory per task run, a backfill from the board DB, past-task recall.

- A run that ended (completed or blocked) becomes one memory in room `kanban`: "<title> — <summary>" (or
  "— blocked: <reason>"), wing `episodic`, the worker's profile, `task_id` and the `kanban_*` metadata below. Its id
  is deterministic from (board, task, run), so the hook and `kanban-sync` can both record a run and it is stored once,
  and two runs of one task are two memories (the write path treats room `kanban` as event records).
- `kanban_sync` reads the board's `task_runs` past a cursor kept in `<root>/automem/cache/`, so the pass a worker
  makes at start costs one SQL query and no store access when nothing was missed.
- `recall_for_task` finds the past tasks most similar to a card (relevance across all history, not Hermes' "Recent
  work by @assignee", which lists the assignee's last five runs) and the instruction memories worth knowing, within
  the recall budget, as one labelled block.

The board DB is only ever read (`mode=ro`). No Hermes module is imported: paths follow Hermes 0.19's rules
(`hermes_cli/kanban_db.py`): `HERMES_KANBAN_DB` pins the DB; board `default` is `<root>/kanban.db`, board `<slug>` is
`<root>/kanban/boards/<slug>/kanban.db`; `<root>` is `HERMES_KANBAN_HOME` when set.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ..config import Config
from ..errors import AutomemError, UsageError
from ..log import log_event
from ..core.memory import memory_id
from ..paths import PACKAGE_PARENT, Location, ensure_private_dir, sqlite_ro_uri, write_private
from ..text import neutralise_fences, normalise, redact_secrets

from ..text import RECALL_END, RECALL_MARKER, recall_block  # recalled context is never extracted again

DEFAULT_BOARD = "default"
ROOM = "kanban"
WING = "episodic"
RECORDED_OUTCOMES = ("completed", "blocked")  # the runs a hook reports; crashed or reclaimed runs have no summary
TEXT_MAX_CHARS = 200  # the write path's limit
TITLE_MAX_CHARS = 80
SUMMARY_META_MAX_CHARS = 2000
QUERY_BODY_MAX_CHARS = 1000
_SLUG = re.compile(r"^[a-z0-9][a-z0-9\-_]{0,63}$")
_TASK_ID = re.compile(r"^t_[0-9a-f]{8,}$")


class BoardError(AutomemError):
    """The board DB cannot be read."""


class BoardNotFound(BoardError, UsageError):
    """No board DB where the user pointed (exit 2)."""


# -- where the board is ---------------------------------------------------------------------------------------------
def normalise_board(board: str | None) -> str | None:
    """A board slug as Hermes spells it (lower case), None for empty; UsageError for a slug Hermes would refuse."""
    if board is None or not str(board).strip():
        return None
    slug = str(board).strip().lower()
    if not _SLUG.match(slug):
        raise UsageError(f"invalid board name {board!r}: use 1-64 lower-case letters, digits, '-' or '_'")
    return slug


def kanban_home(location: Location, env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    override = (env.get("HERMES_KANBAN_HOME") or "").strip()
    return Path(override).expanduser() if override else location.root


def board_db_for_slug(home: Path, slug: str) -> Path:
    return home / "kanban.db" if slug == DEFAULT_BOARD else home / "kanban" / "boards" / slug / "kanban.db"


def current_board(location: Location, env: Mapping[str, str] | None = None) -> str:
    """The active board: $HERMES_KANBAN_BOARD, else `<root>/kanban/current` when that board exists, else default."""
    env = os.environ if env is None else env
    home = kanban_home(location, env)
    for raw in ((env.get("HERMES_KANBAN_BOARD") or ""), _read_text(home / "kanban" / "current")):
        try:
            slug = normalise_board(raw)
        except UsageError:
            continue
        if slug and (slug == DEFAULT_BOARD or (home / "kanban" / "boards" / slug).is_dir()):
            return slug
    return DEFAULT_BOARD


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def resolve_board(location: Location, board: str | None = None,
                  env: Mapping[str, str] | None = None) -> tuple[str, Path]:
    """(slug, DB path) of `board` (None: the active one). $HERMES_KANBAN_DB pins the DB of the active board."""
    env = os.environ if env is None else env
    slug = normalise_board(board)
    pinned = (env.get("HERMES_KANBAN_DB") or "").strip()
    active = current_board(location, env)
    if slug is None:
        slug = active
    if pinned and slug == active:
        return slug, Path(pinned).expanduser()
    return slug, board_db_for_slug(kanban_home(location, env), slug)


def list_boards(location: Location, env: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    """Every board with a DB on disk: default first, then the named boards by name."""
    env = os.environ if env is None else env
    out: list[tuple[str, Path]] = []
    seen: set[Path] = set()
    candidates = [resolve_board(location, None, env)] if (env.get("HERMES_KANBAN_DB") or "").strip() else []
    home = kanban_home(location, env)
    candidates.append((DEFAULT_BOARD, board_db_for_slug(home, DEFAULT_BOARD)))
    boards_dir = home / "kanban" / "boards"
    if boards_dir.is_dir():
        for d in sorted(boards_dir.iterdir()):
            if _SLUG.match(d.name) and d.name != DEFAULT_BOARD:
                candidates.append((d.name, d / "kanban.db"))
    for slug, path in candidates:
        if path.is_file() and path.resolve() not in seen:
            seen.add(path.resolve())
            out.append((slug, path))
    return out


# -- reading the board (read only) ----------------------------------------------------------------------------------
def open_board(path: Path) -> sqlite3.Connection:
    """A read-only connection to a board DB; BoardError with what to do when it is missing or unreadable."""
    if not path.is_file():
        raise BoardNotFound(f"no kanban board at {path}; create one with `hermes kanban init` or pass --board")
    try:
        conn = sqlite3.connect(sqlite_ro_uri(path), uri=True, timeout=5.0)
        conn.row_factory = sqlite3.Row
        conn.execute("SELECT 1 FROM task_runs LIMIT 1")
    except sqlite3.Error as exc:
        raise BoardError(f"cannot read the kanban board {path}: {exc}") from None
    return conn


@dataclass
class Card:
    id: str
    title: str
    body: str
    assignee: str
    status: str


@dataclass
class TaskRun:
    """One ended attempt at a task, as the board records it."""

    board: str
    task_id: str
    run_id: int
    title: str
    assignee: str
    profile: str
    outcome: str
    summary: str
    started_at: int
    ended_at: int
    worker_session_id: str = ""


def read_card(conn: sqlite3.Connection, task_id: str) -> Card | None:
    row = conn.execute("SELECT id, title, body, assignee, status FROM tasks WHERE id = ?", (task_id,)).fetchone()
    if row is None:
        return None
    return Card(row["id"], row["title"] or "", row["body"] or "", row["assignee"] or "", row["status"] or "")


_RUN_SQL = """
SELECT r.id, r.task_id, r.profile, r.outcome, r.summary, r.metadata, r.started_at, r.ended_at,
       t.title, t.assignee, t.result
  FROM task_runs r LEFT JOIN tasks t ON t.id = r.task_id
"""


def _run_of(board: str, row: sqlite3.Row) -> TaskRun:
    session = ""
    try:
        meta = json.loads(row["metadata"]) if row["metadata"] else {}
        if isinstance(meta, dict):
            session = str(meta.get("worker_session_id") or "")
    except ValueError:
        pass
    summary = row["summary"] if row["summary"] is not None else (row["result"] or "")
    return TaskRun(board=board, task_id=row["task_id"], run_id=int(row["id"]), title=row["title"] or row["task_id"],
                   assignee=row["assignee"] or row["profile"] or "", profile=row["profile"] or row["assignee"] or "",
                   outcome=row["outcome"] or "", summary=summary or "", started_at=int(row["started_at"] or 0),
                   ended_at=int(row["ended_at"] or 0), worker_session_id=session)


def read_run(conn: sqlite3.Connection, board: str, run_id: int) -> TaskRun | None:
    row = conn.execute(_RUN_SQL + " WHERE r.id = ?", (int(run_id),)).fetchone()
    return _run_of(board, row) if row is not None else None


def latest_ended_run(conn: sqlite3.Connection, board: str, task_id: str) -> TaskRun | None:
    row = conn.execute(_RUN_SQL + " WHERE r.task_id = ? AND r.ended_at IS NOT NULL ORDER BY r.id DESC LIMIT 1",
                       (task_id,)).fetchone()
    return _run_of(board, row) if row is not None else None


def ended_runs_after(conn: sqlite3.Connection, board: str, cursor: int) -> list[TaskRun]:
    """Runs with id > cursor that ended completed or blocked, oldest first."""
    marks = ",".join("?" for _ in RECORDED_OUTCOMES)
    rows = conn.execute(_RUN_SQL + f" WHERE r.id > ? AND r.ended_at IS NOT NULL AND r.outcome IN ({marks})"
                                   " ORDER BY r.id", (int(cursor), *RECORDED_OUTCOMES)).fetchall()
    return [_run_of(board, r) for r in rows]


def settled_cursor(conn: sqlite3.Connection, cursor: int) -> int:
    """The highest run id up to which every run has ended: runs end out of order, so an open run holds it back."""
    open_row = conn.execute("SELECT MIN(id) FROM task_runs WHERE id > ? AND ended_at IS NULL", (int(cursor),)).fetchone()
    if open_row and open_row[0] is not None:
        return int(open_row[0]) - 1
    top = conn.execute("SELECT MAX(id) FROM task_runs").fetchone()
    return max(int(cursor), int(top[0] or 0)) if top else int(cursor)


def max_run_id(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT MAX(id) FROM task_runs").fetchone()
    return int(row[0] or 0) if row else 0


def hermes_recent_work(conn: sqlite3.Connection, assignee: str, task_id: str, limit: int = 5) -> list[str]:
    """Task ids Hermes itself lists under "Recent work by @assignee" in the worker context (same query as
    `build_worker_context` of hermes 0.19: the assignee's last five completed runs on other tasks)."""
    if not assignee:
        return []
    rows = conn.execute("SELECT r.task_id FROM task_runs r JOIN tasks t ON r.task_id = t.id "
                        "WHERE r.profile = ? AND r.task_id != ? AND r.outcome = 'completed' "
                        "ORDER BY r.ended_at DESC LIMIT ?", (assignee, task_id, int(limit))).fetchall()
    return [r[0] for r in rows]


def parent_task_ids(conn: sqlite3.Connection, task_id: str) -> list[str]:
    """Parents, whose handoffs Hermes already puts in full into the worker context."""
    return [r[0] for r in conn.execute("SELECT parent_id FROM task_links WHERE child_id = ?", (task_id,)).fetchall()]


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
    return Candidate(text=task_memory_text(run), wing=WING, profile=run.profile or run.assignee or DEFAULT_BOARD,
                     room=ROOM, added_by=added_by, session_id=run.worker_session_id, task_id=run.task_id,
                     extra=extra, id=task_memory_id(run.board, run.task_id, run.run_id))


def record_runs(store, runs: Sequence[TaskRun], added_by: str) -> list:
    """Store the runs not stored yet (whatever their status: a forgotten one stays forgotten). Decisions of the new."""
    from ..core.write_path import remember

    if not runs:
        return []
    ids = [task_memory_id(r.board, r.task_id, r.run_id) for r in runs]
    cands = [task_candidate(r, added_by) for r in runs]
    known = {m.id for m in store.get(ids)}
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
                result.already = len(pending) - result.recorded - result.rejected
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


# -- past-task recall -----------------------------------------------------------------------------------------------
@dataclass
class PastTask:
    task_id: str
    board: str
    title: str
    assignee: str
    outcome: str
    summary: str
    ended_at: int
    distance: float
    memory_id: str


@dataclass
class Lesson:
    text: str
    profile: str
    task_id: str
    distance: float
    memory_id: str


def _past_task(mem, distance: float) -> PastTask:
    x = mem.extra
    text_summary = mem.text.split(" — ", 1)[1] if " — " in mem.text else mem.text
    return PastTask(task_id=mem.task_id, board=str(x.get("kanban_board", "")),
                    title=str(x.get("kanban_title") or mem.text.split(" — ", 1)[0]),
                    assignee=str(x.get("kanban_assignee") or mem.profile), outcome=str(x.get("kanban_outcome", "")),
                    summary=str(x.get("kanban_summary") or text_summary),
                    ended_at=int(x.get("kanban_ended_at") or mem.created_at or 0), distance=distance,
                    memory_id=mem.id)


def group_by_task(hits: Iterable[tuple[PastTask, float]]) -> list[PastTask]:
    """One entry per (board, task), ranked by its best distance, showing its latest run."""
    best: dict[tuple[str, str], float] = {}
    latest: dict[tuple[str, str], PastTask] = {}
    for task, dist in hits:
        key = (task.board, task.task_id)
        best[key] = min(dist, best.get(key, dist))
        if key not in latest or task.ended_at > latest[key].ended_at:
            latest[key] = task
    ranked = sorted(best, key=lambda k: (best[k], -latest[k].ended_at))
    out = []
    for key in ranked:
        t = latest[key]
        out.append(PastTask(**{**t.__dict__, "distance": best[key]}))
    return out


def _date(ts: int) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(ts)) if ts else "undated"


def task_line(t: PastTask, max_chars: int) -> str:
    outcome = "blocked" if t.outcome == "blocked" else "done" if t.outcome == "completed" else (t.outcome or "ended")
    head = f"- {t.task_id} ({_date(t.ended_at)}, @{t.assignee}, {outcome}) {t.title}: "
    summary = neutralise_fences(" ".join(t.summary.split())) or "(no summary)"
    return head + _cut(summary, max(20, max_chars - len(head)))


def lesson_line(lesson: Lesson, profile: str) -> str:
    source = f" (learned by @{lesson.profile})" if lesson.profile != profile else ""
    return f"- {neutralise_fences(lesson.text)}{source}"


HEADER = ("## Relevant past kanban tasks (automem)\n"
          "Earlier board tasks most similar to this card, from all history and every profile; reuse what worked.")
LESSONS_HEADER = "## Lessons (instructions learned on earlier work; follow them)"


def render_block(tasks: Sequence[PastTask], lessons: Sequence[Lesson], profile: str, max_chars: int,
                 max_items: int, elsewhere: Sequence[str] = ()) -> str:
    """The block, whole within `max_chars` and `max_items`. Picks alternate by rank (task 1, lesson 1, task 2, ...)
    so neither kind crowds out the other, then prints tasks first and lessons after. "" when nothing qualifies."""
    if not tasks and not lessons and not elsewhere:
        return ""
    line_cap = max(120, max_chars // 3)
    t_lines = [task_line(t, line_cap) for t in tasks]
    l_lines = [lesson_line(les, profile) for les in lessons]
    note = (f"Also relevant, already in kanban_show's \"Recent work\" or parent handoffs: {', '.join(elsewhere)}"
            if elsewhere else "")
    fixed = len(RECALL_MARKER) + 1 + len(RECALL_END) + (len(note) + 1 if note else 0)
    order: list[tuple[str, str]] = []
    for i in range(max(len(t_lines), len(l_lines))):
        if i < len(t_lines):
            order.append(("task", t_lines[i]))
        if i < len(l_lines):
            order.append(("lesson", l_lines[i]))
    chosen: dict[str, list[str]] = {"task": [], "lesson": []}
    used = fixed
    for kind, line in order:
        if len(chosen["task"]) + len(chosen["lesson"]) >= max_items:
            break
        header_cost = 0 if chosen[kind] else len(HEADER if kind == "task" else LESSONS_HEADER) + 1
        cost = header_cost + len(line) + 1
        if used + cost > max_chars:
            continue
        chosen[kind].append(line)
        used += cost
    if not chosen["task"] and not chosen["lesson"] and not note:
        return ""
    out: list[str] = []
    if chosen["task"]:
        out += [HEADER, *chosen["task"]]
    if note:
        out.append(note)
    if chosen["lesson"]:
        out += [LESSONS_HEADER, *chosen["lesson"]]
    return recall_block("\n".join(out))


def task_query(title: str, body: str) -> str:
    return f"{title.strip()}\n\n{body.strip()[:QUERY_BODY_MAX_CHARS]}".strip()


def recall_for_task(store, config: Config, title: str, body: str, profile: str, *, task_id: str | None = None,
                    shown_elsewhere: Iterable[str] = ()) -> str:
    """The past-task block for a card: the most similar past task memories `profile` may see
    (`kanban_recall_scope`: own profile or all), then the instruction memories learned on those tasks and the ones
    most similar to the card; the current task left out; within `recall_max_chars` / `recall_max_items`.

    `shown_elsewhere`: task ids the worker already sees in Hermes' own context; named, not repeated.
    """
    query = task_query(title, body)
    if not query:
        return ""
    scope_profile = profile if config.kanban_recall_scope == "own" else None
    where: dict[str, Any] = {"room": ROOM}
    if task_id:
        where = {"$and": [where, {"task_id": {"$ne": task_id}}]}
    k = max(1, config.kanban_recall_max_tasks) * 4  # several runs per task, and the ones shown elsewhere
    hits = store.recall(query, k=k, profile=scope_profile, wing=WING, where=where)  # the one ranking
    hits = [(_past_task(m, d), d) for m, d in hits if d <= config.kanban_recall_max_distance]
    ranked = group_by_task(hits)
    skip = set(shown_elsewhere)
    elsewhere = [t.task_id for t in ranked if t.task_id in skip]
    tasks = [t for t in ranked if t.task_id not in skip][: config.kanban_recall_max_tasks]

    lessons: list[Lesson] = []
    seen: set[str] = set()
    related = [t.task_id for t in ranked]
    if related:  # instructions learned while doing the relevant past tasks come first
        for m in store.list(profile=profile, wing="instruction", where={"task_id": {"$in": related}}):
            if m.id not in seen:
                seen.add(m.id)
                lessons.append(Lesson(m.text, m.profile, m.task_id, 0.0, m.id))
    # Instructions are rules, not topics: "dates must be RFC3339" is far from "write a Kanban article" in meaning yet
    # binds it, so the most similar ones are taken without a distance cut.
    for m, d in store.recall(query, k=max(1, config.kanban_recall_max_lessons), profile=profile,
                             wing="instruction"):
        if m.id not in seen:
            seen.add(m.id)
            lessons.append(Lesson(m.text, m.profile, m.task_id, d, m.id))
    lessons = lessons[: config.kanban_recall_max_lessons]
    return render_block(tasks, lessons, profile, config.recall_max_chars, config.recall_max_items, elsewhere)


def recall_for_card(location: Location, config: Config, task: str, *, board: str | None = None, store=None,
                    env: Mapping[str, str] | None = None) -> str:
    """What a worker of `location.profile` would be shown for `task`: a task id on the board, or the card's text
    (first line the title, the rest the body)."""
    task = task.strip()
    if not task:
        raise UsageError("give the task: a task id (t_...) or the card's text")
    title, body, task_id, shown = task, "", None, []
    if _TASK_ID.match(task):
        slug, db = resolve_board(location, board, env)
        conn = open_board(db)
        try:
            card = read_card(conn, task)
            if card is None:
                raise UsageError(f"no task {task} on board {slug} ({db})")
            title, body, task_id = card.title, card.body, card.id
            shown = hermes_recent_work(conn, location.profile, card.id) + parent_task_ids(conn, card.id)
        finally:
            conn.close()
    else:
        title, _, body = task.partition("\n")
    own = store is None
    store = store if store is not None else _open_store(location, config)
    try:
        return recall_for_task(store, config, title, body, location.profile, task_id=task_id, shown_elsewhere=shown)
    finally:
        if own:
            store.close()


def worker_first_turn(location: Location, config: Config, env: Mapping[str, str] | None = None,
                      store=None) -> str:
    """In a kanban worker ($HERMES_KANBAN_TASK set): backfill missed runs, then the past-task block for its card."""
    env = os.environ if env is None else env
    task_id = (env.get("HERMES_KANBAN_TASK") or "").strip()
    if not task_id:
        return ""
    board = (env.get("HERMES_KANBAN_BOARD") or "").strip() or None
    own = store is None
    store = store if store is not None else _open_store(location, config)
    try:
        try:
            kanban_sync(location, config, board, store=store, env=env)
        except AutomemError as exc:  # a failed backfill must not cost the worker its recall
            log_event(location, "kanban_sync_failed", error=str(exc))
        slug, db = resolve_board(location, board, env)
        conn = open_board(db)
        try:
            card = read_card(conn, task_id)
            if card is None:
                log_event(location, "kanban_card_missing", board=slug, task_id=task_id)
                return ""
            shown = hermes_recent_work(conn, card.assignee or location.profile, task_id) + parent_task_ids(conn, task_id)
        finally:
            conn.close()
        return recall_for_task(store, config, card.title, card.body, location.profile, task_id=task_id,
                               shown_elsewhere=shown)
    finally:
        if own:
            store.close()


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
    block = _worker_recall.block() if _worker_recall is not None else ""
    return {"context": block} if block else None


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
