"""Past-task recall for a kanban card: the block a worker's first turn gets.

`recall_for_task` finds the past tasks most similar to a card (relevance across all history, not Hermes' "Recent
work by @assignee", which lists the assignee's last five runs) and the instruction memories worth knowing, within
the recall budget, as one labelled block. `worker_first_turn` backfills missed runs first (`kanban_sync`).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ..config import Config
from ..errors import AutomemError, UsageError
from ..log import log_event
from ..paths import Location
from ..text import (  # recalled context is never extracted again
    RECALL_END,
    RECALL_MARKER,
    neutralise_fences,
    recall_block,
)
from .kanban_board import hermes_recent_work, open_board, parent_task_ids, read_card, resolve_board
from .kanban_record import ROOM, WING, _cut, _open_store, kanban_sync

QUERY_BODY_MAX_CHARS = 1000
_TASK_ID = re.compile(r"^t_[0-9a-f]{8,}$")


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
            shown = (hermes_recent_work(conn, card.assignee or location.profile, task_id)
                     + parent_task_ids(conn, task_id))
        finally:
            conn.close()
        return recall_for_task(store, config, card.title, card.body, location.profile, task_id=task_id,
                               shown_elsewhere=shown)
    finally:
        if own:
            store.close()
