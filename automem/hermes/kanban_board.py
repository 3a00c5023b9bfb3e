"""The kanban board DB, read only: where a board is and what its cards and runs say.

The board DB is only ever read (`mode=ro`). No Hermes module is imported: paths follow Hermes 0.19's rules
(`hermes_cli/kanban_db.py`): `HERMES_KANBAN_DB` pins the DB; board `default` is `<root>/kanban.db`, board `<slug>` is
`<root>/kanban/boards/<slug>/kanban.db`; `<root>` is `HERMES_KANBAN_HOME` when set.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ..errors import AutomemError, UsageError
from ..paths import Location, sqlite_ro_uri

DEFAULT_BOARD = "default"
RECORDED_OUTCOMES = ("completed", "blocked")  # the runs a hook reports; crashed or reclaimed runs have no summary
_SLUG = re.compile(r"^[a-z0-9][a-z0-9\-_]{0,63}$")


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
    open_row = conn.execute("SELECT MIN(id) FROM task_runs WHERE id > ? AND ended_at IS NULL",
                            (int(cursor),)).fetchone()
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
