"""Recall for Hermes sessions: the budgeted system-prompt block, the prefetch block and the snapshot they read."""

from __future__ import annotations

import json

import pytest

from automem.core import recall
from automem.config import Config
from automem.paths import Location
from automem.core.recall import RecallItem
from automem.text import RECALL_MARKER
from automem.core.write_path import Candidate, remember


def item(i: int, text: str, wing: str = "user", profile: str = "default", t: int = 0) -> RecallItem:
    return RecallItem(id=f"m_{i}", text=text, wing=wing, profile=profile, updated_at=t or i, created_at=t or i)


def test_block_holds_own_persona_and_instructions_plus_shared_instructions_only():
    items = [
        item(1, "用户习惯使用vim编辑器", "user", "default"),
        item(2, "项目统一使用Python 3.11", "instruction", "default"),
        item(3, "用户喜欢暗色主题", "user", "blog-writer"),          # another profile's persona: never
        item(4, "日期必须是RFC3339格式", "instruction", "blog-writer"),  # shared wing: yes
        item(5, "昨天部署了博客", "episodic", "default"),             # episodic: not in the block
    ]
    chosen = recall.select_block(items, "default", Config())
    assert [i.id for i in chosen] == ["m_2", "m_1", "m_4"]  # own first (newest first), then shared
    text = recall.format_block(chosen, "default")
    assert text.startswith(RECALL_MARKER)
    assert "- [persona] 用户习惯使用vim编辑器" in text
    assert "- [instruction, from blog-writer] 日期必须是RFC3339格式" in text
    assert "暗色" not in text and "部署" not in text


def test_block_respects_item_and_char_budgets():
    items = [item(i, f"memory number {i:03d} about something", "user") for i in range(1, 40)]
    cfg = Config(recall_max_items=15, recall_max_chars=800)
    chosen = recall.select_block(items, "default", cfg)
    assert len(chosen) == 15
    assert [i.id for i in chosen][:2] == ["m_39", "m_38"]  # newest first
    cfg = Config(recall_max_items=15, recall_max_chars=200)
    chosen = recall.select_block(items, "default", cfg)
    used = sum(len(recall.line_of(i, "default")) + 1 for i in chosen)
    assert used <= 200 and len(chosen) == 200 // (len(recall.line_of(items[0], "default")) + 1)


def test_budget_skips_a_long_item_but_keeps_filling_with_short_ones():
    items = [item(3, "x" * 190, "user"), item(2, "short one", "user"), item(1, "another short", "user")]
    chosen = recall.fit_budget(items, "default", 15, 60)
    assert [i.id for i in chosen] == ["m_2", "m_1"]


def test_lexical_prefetch_finds_the_editor_memory_for_the_seed_question():
    items = [item(1, "用户习惯使用vim编辑器", "user"), item(2, "项目统一使用Python 3.11", "instruction"),
             item(3, "用户住在上海", "user")]
    chosen = recall.select_prefetch_lexical(items, "你知道我用什么编辑器吗？", "default", Config())
    assert [i.id for i in chosen] == ["m_1"]
    chosen = recall.select_prefetch_lexical(items, "which python version?", "default", Config())
    assert [i.id for i in chosen] == ["m_2"]
    assert recall.select_prefetch_lexical(items, "你好", "default", Config()) == []
    assert recall.select_prefetch_lexical(items, "你知道我用什么编辑器吗？", "default", Config(), exclude=["m_1"]) == []


def test_snapshot_is_written_by_the_store_on_close_and_read_without_opening_chroma(location, config):
    from automem.core.store import Store

    store = Store(location, config)
    remember(store, [Candidate("用户习惯使用vim编辑器", "user", "default", room="cli"),
                     Candidate("日期必须是RFC3339格式", "instruction", "blog-writer", room="cli"),
                     Candidate("用户喜欢暗色主题", "user", "blog-writer", room="cli")])
    store.close()
    data = recall.read_cache(location)
    assert data is not None and recall.cache_is_fresh(location, config, data)
    assert {m["text"] for m in data["memories"]} == {"用户习惯使用vim编辑器", "日期必须是RFC3339格式", "用户喜欢暗色主题"}

    def no_store():
        raise AssertionError("a fresh snapshot must not open the store")

    text, ids = recall.system_prompt_block(location, config, open_store=no_store)
    assert "vim" in text and "RFC3339" in text and "暗色" not in text and len(ids) == 2
    other = Location(location.root, "blog-writer")
    text, _ = recall.system_prompt_block(other, config, open_store=no_store)
    assert "暗色" in text and "RFC3339" in text and "vim" not in text


@pytest.mark.embedded_only("freshness follows the embedded store's generation file")
def test_a_stale_snapshot_is_rebuilt_and_forgotten_memories_leave_it(location, config):
    from automem.core.store import Store

    store = Store(location, config)
    [d] = remember(store, [Candidate("用户习惯使用vim编辑器", "user", "default", room="cli")])
    store.close()
    assert "vim" in recall.system_prompt_block(location, config)[0]
    # Another writer that does not refresh the snapshot (killed before close): the generation moves on.
    store = Store(location, config)
    remember(store, [Candidate("用户住在上海", "user", "default", room="cli")])
    store._wrote_since_open = False  # simulate a writer that died before close()
    store.close()
    assert not recall.cache_is_fresh(location, config, recall.read_cache(location))
    text, ids = recall.system_prompt_block(location, config)
    assert "上海" in text and "vim" in text
    assert recall.cache_is_fresh(location, config, recall.read_cache(location))
    # A forget rewrites the snapshot at once, before the store is closed (a session may stay open for hours).
    store = Store(location, config)
    store.forget([d.id])
    assert recall.cache_is_fresh(location, config, recall.read_cache(location))
    assert "vim" not in recall.system_prompt_block(location, config)[0]
    assert "vim" not in recall.cache_path(location).read_text(encoding="utf-8")
    store.close()


def test_a_corrupt_snapshot_is_rebuilt(location, config):
    location.ensure_dirs()
    recall.cache_path(location).write_text("{not json", encoding="utf-8")
    assert recall.read_cache(location) is None
    assert recall.system_prompt_block(location, config) == ("", [])
    assert json.loads(recall.cache_path(location).read_text(encoding="utf-8"))["version"] == recall.CACHE_VERSION


def test_vector_prefetch_with_a_warm_store(store, location, config):
    remember(store, [Candidate("用户习惯使用vim编辑器", "user", "default", room="cli"),
                     Candidate("上周把博客迁移到了Hugo", "episodic", "default", room="cli"),
                     Candidate("用户喜欢暗色主题", "user", "other", room="cli")])
    text, ids = recall.prefetch_block(location, config, "你知道我用什么编辑器吗？", store=store)
    assert text.startswith(RECALL_MARKER) and "vim" in text and "暗色" not in text
    text2, _ = recall.prefetch_block(location, config, "你知道我用什么编辑器吗？", store=store, exclude=ids[:1])
    assert "vim编辑器" not in text2


def test_prefetch_leaves_kanban_task_records_to_the_kanban_block(store, location, config):
    from automem.core.recall import prefetch_block
    from automem.core.write_path import Candidate, remember

    remember(store, [Candidate("写一篇 Kanban 入门文章 — 完成了入门文章", wing="episodic", room="kanban",
                               id="m_kanban_task_record"),
                     Candidate("用户喜欢用Kanban看板管理写作任务", wing="user")])
    for warm in (store, None):
        block, ids = prefetch_block(location, config, "work kanban task t_12345678", store=warm)
        assert "m_kanban_task_record" not in ids and "入门文章" not in block
