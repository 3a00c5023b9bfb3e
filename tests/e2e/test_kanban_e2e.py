"""Kanban workers remember (issue 5), end to end with the real `hermes kanban` of hermes-agent 0.19.0.

Two profiles, blog-writer and editor, both with automem installed by `automem install`; a scripted model on
127.0.0.1 plays the workers (kanban_show, then kanban_complete) and the extraction LLM. One test walks the whole
story in order, because each step builds on the store the previous one left:

1. task 1 "写一篇 Kanban 入门文章" (blog-writer) is dispatched and completes: the store holds its task memory, and
   the rule its worker stated ("日期必须是RFC3339格式") is kept for blog-writer only (the worker's words are not the
   owner's: persona, never shared); the owner then says it in a blog-writer session, and it becomes an instruction;
2. task 2 "写一篇 Kanban 进阶文章" (editor): the first request its worker sends holds, in automem's block, task 1's
   id, title and summary and the instruction learned by blog-writer;
3. a Docker networking task is not shown task 1 (relevance, not recency);
4. a worker SIGTERMed mid-task, its task then completed with `hermes kanban complete`: `automem kanban-sync`
   stores the task memory exactly once, and a second sync adds nothing.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3

import pytest

from automem.log import read_events
from automem.paths import Location
from tests.support.fake_llm import FakeLLM, content_text
from tests.support.hermes import HermesRoot, find_hermes, poll

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(find_hermes() is None, reason="hermes-agent is not installed")]

EXTRACTOR = "你是一个记忆提取助手"  # the seed's extraction system prompt starts so
INSTRUCTION = "日期必须是RFC3339格式"
SUMMARY_1 = "完成《Kanban 入门》初稿：看板、列与 WIP 限制三节，约 1500 字，草稿在 intro.md。"
SUMMARY_2 = "完成《Kanban 进阶》：泳道、度量与持续改进。"
SUMMARY_3 = "Configured a user-defined bridge network with container DNS for staging."
SUMMARY_4 = "术语表整理完毕（由人工在 CLI 完成）。"


def extraction_rules() -> list[dict]:
    return [
        {"match": {"system": EXTRACTOR, "any": "RFC3339"},
         "json": {"persona": [], "episodic": [], "instruction": [INSTRUCTION]}},
        {"match": {"system": EXTRACTOR}, "json": {"persona": [], "episodic": [], "instruction": []}},
        {"match": {"no_tools": True}, "text": "Kanban"},  # Hermes' auxiliary calls (titles)
    ]


def worker_rules(task_id: str, summary: str, final: str, hang: bool = False) -> list[dict]:
    """A worker that orients with kanban_show, completes with `summary`, then answers `final`."""
    mine = f"work kanban task {task_id}"
    rules = [{"match": {"user": mine, "after_tool": False},
              "tool_calls": [{"name": "kanban_show", "arguments": {"task_id": task_id}}]}]
    if hang:  # stuck in a long model call: the dispatcher's SIGTERM (simulated by the test) is what ends it
        rules.append({"match": {"user": mine, "after_tool": "kanban_show"}, "delay": 120, "text": "too late"})
    rules += [
        {"match": {"user": mine, "after_tool": "kanban_show"},
         "tool_calls": [{"name": "kanban_complete", "arguments": {"summary": summary, "metadata": {"e2e": True}}}]},
        {"match": {"user": mine, "after_tool": "kanban_complete"}, "text": final},
    ]
    return rules


class Board:
    def __init__(self, root: HermesRoot):
        self.root = root
        self.path = root.root / "kanban.db"

    def create(self, title: str, assignee: str, body: str) -> str:
        res = self.root.hermes_cmd("kanban", "create", title, "--assignee", assignee, "--body", body, "--json").check()
        return json.loads(res.stdout[res.stdout.index("{"):])["id"]

    def row(self, sql: str, *params):
        conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchone()
        finally:
            conn.close()

    def status(self, task_id: str) -> str:
        return self.row("SELECT status FROM tasks WHERE id = ?", task_id)[0]

    def dispatch(self) -> None:
        self.root.hermes_cmd("kanban", "dispatch", "--json").check()

    def run_until_done(self, task_id: str, deadline_s: float = 150) -> None:
        self.dispatch()
        poll(lambda: self.status(task_id) in ("done", "blocked"), deadline_s=deadline_s, interval_s=0.5,
             what=f"task {task_id} done")
        assert self.status(task_id) == "done", self.root.hermes_cmd("kanban", "show", task_id).stdout


def first_worker_request(llm: FakeLLM, task_id: str) -> dict:
    for req in llm.chat_requests():
        body = req.get("body") or {}
        msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        users = [m for m in msgs if m.get("role") == "user"]
        if body.get("tools") and users and content_text(users[-1].get("content")).startswith(
                f"work kanban task {task_id}"):
            return body
    raise AssertionError(f"no request from the worker of {task_id}")


def user_text(body: dict) -> str:
    users = [m for m in body["messages"] if isinstance(m, dict) and m.get("role") == "user"]
    return content_text(users[-1].get("content"))


def automem_block(text: str) -> str:
    start = text.find("[automem:recall]\n## Relevant past kanban tasks")
    if start < 0:
        start = text.find("[automem:recall]\n## Lessons")
    assert start >= 0, f"no automem kanban block in:\n{text}"
    end = text.find("[/automem:recall]", start)
    return text[start:end]


def task_memories(root: HermesRoot, task_id: str) -> list[dict]:
    mems = root.automem_json("list", "--hermes-home", str(root.root), "--all-profiles", "--all", "--wing", "episodic")
    return [m for m in mems if m.get("task_id") == task_id and m.get("room") == "kanban"]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            return "\nState:\tZ" not in fh.read()
    except OSError:
        return False


@pytest.fixture
def llm():
    with FakeLLM(extraction_rules()) as server:
        yield server


@pytest.fixture
def hermes(tmp_path, llm):
    automem_cfg = ("automem:\n"
                   "  extract_backend: openai\n"
                   f"  extract_base_url: {llm.url}\n"
                   "  extract_api_key: fake-extract-key\n"
                   "  spool_backoff_seconds: 1\n")
    root = HermesRoot.create(tmp_path, llm.url, extra_config=automem_cfg)
    for profile in ("blog-writer", "editor"):
        root.create_profile(profile)
    root.automem("install", "--hermes-home", str(root.root), "--profile", "blog-writer", "--profile", "editor",
                 "--no-pip").check()
    root.hermes_cmd("kanban", "init").check()
    yield root
    # no worker outlives the test
    try:
        conn = sqlite3.connect(f"file:{root.root / 'kanban.db'}?mode=ro", uri=True)
        pids = [r[0] for r in conn.execute("SELECT worker_pid FROM task_runs WHERE worker_pid IS NOT NULL")]
        conn.close()
    except sqlite3.Error:
        pids = []
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_kanban_workers_remember(hermes: HermesRoot, llm: FakeLLM):
    board = Board(hermes)

    # 1. task 1 by blog-writer: the task memory, and the rule stated in its worker's transcript
    t1 = board.create("写一篇 Kanban 入门文章", "blog-writer", "面向新手读者：看板、列与 WIP 限制。")
    llm.set_rules(extraction_rules() + worker_rules(
        t1, SUMMARY_1, f"入门文章已完成。提醒：文中所有{INSTRUCTION}，例如 2026-12-02T10:00:00Z。"))
    board.run_until_done(t1)
    [m1] = poll(lambda: task_memories(hermes, t1), deadline_s=60, what="task 1's memory in the store")
    assert m1["profile"] == "blog-writer" and m1["wing"] == "episodic" and m1["status"] == "active"
    assert m1["text"].startswith("写一篇 Kanban 入门文章 — ") and m1["kanban_summary"] == SUMMARY_1
    assert m1["added_by"] == "kanban-hook"  # stored by the worker's kanban_task_completed hook

    def learned(wing: str) -> list[dict]:
        return [m for m in hermes.automem_json("list", "--hermes-home", str(hermes.root), "--all-profiles",
                                               "--wing", wing) if m["text"] == INSTRUCTION]

    # the worker's own words are not the owner's: kept for blog-writer as persona, never a rule for every profile
    [kept] = poll(lambda: learned("user"), deadline_s=90, what="the worker's stated rule kept for its profile")
    assert kept["profile"] == "blog-writer" and kept["task_id"] == t1 and learned("instruction") == []

    # the owner says it in a blog-writer session: an instruction, shared with every profile's workers
    hermes.chat(f"提醒：以后文中所有{INSTRUCTION}。", profile="blog-writer").check()
    [rule] = poll(lambda: learned("instruction"), deadline_s=90, what="the owner's instruction from blog-writer")
    assert rule["profile"] == "blog-writer"

    # 2. task 2 by editor: its first request holds task 1 and blog-writer's instruction, in automem's block
    t2 = board.create("写一篇 Kanban 进阶文章", "editor", "面向有经验的读者：泳道、度量与持续改进。")
    llm.set_rules(extraction_rules() + worker_rules(t2, SUMMARY_2, "进阶文章已完成。"))
    board.run_until_done(t2)
    block = automem_block(user_text(first_worker_request(llm, t2)))
    assert t1 in block and "写一篇 Kanban 入门文章" in block and SUMMARY_1 in block and "@blog-writer" in block
    assert f"- {INSTRUCTION} (learned by @blog-writer)" in block
    assert t2 not in block  # not the current task itself

    # 3. an unrelated task is not shown task 1: relevance, not recency
    t3 = board.create("Configure Docker bridge networking for staging", "editor",
                      "Containers must resolve each other by name; set up a user-defined bridge network and DNS.")
    llm.set_rules(extraction_rules() + worker_rules(t3, SUMMARY_3, "Docker networking is configured."))
    board.run_until_done(t3)
    first = user_text(first_worker_request(llm, t3))
    assert t1 not in first and "Kanban 入门" not in first
    shown = hermes.automem("recall", "--task", t3, "--hermes-home", str(hermes.root), "--profile", "editor").check()
    assert t1 not in shown.stdout
    # the block was computed in a child process started at plugin load (figures with -s)
    recalls = {e["task_id"]: e for e in read_events(Location(root=hermes.root, profile="editor"), "kanban_recall")}
    assert {t1, t2, t3} <= set(recalls), recalls
    assert recalls[t2]["tasks"] == 1 and recalls[t3]["tasks"] == 0
    assert all(recalls[t]["where"] == "child" for t in (t1, t2, t3))  # computed beside the worker, not in it
    for tid in (t1, t2, t3):
        print(f"\nkanban recall in worker {tid}: computed in {recalls[tid]['compute_ms']:.0f} ms, "
              f"first model call waited {recalls[tid]['waited_ms']:.0f} ms for it")

    # 4. a worker SIGTERMed mid-task, the task then completed from the CLI: kanban-sync stores it exactly once
    t4 = board.create("整理 Kanban 术语表", "blog-writer", "列出常用术语及解释。")
    llm.set_rules(extraction_rules() + worker_rules(t4, "never sent", "never sent", hang=True))
    board.dispatch()
    poll(lambda: any(r.get("rule") is not None
                     and f"work kanban task {t4}" in json.dumps(r.get("body"), ensure_ascii=False)
                     and (r["body"].get("messages") or [{}])[-1].get("role") == "tool" for r in llm.chat_requests()),
         deadline_s=90, what="task 4's worker waiting in its model call")
    pid = board.row("SELECT worker_pid FROM tasks WHERE id = ?", t4)[0]
    assert pid and alive(pid)
    os.kill(pid, signal.SIGTERM)
    poll(lambda: not alive(pid), deadline_s=30, what="the worker to exit on SIGTERM")
    hermes.hermes_cmd("kanban", "complete", t4, "--summary", SUMMARY_4).check()
    assert board.status(t4) == "done" and task_memories(hermes, t4) == []  # no hook fired for either exit

    [sync] = hermes.automem_json("kanban-sync", "--hermes-home", str(hermes.root))
    assert sync["recorded"] == 1, sync
    [m4] = task_memories(hermes, t4)
    assert m4["kanban_summary"] == SUMMARY_4 and m4["profile"] == "blog-writer" and m4["added_by"] == "kanban-sync"
    [again] = hermes.automem_json("kanban-sync", "--hermes-home", str(hermes.root))
    assert again["recorded"] == 0 and again["scanned"] == 0, again
    assert len(task_memories(hermes, t4)) == 1
    # every finished task is remembered once, whichever way it ended
    for tid in (t1, t2, t3):
        assert len(task_memories(hermes, tid)) == 1
