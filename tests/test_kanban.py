"""Kanban task memories, the board backfill and past-task recall, against real boards and a real store.

Boards are made by Hermes' own `hermes_cli.kanban_db` (the schema and the state transitions of hermes-agent 0.19:
claim, complete, block, unblock), in the test's temporary root; automem only ever reads them.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from automem import cli
from automem.config import Config
from automem.core.store import Store
from automem.core.write_path import Candidate, remember
from automem.errors import UsageError
from automem.hermes import kanban, kanban_board, kanban_recall, kanban_record
from automem.hermes.kanban_board import TaskRun
from automem.hermes.kanban_recall import Lesson, PastTask
from automem.log import read_events
from automem.paths import Location
from automem.text import RECALL_END, RECALL_MARKER, normalise

kb = pytest.importorskip("hermes_cli.kanban_db")


# -- fixtures -------------------------------------------------------------------------------------------------------
class Board:
    """A real Hermes board under the test root, driven through hermes_cli.kanban_db."""

    def __init__(self, root, slug: str = "default"):
        self.slug = slug
        self.path = kanban_board.board_db_for_slug(root, slug)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        kb.init_db(self.path)
        self.conn = kb.connect(self.path)

    def create(self, title: str, assignee: str = "blog-writer", body: str = "") -> str:
        return kb.create_task(self.conn, title=title, body=body, assignee=assignee)

    def claim(self, task_id: str) -> int:
        assert kb.claim_task(self.conn, task_id) is not None
        return int(self.conn.execute("SELECT current_run_id FROM tasks WHERE id=?", (task_id,)).fetchone()[0])

    def complete(self, task_id: str, summary: str) -> None:
        assert kb.complete_task(self.conn, task_id, summary=summary)

    def block(self, task_id: str, reason: str) -> None:
        assert kb.block_task(self.conn, task_id, reason=reason, kind="needs_input")

    def run_ids(self, task_id: str) -> list[int]:
        return [r[0] for r in self.conn.execute("SELECT id FROM task_runs WHERE task_id=? ORDER BY id", (task_id,))]

    def done(self, title: str, summary: str, assignee: str = "blog-writer", body: str = "") -> tuple[str, int]:
        tid = self.create(title, assignee, body)
        run = self.claim(tid)
        self.complete(tid, summary)
        return tid, run


@pytest.fixture
def board(root, monkeypatch):
    # hermes_cli.kanban_db resolves its root from the environment; automem gets it from the Location.
    monkeypatch.setenv("HERMES_HOME", str(root))
    for name in ("HERMES_KANBAN_DB", "HERMES_KANBAN_BOARD", "HERMES_KANBAN_HOME", "HERMES_KANBAN_TASK"):
        monkeypatch.delenv(name, raising=False)
    b = Board(root)
    yield b
    b.conn.close()


def stored_task_memories(store: Store, task_id: str | None = None) -> list:
    where = {"room": "kanban"} if task_id is None else {"$and": [{"room": "kanban"}, {"task_id": task_id}]}
    return list(store.iter_records(where))


def no_store(*_a, **_k):
    raise AssertionError("the store was opened although nothing needed recording")


# -- the memory of a run (plain functions) --------------------------------------------------------------------------
def run_of(**kw) -> TaskRun:
    base = dict(board="default", task_id="t_0000aaaa", run_id=1, title="写一篇 Kanban 入门文章", assignee="blog-writer",
                profile="blog-writer", outcome="completed", summary="写完了入门文章，介绍看板与 WIP 限制。",
                started_at=100, ended_at=200)
    base.update(kw)
    return TaskRun(**base)


def test_memory_text_is_title_and_summary_or_block_reason():
    assert kanban_record.task_memory_text(run_of()) == normalise(
        "写一篇 Kanban 入门文章 — 写完了入门文章，介绍看板与 WIP 限制。")
    assert kanban_record.task_memory_text(run_of(outcome="blocked", summary="需要确认目标字数")) == \
        "写一篇 Kanban 入门文章 — blocked: 需要确认目标字数"
    assert kanban_record.task_memory_text(run_of(summary="")) == "写一篇 Kanban 入门文章 — completed (no summary)"


def test_memory_text_fits_the_write_path_and_drops_secrets():
    text = kanban_record.task_memory_text(run_of(title="T" * 300, summary="word " * 200))
    assert len(text) == 200 and text.endswith("…") and text.startswith("T" * 79 + "… — ")
    text = kanban_record.task_memory_text(run_of(summary="deployed with key sk-abcdefghijklmnopqrstuvwx1234"))
    assert "sk-abc" not in text and "(secret removed)" in text
    cand = kanban_record.task_candidate(run_of(summary="password: hunter22 was used"))
    assert "hunter22" not in cand.text and "hunter22" not in json.dumps(cand.extra)


def test_memory_id_is_one_per_board_task_and_run():
    ids = {kanban_record.task_memory_id(b, t, r) for b in ("default", "blog") for t in ("t_1", "t_2") for r in (1, 2)}
    assert len(ids) == 8
    assert kanban_record.task_memory_id("default", "t_1", 1) == kanban_record.task_memory_id("default", "t_1", 1)
    # the id does not depend on the wording, so the hook and the backfill agree even if the summary differs
    a = kanban_record.task_candidate(run_of(summary="one"))
    b = kanban_record.task_candidate(run_of(summary="another"), added_by="kanban-sync")
    assert a.id == b.id and a.room == "kanban" and a.wing == "episodic" and a.task_id == "t_0000aaaa"
    assert a.extra["kanban_run_id"] == 1 and a.extra["kanban_board"] == "default"


# -- where the board is ---------------------------------------------------------------------------------------------
def test_board_paths_follow_hermes(root):
    loc = Location(root=root, profile="editor")
    assert kanban_board.resolve_board(loc, None, env={}) == ("default", root / "kanban.db")
    assert kanban_board.resolve_board(loc, "Blog", env={}) == ("blog",
                                                               root / "kanban" / "boards" / "blog" / "kanban.db")
    pinned = {"HERMES_KANBAN_DB": "/x/pinned.db", "HERMES_KANBAN_BOARD": "default"}
    assert kanban_board.resolve_board(loc, None, env=pinned) == ("default", root.__class__("/x/pinned.db"))
    # an explicit other board is not the pinned one
    assert kanban_board.resolve_board(loc, "blog", env=pinned)[1] == root / "kanban" / "boards" / "blog" / "kanban.db"
    assert kanban_board.resolve_board(loc, None, env={"HERMES_KANBAN_HOME": "/khome"})[1] == \
        root.__class__("/khome/kanban.db")
    with pytest.raises(UsageError):
        kanban_board.resolve_board(loc, "../etc", env={})
    # `hermes kanban boards switch` writes <root>/kanban/current; honoured only while that board exists
    (root / "kanban").mkdir()
    (root / "kanban" / "current").write_text("blog\n")
    assert kanban_board.current_board(loc, env={}) == "default"
    (root / "kanban" / "boards" / "blog").mkdir(parents=True)
    assert kanban_board.current_board(loc, env={}) == "blog"
    assert kanban_board.current_board(loc, env={"HERMES_KANBAN_BOARD": "default"}) == "default"


def test_list_boards_finds_default_and_named_boards(board, root):
    other = Board(root, "blog")
    try:
        loc = Location(root=root, profile="default")
        assert [s for s, _ in kanban_board.list_boards(loc, env={})] == ["default", "blog"]
    finally:
        other.conn.close()


def test_missing_board_is_a_usage_error(root, location):
    with pytest.raises(UsageError, match="hermes kanban init"):
        kanban_record.kanban_sync(location, Config(), None, env={})


# -- reading the board ----------------------------------------------------------------------------------------------
def test_reads_cards_and_ended_runs_read_only(board, root):
    tid, run = board.done("写一篇 Kanban 入门文章", "写完了", body="面向新手")
    conn = kanban_board.open_board(board.path)
    try:
        card = kanban_board.read_card(conn, tid)
        assert (card.title, card.body, card.assignee, card.status) == \
            ("写一篇 Kanban 入门文章", "面向新手", "blog-writer", "done")
        r = kanban_board.read_run(conn, "default", run)
        assert (r.task_id, r.outcome, r.summary, r.profile) == (tid, "completed", "写完了", "blog-writer")
        assert r.ended_at >= r.started_at > 0
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("DELETE FROM tasks")
    finally:
        conn.close()


def test_cursor_waits_for_runs_that_are_still_open(board):
    slow = board.create("slow task")
    slow_run = board.claim(slow)
    fast, fast_run = board.done("fast task", "quick")
    conn = kanban_board.open_board(board.path)
    try:
        assert [r.run_id for r in kanban_board.ended_runs_after(conn, "default", 0)] == [fast_run]
        assert kanban_board.settled_cursor(conn, 0) == slow_run - 1
    finally:
        conn.close()
    board.complete(slow, "finally")
    conn = kanban_board.open_board(board.path)
    try:
        assert kanban_board.settled_cursor(conn, 0) == fast_run
    finally:
        conn.close()


# -- recording runs -------------------------------------------------------------------------------------------------
def test_hook_record_is_idempotent_and_carries_the_task(board, location, store):
    tid, run = board.done("写一篇 Kanban 入门文章", "写完了入门文章，介绍看板与 WIP 限制。")
    loc = Location(root=location.root, profile="blog-writer")
    d = kanban_record.record_task_run(loc, store.config, task_id=tid, run_id=run, board="default", store=store, env={})
    assert d.action == "new"
    d2 = kanban_record.record_task_run(loc, store.config, task_id=tid, run_id=run, board="default", store=store, env={})
    assert d2 is None  # already stored: not even sent through the write path again
    [m] = stored_task_memories(store, tid)
    assert m.text == normalise("写一篇 Kanban 入门文章 — 写完了入门文章，介绍看板与 WIP 限制。")
    assert (m.wing, m.room, m.profile, m.task_id, m.status) == ("episodic", "kanban", "blog-writer", tid, "active")
    assert m.extra["kanban_outcome"] == "completed" and m.extra["kanban_run_id"] == run
    assert m.extra["kanban_assignee"] == "blog-writer" and m.extra["kanban_ended_at"] > 0
    # the write path itself also says duplicate for the same run
    [again] = remember(store, [kanban_record.task_candidate(TaskRun(**{**vars(run_of()), "task_id": tid,
                                                                       "run_id": run}))])
    assert again.action == "duplicate" and again.id == m.id
    assert len(stored_task_memories(store)) == 1


def test_two_runs_of_one_task_are_two_memories(board, location, store):
    tid = board.create("写一篇 Kanban 入门文章")
    first = board.claim(tid)
    board.block(tid, "需要确认目标字数")
    assert kb.unblock_task(board.conn, tid)
    second = board.claim(tid)
    board.complete(tid, "写完了，按 1500 字")
    for run in (first, second):
        kanban_record.record_task_run(location, store.config, task_id=tid, run_id=run, store=store, env={})
    mems = sorted(stored_task_memories(store, tid), key=lambda m: m.extra["kanban_run_id"])
    assert [m.extra["kanban_outcome"] for m in mems] == ["blocked", "completed"]
    assert [m.status for m in mems] == ["active", "active"]
    assert mems[0].text.endswith("blocked: 需要确认目标字数")


def test_similar_tasks_stay_separate_and_extraction_never_supersedes_a_task(board, location, store):
    a, ra = board.done("写一篇 Kanban 入门文章", "写完了文章")
    b, rb = board.done("写一篇 Kanban 入门文章", "写完了文章")  # same title and summary: another task
    kanban_record.kanban_sync(location, store.config, store=store, env={})
    assert len(stored_task_memories(store)) == 2
    # an episodic fact extracted from the worker's chat, worded like the task memory, is judged on its own
    [d] = remember(store, [Candidate("写一篇 Kanban 入门文章 — 写完了文章。", wing="episodic", profile="blog-writer",
                                     room="auto-extract")])
    assert d.action == "new"
    assert all(m.status == "active" for m in stored_task_memories(store))


# -- the backfill ---------------------------------------------------------------------------------------------------
def test_sync_backfills_cli_completion_once(board, location, store, monkeypatch):
    tid = board.create("整理 Kanban 术语表")
    board.claim(tid)  # the worker died here (SIGTERM): no hook ever fired
    board.complete(tid, "manual: 术语表整理完毕")  # `hermes kanban complete` from the CLI
    res = kanban_record.kanban_sync(location, store.config, env={})
    assert (res.scanned, res.recorded, res.already) == (1, 1, 0)
    [m] = stored_task_memories(store, tid)
    assert m.text == "整理 Kanban 术语表 — manual: 术语表整理完毕" and m.added_by == "kanban-sync"
    # a second pass reads one cursor and finds nothing: no store opened, nothing added
    monkeypatch.setattr(kanban_record, "_open_store", no_store)
    res = kanban_record.kanban_sync(location, store.config, env={})
    assert (res.scanned, res.recorded) == (0, 0)
    assert len(stored_task_memories(store, tid)) == 1


def test_sync_after_the_hook_adds_nothing_and_opens_no_store(board, location, store, monkeypatch):
    tid, run = board.done("hooked task", "recorded by the hook")
    kanban_record.record_task_run(location, store.config, task_id=tid, run_id=run, store=store, env={})
    monkeypatch.setattr(kanban_record, "_open_store", no_store)
    res = kanban_record.kanban_sync(location, store.config, env={})
    assert (res.scanned, res.recorded) == (0, 0)


def test_sync_picks_up_a_run_that_ended_after_a_later_one(board, location, store):
    slow = board.create("slow research task")
    board.claim(slow)
    board.done("fast task", "quick")
    assert kanban_record.kanban_sync(location, store.config, store=store, env={}).recorded == 1
    board.complete(slow, "research done")
    res = kanban_record.kanban_sync(location, store.config, store=store, env={})
    assert res.recorded == 1 and len(stored_task_memories(store, slow)) == 1


def test_sync_without_its_cursor_is_still_idempotent_and_keeps_forgotten_forgotten(board, location, store):
    tid, _ = board.done("forget me task", "something the user did not want kept")
    kanban_record.kanban_sync(location, store.config, store=store, env={})
    [m] = stored_task_memories(store, tid)
    store.forget([m.id])
    for f in location.cache_dir.glob("kanban-sync-*.json"):
        f.unlink()
    res = kanban_record.kanban_sync(location, store.config, store=store, env={})
    assert (res.scanned, res.recorded, res.already) == (1, 0, 1)  # known by id: not sent to the write path again
    assert stored_task_memories(store, tid) == [] and [t["id"] for t in store.tombstones()] == [m.id]


def test_sync_of_a_named_board(root, board, location, store):
    other = Board(root, "blog")
    try:
        tid = other.create("blog board task")
        other.claim(tid)
        other.complete(tid, "done on the blog board")
        assert kanban_record.kanban_sync(location, store.config, "default", store=store, env={}).recorded == 0
        res = kanban_record.kanban_sync(location, store.config, "blog", store=store, env={})
        assert res.recorded == 1
        [m] = stored_task_memories(store, tid)
        assert m.extra["kanban_board"] == "blog"
    finally:
        other.conn.close()


# -- the block (plain functions) ------------------------------------------------------------------------------------
def past(i: int, title: str, summary: str = "did it", dist: float = 0.3, assignee: str = "blog-writer") -> PastTask:
    return PastTask(task_id=f"t_{i:08x}", board="default", title=title, assignee=assignee, outcome="completed",
                    summary=summary, ended_at=1_800_000_000 + i, distance=dist, memory_id=f"m_{i}")


def test_block_lists_tasks_then_lessons_within_budget():
    tasks = [past(i, f"task {i}", "summary " * 40, 0.1 * i) for i in range(1, 6)]
    lessons = [Lesson("日期必须是RFC3339格式", "blog-writer", "", 0.9, "m_l1"),
               Lesson("标题不超过20字", "editor", "", 0.95, "m_l2")]
    block = kanban_recall.render_block(tasks, lessons, "editor", max_chars=800, max_items=15)
    assert len(block) <= 800
    assert block.startswith(RECALL_MARKER) and block.endswith(RECALL_END)
    assert block.index("t_00000001") < block.index("## Lessons") < block.index("RFC3339")
    assert "- 日期必须是RFC3339格式 (learned by @blog-writer)" in block
    assert "- 标题不超过20字\n" in block + "\n"  # the reader's own lesson carries no source
    # long task lines cannot crowd the lessons out
    assert "RFC3339" in kanban_recall.render_block(tasks, lessons, "editor", max_chars=500, max_items=15)
    assert kanban_recall.render_block([], [], "editor", 800, 15) == ""


def test_block_item_budget_and_a_line_per_task():
    tasks = [past(i, f"task {i}") for i in range(1, 6)]
    block = kanban_recall.render_block(tasks, [], "editor", max_chars=5000, max_items=3)
    assert block.count("\n- t_") == 3
    line = [ln for ln in block.splitlines() if ln.startswith("- t_00000001")][0]
    assert line.startswith("- t_00000001 (") and "@blog-writer, done) task 1: did it" in line


def test_group_by_task_keeps_best_rank_and_latest_run():
    old = past(1, "T", "blocked: waiting", 0.2)
    old.outcome = "blocked"
    new = PastTask(**{**vars(old), "outcome": "completed", "summary": "finished", "ended_at": old.ended_at + 50})
    other = past(2, "U", "x", 0.25)
    ranked = kanban_recall.group_by_task([(new, 0.4), (old, 0.2), (other, 0.25)])
    assert [t.task_id for t in ranked] == [old.task_id, other.task_id]
    assert ranked[0].summary == "finished" and ranked[0].distance == 0.2


# -- recall against a real store ------------------------------------------------------------------------------------
@pytest.fixture
def history(board, root, store):
    """A board history: a Kanban intro post by blog-writer, other work, and an instruction learned on it."""
    tasks = {
        "intro": board.done("写一篇 Kanban 入门文章", "完成《Kanban 入门》初稿：看板、列、WIP 限制，约 1500 字。",
                            body="面向新手读者"),
        "docker": board.done("Explain Docker bridge networking", "Wrote a guide to docker bridge networks and DNS.",
                             assignee="ops"),
        "sql": board.done("Tune the Postgres autovacuum settings", "Lowered scale factors on the three hot tables.",
                          assignee="ops"),
        "cake": board.done("整理团队生日蛋糕订购清单", "列出了三家蛋糕店和价格。", assignee="editor"),
    }
    loc = Location(root=root, profile="editor")
    kanban_record.kanban_sync(loc, store.config, store=store, env={})
    remember(store, [Candidate("日期必须是RFC3339格式", wing="instruction", profile="blog-writer",
                               room="auto-extract", task_id=tasks["intro"][0])])
    return tasks


def test_recall_shows_the_relevant_past_task_and_the_lesson(history, store):
    block = kanban_recall.recall_for_task(store, store.config, "写一篇 Kanban 进阶文章",
                                          "面向有经验的读者，讲泳道与度量", "editor")
    assert history["intro"][0] in block
    assert "写一篇 Kanban 入门文章" in block and "完成《Kanban 入门》初稿" in block
    assert "@blog-writer" in block
    assert "日期必须是RFC3339格式 (learned by @blog-writer)" in block
    assert "docker" not in block.lower() and "蛋糕" not in block
    assert len(block) <= store.config.recall_max_chars


def test_recall_is_relevance_not_recency(history, store):
    block = kanban_recall.recall_for_task(store, store.config, "Set up Docker networking for staging",
                                   "Configure bridge networks and DNS between containers.", "editor")
    assert history["docker"][0] in block
    assert history["intro"][0] not in block and "Kanban 入门" not in block


def test_recall_leaves_out_the_current_task_and_what_hermes_already_shows(history, store):
    intro = history["intro"][0]
    block = kanban_recall.recall_for_task(store, store.config, "写一篇 Kanban 入门文章", "面向新手读者", "blog-writer",
                                   task_id=intro)
    assert intro not in block
    block = kanban_recall.recall_for_task(store, store.config, "写一篇 Kanban 进阶文章", "", "blog-writer",
                                   shown_elsewhere=[intro])
    assert f"Recent work\" or parent handoffs: {intro}" in block
    assert "完成《Kanban 入门》初稿" not in block


def test_recall_scope_own_shows_only_the_profiles_tasks(history, store):
    cfg = Config(kanban_recall_scope="own")
    block = kanban_recall.recall_for_task(store, cfg, "写一篇 Kanban 进阶文章", "", "editor")
    assert history["intro"][0] not in block
    assert "RFC3339" in block  # instructions are shared whatever the task scope
    block = kanban_recall.recall_for_task(store, cfg, "写一篇 Kanban 进阶文章", "", "blog-writer")
    assert history["intro"][0] in block


def test_worker_first_turn_reads_the_card_from_the_board(history, board, root, store):
    advanced = board.create("写一篇 Kanban 进阶文章", assignee="editor", body="面向有经验的读者")
    board.claim(advanced)
    loc = Location(root=root, profile="editor")
    env = {"HERMES_KANBAN_TASK": advanced, "HERMES_KANBAN_DB": str(board.path), "HERMES_KANBAN_BOARD": "default"}
    block = kanban_recall.worker_first_turn(loc, store.config, env=env, store=store)
    assert history["intro"][0] in block and "RFC3339" in block
    assert kanban_recall.worker_first_turn(loc, store.config, env={}, store=store) == ""


def test_worker_start_backfills_before_recalling(board, root, store):
    tid = board.create("写一篇 Kanban 入门文章")
    board.claim(tid)
    board.complete(tid, "入门文章写完（从 CLI 完成）")  # no hook: only the backfill can know
    nxt = board.create("写一篇 Kanban 进阶文章", assignee="editor")
    board.claim(nxt)
    loc = Location(root=root, profile="editor")
    env = {"HERMES_KANBAN_TASK": nxt, "HERMES_KANBAN_DB": str(board.path)}
    block = kanban_recall.worker_first_turn(loc, store.config, env=env, store=store)
    assert tid in block and "从 CLI 完成" in block


# -- the command line -----------------------------------------------------------------------------------------------
def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_kanban_sync_and_recall(board, root, capsys, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", str(root / "profiles" / "editor"))
    tid = board.create("写一篇 Kanban 入门文章")
    board.claim(tid)
    board.complete(tid, "入门文章写完")
    code, out, _ = run_cli(capsys, "kanban-sync", "--hermes-home", str(root), "--json")
    assert code == 0 and json.loads(out)["recorded"] == 1
    code, out, _ = run_cli(capsys, "kanban-sync", "--hermes-home", str(root), "--json")
    assert code == 0 and json.loads(out)["recorded"] == 0
    code, out, _ = run_cli(capsys, "recall", "--task", "写一篇 Kanban 进阶文章", "--hermes-home", str(root),
                           "--profile", "editor")
    assert code == 0 and tid in out and "入门文章写完" in out
    nxt = board.create("写一篇 Kanban 进阶文章", assignee="editor")
    code, out, _ = run_cli(capsys, "recall", "--task", nxt, "--hermes-home", str(root), "--profile", "editor", "--json")
    assert code == 0 and tid in json.loads(out)["block"]
    code, _, err = run_cli(capsys, "recall", "--task", "t_deadbeef", "--hermes-home", str(root))
    assert code == 2 and "no task t_deadbeef" in err
    code, _, err = run_cli(capsys, "kanban-sync", "--board", "nope", "--hermes-home", str(root))
    assert code == 2 and "hermes kanban init" in err


# -- the plugin's entry points --------------------------------------------------------------------------------------
def worker_env(board: Board, task_id: str = "") -> dict:
    env = {"HERMES_KANBAN_DB": str(board.path), "HERMES_KANBAN_BOARD": "default"}
    if task_id:
        env["HERMES_KANBAN_TASK"] = task_id
    return env


def test_hook_task_completed_and_blocked_store_the_runs(board, root, store):
    home = str(root / "profiles" / "blog-writer")
    tid = board.create("写一篇 Kanban 入门文章")
    first = board.claim(tid)
    board.block(tid, "需要确认目标字数")
    kanban.hook_task_ended("kanban_task_blocked", home, worker_env(board, tid), task_id=tid, profile_name="blog-writer",
                           board="default", assignee="blog-writer", run_id=first, reason="需要确认目标字数")
    kb.unblock_task(board.conn, tid)
    second = board.claim(tid)
    board.complete(tid, "入门文章写完")
    kwargs = dict(task_id=tid, profile_name="blog-writer", board="default", assignee="blog-writer", run_id=second,
                  summary="入门文章写完")
    kanban.hook_task_ended("kanban_task_completed", home, worker_env(board, tid), **kwargs)
    kanban.hook_task_ended("kanban_task_completed", home, worker_env(board, tid), **kwargs)  # delivered twice
    mems = sorted(stored_task_memories(store, tid), key=lambda m: m.extra["kanban_run_id"])
    assert [(m.profile, m.extra["kanban_outcome"]) for m in mems] == [("blog-writer", "blocked"),
                                                                       ("blog-writer", "completed")]
    # the hook told the cursor: the worker-start sync that follows has nothing to check
    res = kanban_record.kanban_sync(Location(root=root, profile="editor"), store.config, store=store, env={})
    assert res.scanned == 0


def test_hook_without_a_readable_board_uses_its_own_fields(root, store):
    home = str(root / "profiles" / "blog-writer")
    env = {"HERMES_KANBAN_DB": str(root / "gone" / "kanban.db"), "HERMES_KANBAN_BOARD": "default"}
    kanban.hook_task_ended("kanban_task_completed", home, env, task_id="t_0badc0de", board="default",
                           assignee="blog-writer", run_id=3, summary="finished without a board")
    [m] = stored_task_memories(store, "t_0badc0de")
    assert m.text == "t_0badc0de — finished without a board" and m.profile == "blog-writer"
    events = [json.loads(ln)["event"] for ln in Location(root=root, profile="x").log_file.read_text().splitlines()]
    assert "kanban_board_unreadable" in events


def test_hook_failure_is_logged_not_raised(root, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(kanban, "record_task_run", boom)
    kanban.hook_task_ended("kanban_task_completed", str(root), {}, task_id="t_00000001", run_id=1)
    text = Location(root=root, profile="default").log_file.read_text()
    assert "kanban_record_failed" in text and "disk on fire" in text


@pytest.mark.embedded_only("a child process per call: the store backend adds nothing here")
def test_first_turn_hook_injects_the_block_once(history, board, root, monkeypatch):
    monkeypatch.setattr(kanban, "_worker_recall", None)
    nxt = board.create("写一篇 Kanban 进阶文章", assignee="editor")
    board.claim(nxt)
    home, env = str(root / "profiles" / "editor"), worker_env(board, nxt)
    assert kanban.hook_first_turn(home, {}, True) is None  # not a worker
    kanban.hook_worker_start(home, env)  # plugin load
    out = kanban.hook_first_turn(home, env, is_first_turn=True)
    assert history["intro"][0] in out["context"] and out["context"].startswith(RECALL_MARKER)
    assert kanban.hook_first_turn(home, env, is_first_turn=False) is None
    [event] = [e for e in read_events(Location(root=root, profile="editor"), "kanban_recall") if e["task_id"] == nxt]
    assert event["where"] == "child" and event["tasks"] == 1  # computed off the worker's GIL


def test_first_turn_falls_back_to_this_process_when_the_child_fails(history, board, root, monkeypatch):
    monkeypatch.setattr(kanban, "_worker_recall", None)
    monkeypatch.setattr(kanban, "_CHILD", "import sys; sys.exit(3)")
    nxt = board.create("写一篇 Kanban 进阶文章", assignee="editor")
    board.claim(nxt)
    out = kanban.hook_first_turn(str(root / "profiles" / "editor"), worker_env(board, nxt), True)
    assert history["intro"][0] in out["context"]
    events = read_events(Location(root=root, profile="editor"))
    assert any(e["event"] == "kanban_recall_child_failed" and "exited 3" in e["error"] for e in events)
    assert [e["where"] for e in events if e["event"] == "kanban_recall"] == ["thread"]


def test_first_turn_hook_on_a_broken_board_returns_nothing(root, monkeypatch):
    monkeypatch.setattr(kanban, "_worker_recall", None)
    env = {"HERMES_KANBAN_TASK": "t_00000001", "HERMES_KANBAN_DB": str(root / "nope.db")}
    assert kanban.hook_first_turn(str(root), env, True) is None
    assert "kanban_recall_failed" in Location(root=root, profile="default").log_file.read_text()


@pytest.mark.embedded_only("a child process per call: the store backend adds nothing here")
@pytest.mark.embedder("hash")  # the backfill is tested, not recall's relevance
def test_recall_switched_off_still_backfills(board, root, store, monkeypatch):
    monkeypatch.setattr(kanban, "_worker_recall", None)
    (root / "profiles" / "editor").mkdir(parents=True)
    (root / "profiles" / "editor" / "config.yaml").write_text("automem:\n  kanban_recall: false\n")
    done, _ = board.done("写一篇 Kanban 入门文章", "从 CLI 完成")
    nxt = board.create("写一篇 Kanban 进阶文章", assignee="editor")
    board.claim(nxt)
    assert kanban.hook_first_turn(str(root / "profiles" / "editor"), worker_env(board, nxt), True) is None
    assert len(stored_task_memories(store, done)) == 1


def test_a_sync_held_elsewhere_is_one_clear_error(board, location, monkeypatch):
    from filelock import FileLock

    slug, db = kanban_board.resolve_board(location, None, env={})
    path = kanban_record._state_path(location, slug, db)
    location.cache_dir.mkdir(parents=True, exist_ok=True)
    held = FileLock(str(path) + ".lock")
    held.acquire()
    try:
        monkeypatch.setattr(kanban_record, "SYNC_LOCK_TIMEOUT_S", 0.2)
        with pytest.raises(kanban_board.BoardError, match="another kanban-sync"):
            kanban_record.kanban_sync(location, Config(), env={})
    finally:
        held.release()
