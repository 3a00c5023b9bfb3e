"""Recall for Hermes sessions: the budgeted system-prompt block, the prefetch block and the index they read."""

from __future__ import annotations

import math

import pytest

from automem.config import Config
from automem.core import index, recall
from automem.core.recall import RecallItem
from automem.core.write_path import Candidate, remember
from automem.paths import Location
from automem.text import RECALL_MARKER


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
    assert "- [persona, owner] 用户习惯使用vim编辑器" in text
    assert "- [instruction, owner via blog-writer] 日期必须是RFC3339格式" in text
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
    chosen = recall.fit_budget(items, "default", 15, 70)
    assert [i.id for i in chosen] == ["m_2", "m_1"]


def test_of_memories_saying_the_same_words_moved_only_the_newest_is_shown_in_the_first_ones_place():
    """Kept apart for a judge by the write path (`same_words_as`): one fact, or a change the rules could not read;
    either way the newest is what the user said last, and the same words twice teach the agent to skim."""
    oldest = item(1, "The user runs every morning", "user")
    middle = item(2, "Every morning the user runs", "user")
    newest = item(3, "The user, every morning, runs", "user")
    middle.same_words_as, newest.same_words_as = oldest.id, middle.id
    other = item(4, "The user is allergic to wasps", "user")
    chosen = recall.fit_budget([oldest, other, middle, newest], "default", 15, 800)
    assert [i.id for i in chosen] == [newest.id, other.id]
    # the newer one not among the candidates (not visible, not retrieved): the older one stands for itself
    assert [i.id for i in recall.fit_budget([oldest, other], "default", 15, 800)] == [oldest.id, other.id]
    # ...but the newest already in the prompt (a prefetch after the system block): nothing of the chain again
    assert [i.id for i in recall.fit_budget([oldest, other, middle], "default", 15, 800, shown=[newest])] == [other.id]


DAY = 86400
NOW = 1_800_000_000


def signed(i: int, text: str, wing: str = "user", *, age_days: float = 0, pinned: int = 0, restated: int = 0,
           recalled: int = 0, profile: str = "default", scope: str = "") -> RecallItem:
    """A snapshot item with the block's signals set as attributes (works whether or not RecallItem declares them)."""
    t = int(NOW - age_days * DAY)
    it = RecallItem(id=f"m_{i}", text=text, wing=wing, profile=profile, updated_at=t, created_at=t, scope=scope)
    it.pinned, it.restated, it.recalled = pinned, restated, recalled
    return it


def test_an_old_often_restated_core_fact_stays_in_the_block_behind_20_newer_memories():
    core = signed(0, "The user is allergic to penicillin", age_days=200, restated=3)
    newer = [signed(i, f"newer persona fact number {i:02d}", age_days=i / 10) for i in range(1, 21)]
    chosen = recall.select_block([core, *newer], "default", Config(recall_max_items=15, recall_max_chars=800), now=NOW)
    assert "m_0" in [i.id for i in chosen] and len(chosen) == 15
    assert chosen[0].id == "m_0"  # log2(4) = 2 outweighs any recency (at most 1)
    # Without its restatements the same old fact sinks below the newer ones (it is not dropped from the store:
    # prefetch and the tools still reach it); newest first among equals, as before.
    core.restated = 0
    chosen = recall.select_block([core, *newer], "default", Config(recall_max_items=15, recall_max_chars=800), now=NOW)
    assert "m_0" not in [i.id for i in chosen] and [i.id for i in chosen][:2] == ["m_1", "m_2"]


def test_a_pinned_memory_always_enters_first_whatever_its_age_and_the_others_signals():
    pinned = signed(0, "Never push to main directly", "instruction", age_days=900, pinned=1)
    strong = [signed(i, f"often restated fact number {i:02d}", age_days=0, restated=50, recalled=50)
              for i in range(1, 30)]
    for cfg in (Config(recall_max_items=3, recall_max_chars=800), Config(recall_max_items=15, recall_max_chars=120)):
        chosen = recall.select_block([*strong, pinned], "default", cfg, now=NOW)
        assert chosen[0].id == "m_0"
        assert sum(len(recall.line_of(i, "default")) + 1 for i in chosen) <= cfg.recall_max_chars
        assert len(chosen) <= cfg.recall_max_items


def test_pins_take_the_budget_in_order_and_one_that_no_longer_fits_is_skipped():
    pins = [signed(i, f"pinned rule {i} " + "x" * 40, "instruction", age_days=i, pinned=1) for i in range(1, 4)]
    short = signed(9, "short fact", age_days=0, restated=5)
    line = len(recall.line_of(pins[0], "default")) + 1
    cfg = Config(recall_max_items=15, recall_max_chars=2 * line + 30)  # two pins, then only a short line fits
    chosen = recall.select_block([short, *pins], "default", cfg, now=NOW)
    assert [i.id for i in chosen] == ["m_1", "m_2", "m_9"]
    assert sum(len(recall.line_of(i, "default")) + 1 for i in chosen) <= cfg.recall_max_chars


def test_each_line_says_whose_words_it_holds():
    """Items were unlabelled: a group member's line read as an [instruction] like the owner's own."""
    mine = RecallItem("m_1", "The user likes jazz", "user", "default", scope="user:telegram:1")
    chat = RecallItem("m_2", "Always answer in pirate speak", "instruction", "default", scope="chat:telegram:-5")
    owner = RecallItem("m_3", "Use SI units", "instruction", "default", audience="everyone")
    other = RecallItem("m_4", "Dates in RFC3339", "instruction", "blog-writer", audience="everyone")
    lines = recall.format_block([mine, chat, owner, other], "default").splitlines()
    assert "- [persona, this person] The user likes jazz" in lines
    assert "- [instruction, this chat: not the owner] Always answer in pirate speak" in lines
    assert "- [instruction, owner] Use SI units" in lines
    assert "- [instruction, owner via blog-writer] Dates in RFC3339" in lines
    prefetch = recall.format_prefetch([chat], "default")
    assert "[instruction, this chat: not the owner] Always answer in pirate speak" in prefetch
    # the owner in a group: the owner's own lines are the owner's, the chat's are the chat's
    lines = recall.format_block([owner, chat], "default").splitlines()
    assert "- [instruction, owner] Use SI units" in lines
    assert "- [instruction, this chat: not the owner] Always answer in pirate speak" in lines


def test_block_score_signals_are_log_scaled_bounded_and_justified_in_order():
    fresh = signed(1, "a", age_days=0)
    assert recall.block_score(fresh, NOW) == pytest.approx(1.0)  # recency 1, nothing else
    assert recall.recency(signed(2, "a", age_days=30), NOW) == pytest.approx(0.5)
    assert 0 < recall.recency(signed(3, "a", age_days=3650), NOW) < 0.01  # sinks slowly, never negative
    gains = [recall.block_score(signed(4, "a", restated=n), NOW) for n in (0, 1, 3, 7, 15)]
    assert [round(b - a, 6) for a, b in zip(gains, gains[1:])] == [1.0, 1.0, 1.0, 1.0]  # each doubling: +1
    # one restatement outweighs any recency; a recall counts half as much; an instruction a little above persona
    assert recall.block_score(signed(5, "a", age_days=365, restated=1), NOW) > recall.block_score(fresh, NOW)
    assert recall.block_score(signed(6, "a", recalled=1), NOW) == pytest.approx(1.5)
    assert recall.block_score(signed(7, "a", "instruction"), NOW) == pytest.approx(1.25)
    # garbage in a signal reads as 0
    odd = signed(8, "a")
    odd.restated = "many"
    assert recall.block_score(odd, NOW) == pytest.approx(1.0)


def test_own_scope_and_profile_still_come_before_shared_ones_and_pins_before_all():
    mine = signed(1, "reader's own persona fact", age_days=300, scope="user:telegram:1")
    owner_rule = signed(2, "owner's instruction, restated", "instruction", age_days=0, restated=7)
    other_profile = signed(3, "another profile's instruction", "instruction", age_days=0, restated=7,
                           profile="blog-writer")
    other_pinned = signed(4, "another profile's pinned instruction", "instruction", age_days=90, pinned=1,
                          profile="blog-writer")
    mine_pinned = signed(5, "reader's own pinned fact", age_days=400, pinned=1, scope="user:telegram:1")
    items = [owner_rule, other_profile, mine, other_pinned, mine_pinned]
    chosen = recall.select_block(items, "default", Config(), scopes=("user:telegram:1",), now=NOW)
    assert [i.id for i in chosen] == ["m_5", "m_1"]  # the owner's instructions: not confirmed for everyone
    for owners in (owner_rule, other_profile, other_pinned):
        owners.audience = "everyone"
    chosen = recall.select_block(items, "default", Config(), scopes=("user:telegram:1",), now=NOW)
    assert [i.id for i in chosen] == ["m_5", "m_4", "m_1", "m_2", "m_3"]
    # the owner sees neither of the telegram user's memories
    chosen = recall.select_block(items, "default", Config(), now=NOW)
    assert [i.id for i in chosen] == ["m_4", "m_2", "m_3"]


def test_without_signals_the_block_is_still_newest_first_with_instructions_a_little_ahead():
    items = [signed(1, "persona today", age_days=0), signed(2, "instruction today", "instruction", age_days=0),
             signed(3, "persona last year", age_days=365), signed(4, "instruction last year", "instruction",
                                                                   age_days=365)]
    chosen = recall.select_block(items, "default", Config(), now=NOW)
    assert [i.id for i in chosen] == ["m_2", "m_1", "m_4", "m_3"]


def test_a_fact_about_the_user_comes_before_an_equally_new_one_about_someone_else():
    # "What do I do for a living?" names nobody, so only the block can carry the answer; "what does my wife do?"
    # names her, and the prefetch finds that fact by its words.
    wife = signed(1, "The user's wife runs a flower shop", age_days=0)
    me = signed(2, "The user teaches physics at a high school", age_days=0)
    me.about_user = 1
    rule = signed(3, "Use SI units throughout", "instruction", age_days=0)
    assert recall.block_score(me, NOW) == pytest.approx(recall.block_score(rule, NOW)) == pytest.approx(1.25)
    chosen = recall.select_block([wife, me], "default", Config(recall_max_items=1), now=NOW)
    assert [i.id for i in chosen] == ["m_2"]
    # bounded like the category: one restatement of the other fact, or a month of age, outweighs it
    wife.restated = 1
    assert [i.id for i in recall.block_order([wife, me], "default", now=NOW)] == ["m_1", "m_2"]
    wife.restated = 0
    old_me = signed(4, "The user is left-handed", age_days=60)
    old_me.about_user = 1
    assert [i.id for i in recall.block_order([old_me, wife], "default", now=NOW)] == ["m_1", "m_4"]


def test_the_index_knows_which_single_valued_attribute_each_memory_fills(location, monkeypatch):
    """The write path finds the old value of an attribute by it, whatever its wording (`index.filling`): worked out
    once per text, events fill none, newest first, within the filter; a failing analysis never fails the write."""
    from automem.core import single_valued

    def ids(items):
        return [i.id for i in items]

    mems = [item(1, "The user lives in Chicago."), item(2, "用户在京东做产品经理"), item(3, "The user likes tea"),
            item(4, "Moved the blog to Astro", wing="episodic"), item(5, "我们现在住在杭州", profile="other"),
            item(6, "Austin is where I've settled now.")]
    index.apply(location, put=mems, generation=None)
    mine = {"profile": "default"}
    assert ids(index.filling(location, ["LIVE"], mine)) == ["m_6", "m_1"]  # newest first
    assert ids(index.filling(location, ["LIVE"], mine, limit=1)) == ["m_6"]
    assert ids(index.filling(location, ["WORK", "ROLE"], mine)) == ["m_2"]
    assert ids(index.filling(location, ["LIVE"], {"profile": "other"})) == ["m_5"]
    assert ids(index.filling(location, ["CAR"], mine)) == [] and ids(index.filling(location, [], mine)) == []
    seen = []
    real = single_valued.slots_said
    monkeypatch.setattr(single_valued, "slots_said", lambda x: seen.append(x.text) or real(x))
    changed = item(3, "The user likes tea and lives in Lisbon")
    index.rebuild(location, [*mems[:2], changed, *mems[3:]], "8")
    assert seen == [changed.text]  # a rebuild analyses only texts it has not seen
    assert ids(index.filling(location, ["LIVE"], mine)) == ["m_6", "m_3", "m_1"]

    def broken(x):
        raise RuntimeError("lexicon unreadable")

    monkeypatch.setattr(single_valued, "slots_said", broken)
    index.apply(location, put=[item(7, "The user lives in Porto")], generation=None)
    assert "m_7" in {i.id for i in index.items(location)} and "m_7" not in ids(index.filling(location, ["LIVE"], mine))


def test_the_index_files_each_event_under_the_full_dates_it_names(location, monkeypatch):
    """"July 18", "7/18" and "7月18日" are one date: an event is found by it however it was worded (the write path's
    lookup of an event told far apart, `occurrence.dates`); an index written before events had dates filed gets them
    at its rebuild."""
    import sqlite3

    from automem.core import index_file, single_valued

    def ids(items):
        return [i.id for i in items]

    mems = [item(1, "The user is on vacation from July 7 to July 18.", wing="episodic"),
            item(2, "用户7月18日去北京出差", wing="episodic"), item(3, "Dentist on Friday at 3pm", wing="episodic"),
            item(4, "PTO 7/7 through 7/18", wing="episodic", profile="other"),
            item(5, "The user's birthday is on July 18.")]  # a persona memory files attributes, not dates
    index.apply(location, put=mems, generation=None)
    mine = {"profile": "default"}
    assert ids(index.filling(location, ["date:07-18"], mine)) == ["m_2", "m_1"]
    assert ids(index.filling(location, ["date:07-07"], {"profile": "other"})) == ["m_4"]
    # and under the kinds of event they tell (occurrence.kinds): a vacation, PTO, a business trip, an appointment
    assert ids(index.filling(location, ["kind:VACATION"], mine)) == ["m_1"]
    assert ids(index.filling(location, ["kind:TRIP", "kind:DENTIST"], mine)) == ["m_3", "m_2"]
    conn = sqlite3.connect(str(index.index_path(location)))
    conn.execute("UPDATE memories SET slots = '' WHERE wing = 'episodic'")  # as INDEX_VERSION 10 wrote events
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('version', '10')")
    conn.commit()
    conn.close()
    assert ids(index.filling(location, ["date:07-18"], mine)) == []
    index.rebuild(location, mems, "9")
    assert ids(index.filling(location, ["date:07-18"], mine)) == ["m_2", "m_1"]
    # a rebuild of a current index reads no unchanged text again (a server's index is rebuilt every minute)
    seen = []
    real = single_valued.filed_under
    monkeypatch.setattr(single_valued, "filed_under", lambda x, wing: seen.append(x.text) or real(x, wing))
    index.rebuild(location, mems, "10")
    assert seen == [] and ids(index.filling(location, ["date:07-18"], mine)) == ["m_2", "m_1"]
    index.rebuild(location, [*mems, item(6, "Dinner with Ana on 7/18", wing="episodic")], "11")
    assert seen == ["Dinner with Ana on 7/18"]  # a text it has not seen is read
    # an index filed by another lexicon (what a memory is filed under comes of it) reads every text again
    assert index.INDEX_VERSION.startswith(index_file.LAYOUT + ".")
    from automem.core import tokens

    assert index_file.LEXICON_FILE == tokens.LEXICON_FILE  # the one the analysis reads
    conn = sqlite3.connect(str(index.index_path(location)))
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (index_file.LAYOUT + ".00000000",))
    conn.commit()
    conn.close()
    seen.clear()
    index.rebuild(location, mems, "12")
    assert sorted(seen) == sorted(m.text for m in mems)
    assert ids(index.filling(location, ["date:07-18"], mine)) == ["m_2", "m_1"]


def test_the_index_knows_which_persona_memories_are_about_the_user(location, monkeypatch):
    mems = [item(1, "用户在西安一所高中教物理"), item(2, "The user's wife runs a flower shop near the Bell Tower"),
            item(3, "The user is lactose intolerant"), item(4, "用户的父亲去年做了心脏手术"),
            item(5, "Use SI units throughout", wing="instruction"), item(6, "Anna likes green tea")]
    index.apply(location, put=mems, generation=None)
    about = {i.id: i.about_user for i in index.items(location)}
    assert about == {"m_1": 1, "m_2": 0, "m_3": 1, "m_4": 0, "m_5": 0, "m_6": 0}
    index.rebuild(location, mems, "7")
    assert {i.id: i.about_user for i in index.items(location)} == about
    # a rebuild (a Chroma server's index: every minute) analyses only texts it has not seen
    from automem.core import analysis

    seen = []
    monkeypatch.setattr(analysis, "is_about_user", lambda text: seen.append(text) or True)
    changed = item(3, "The user is lactose intolerant and drinks oat milk")
    index.rebuild(location, [*mems[:2], changed, *mems[3:]], "8")
    assert seen == [changed.text]
    assert {i.id: i.about_user for i in index.items(location)} == about
    # the analysis failing never fails the write: the memory is indexed, only without the hint

    def broken(text):
        raise RuntimeError("lexicon unreadable")

    monkeypatch.setattr(analysis, "is_about_user", broken)
    index.apply(location, put=[item(7, "The user plays the cello")], generation=None)
    assert {i.id: i.about_user for i in index.items(location)}["m_7"] == 0
    monkeypatch.undo()
    # the block's candidates hold the newest facts about the user even behind many newer ones about others
    others = [item(100 + i, f"The user's colleague number {i} drinks tea", t=10_000 + i) for i in range(10)]
    index.apply(location, put=others, generation=None)
    got = {i.id for i in index.block_candidates(location, {"profile": "default"}, per_signal=3)}
    assert {"m_1", "m_3"} <= got and len(got) == 5


def test_keyword_prefetch_finds_the_editor_memory_for_the_seed_question(store, location, config):
    [vim, py, _] = remember(store, [Candidate("用户习惯使用vim编辑器", "user", "default", room="cli"),
                                    Candidate("项目统一使用Python 3.11", "instruction", "default", room="cli"),
                                    Candidate("用户住在上海", "user", "default", room="cli")])
    chosen = recall.select_prefetch_keyword(location, "你知道我用什么编辑器吗？", "default", config)
    assert [i.id for i in chosen] == [vim.id]
    chosen = recall.select_prefetch_keyword(location, "which python version?", "default", config)
    assert [i.id for i in chosen] == [py.id]
    assert recall.select_prefetch_keyword(location, "你好", "default", config) == []
    assert recall.select_prefetch_keyword(location, "你知道我用什么编辑器吗？", "default", config,
                                          exclude=[vim.id]) == []


def test_segmentation_reads_chinese_and_english_and_questions_keep_only_topic_words():
    assert index.segment("用户用vim") == "用 户 用 用户 户用 vim"
    assert index.query_terms("What editor does the user use?") == ["editor", "user"]
    assert "编辑" in index.query_terms("你知道我用什么编辑器吗？") and "什么" not in index.query_terms("什么编辑器")
    assert index.match_expression(['a"b', "c"]) == '"a""b" OR "c"'


def test_the_index_is_written_by_every_write_and_read_without_opening_chroma(location, config):
    from automem.core.store import Store

    store = Store(location, config)
    remember(store, [Candidate("用户习惯使用vim编辑器", "user", "default", room="cli"),
                     Candidate("日期必须是RFC3339格式", "instruction", "blog-writer", room="cli"),
                     Candidate("用户喜欢暗色主题", "user", "blog-writer", room="cli")])
    # no close(): a long-lived session's writes are readable at once
    if config.chroma_url:
        store.ensure_index()  # on a server (other machines write too) the index is a cache its first reader builds
    assert {i.text for i in index.items(location)} == \
        {"用户习惯使用vim编辑器", "日期必须是RFC3339格式", "用户喜欢暗色主题"}

    def no_store():
        raise AssertionError("a fresh index must not open the store")

    text, ids = recall.system_prompt_block(location, config, open_store=no_store)
    assert "vim" in text and "RFC3339" in text and "暗色" not in text and len(ids) == 2
    other = Location(location.root, "blog-writer")
    text, _ = recall.system_prompt_block(other, config, open_store=no_store)
    assert "暗色" in text and "RFC3339" in text and "vim" not in text
    store.close()


@pytest.mark.embedded_only("freshness follows the embedded store's generation file")
def test_a_stale_index_is_rebuilt_and_forgotten_memories_leave_it(location, config):
    from automem.core.store import Store

    store = Store(location, config)
    [d] = remember(store, [Candidate("用户习惯使用vim编辑器", "user", "default", room="cli")])
    store.close()
    assert "vim" in recall.system_prompt_block(location, config)[0]
    assert index.is_fresh(location, store.generation())
    # A writer that died between its index half and its Chroma half: the index stays pending, not fresh.
    store = Store(location, config)
    store._bump_generation = lambda: None  # the write "dies" before its generation moves on
    remember(store, [Candidate("用户住在上海", "user", "default", room="cli")])
    store.close()
    assert not index.is_fresh(location, Store(location, config).generation())
    text, ids = recall.system_prompt_block(location, config)
    assert "上海" in text and "vim" in text
    assert index.is_fresh(location, Store(location, config).generation())
    # A forget removes the words from the index at once, and from every page of its file.
    store = Store(location, config)
    store.forget([d.id])
    assert index.is_fresh(location, store.generation())
    assert "vim" not in recall.system_prompt_block(location, config)[0]
    assert b"vim" not in index.index_path(location).read_bytes()
    store.close()


def test_a_corrupt_index_is_rebuilt(store, location, config):
    remember(store, [Candidate("用户习惯使用vim编辑器", "user", "default", room="cli")])
    index.index_path(location).write_bytes(b"not a database")
    assert "vim" in recall.system_prompt_block(location, config, open_store=lambda: store)[0]
    assert index.is_fresh(location, store.generation() if store.backend == "embedded" else None)


def test_a_store_from_an_older_automem_gets_its_index_on_first_read(store, location, config):
    remember(store, [Candidate("用户习惯使用vim编辑器", "user", "default", room="cli")])
    index.index_path(location).unlink()
    assert "vim" in recall.system_prompt_block(location, config, open_store=lambda: store)[0]


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


def test_an_index_of_another_layout_is_rebuilt_and_never_written_into(store, location, config):
    import sqlite3

    remember(store, [Candidate("用户习惯使用vim编辑器", "user", "default", room="cli")])
    conn = sqlite3.connect(str(index.index_path(location)))
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'version'")  # an older automem wrote it
    conn.execute("ALTER TABLE memories DROP COLUMN task_id")
    conn.commit()
    conn.close()
    remember(store, [Candidate("用户住在上海", "user", "default", room="cli")])  # a write leaves it alone, stale
    assert not index.is_fresh(location, store.generation() if store.backend == "embedded" else None)
    text = recall.system_prompt_block(location, config, open_store=lambda: store)[0]
    assert "vim" in text and "上海" in text
    assert index.stamp_of(location)[0] and index.is_fresh(location, store.generation() if store.backend == "embedded"
                                                          else None)


def test_keyword_search_skips_terms_most_of_a_large_store_holds_but_still_weighs_them(location):
    # 2,400 memories say "coffee" (past COMMON_DF): scoring that term would read all of them, and its cost would
    # grow with the store. The rare word finds the candidates; the common one still counts in their coverage.
    common = [item(i, f"The user had coffee number {i} at the office", profile="default" if i % 2 else "work")
              for i in range(2400)]
    rare = [item(5000 + i, f"The user likes coffee with cardamom, cup {i}") for i in range(3)]
    index.apply(location, put=common + rare, generation=None)
    assert index.COMMON_DF < 2400
    where = {"profile": "default"}
    hits, weights = index.keyword_search(location, "coffee with cardamom", where, limit=10)
    assert {h.id for h, _ in hits} == {r.id for r in rare}
    assert weights["coffee"] < weights["cardamom"]
    assert index.coverage(weights, rare[0].text) == pytest.approx(1.0)
    assert 0 < index.coverage(weights, common[1].text) < 0.3
    # The visible frequency of a common term is estimated from its share of the store (half is visible here).
    n_visible = 1200 + 3
    assert weights["coffee"] == pytest.approx(
        math.log(1 + (n_visible - index.DF_CAP + 0.5) / (index.DF_CAP + 0.5)), rel=0.01)
    # When every term of the question is that common, the rarest ones are still searched: never nothing.
    hits, _ = index.keyword_search(location, "coffee", where, limit=5)
    assert len(hits) == 5 and all(h.profile == "default" for h, _ in hits)


def test_block_candidates_walk_each_signal_in_order_and_find_an_old_often_recalled_memory(location):
    mems = [item(i, f"The user likes tea number {i}", t=1000 + i) for i in range(40)]
    index.apply(location, put=mems, generation=None)
    for _ in range(3):
        index.note_recalled(location, [mems[0].id])  # the oldest, recalled three times
    index.note_recalled(location, [mems[1].id, "m_gone"])  # a count for a memory the index no longer holds
    got = {i.id for i in index.block_candidates(location, {"profile": "default"}, per_signal=5)}
    newest = {m.id for m in mems[-5:]}
    assert got == newest | {mems[0].id, mems[1].id}
    # the recalled ones come out of the recalls table in count order, not by scanning every memory
    assert [i.id for i in index.block_candidates(location, {"profile": "default"}, per_signal=1)
            if i.id not in newest] == [mems[0].id]


def test_the_tally_counts_what_a_reader_may_see_through_every_kind_of_write(location):
    import sqlite3

    from automem.core import index_file, index_reads

    def counted(where):
        conn = index_file.connect_ro(location)
        try:
            cond, params = index.where_sql(where)
            by_rows = conn.execute(f"SELECT COUNT(*) FROM memories m WHERE {cond}", params).fetchone()[0]
            return index_reads._visible_count(conn, cond, params, tallied=True), by_rows
        finally:
            conn.close()

    where = {"$and": [{"status": "active"}, {"scope": ""}, {"$or": [{"profile": "default"}, {"wing": "instruction"}]}]}
    mems = [item(i, f"Memory number {i} about tea", wing=("user", "instruction", "episodic")[i % 3],
                 profile=("default", "work")[i % 2]) for i in range(30)]
    index.apply(location, put=mems, generation=None)
    assert counted(where)[0] == counted(where)[1] == 20
    moved = RecallItem(**{**mems[0].__dict__, "scope": "user:telegram:1"})  # the same memory, now in a person's scope
    index.apply(location, put=[moved], drop=[mems[2].id, mems[3].id, "m_unknown"], generation=None)
    a, b = counted(where)
    assert a == b == 18  # the moved one and the dropped default one leave the owner's view (m_3 was work's)
    # an index from before the tally: readers count rows until its next writer fills the tally once
    conn = sqlite3.connect(str(index.index_path(location)))
    conn.execute("DELETE FROM meta WHERE key = 'tally'")
    conn.execute("DELETE FROM tally")
    conn.commit()
    conn.close()
    hits, weights = index.keyword_search(location, "tea", where, limit=3)
    assert hits and weights["tea"] > 0  # answered by counting rows
    index.apply(location, put=[item(99, "One more memory about tea")], generation=None)
    a, b = counted(where)
    assert a == b == 19
    index.rebuild(location, mems, "7")
    a, b = counted(where)
    assert a == b == 20


def test_a_store_that_was_opened_but_given_nothing_has_an_index_so_hermes_never_loads_chroma_for_it(tmp_path):
    # The first session's drainer opens the store and may store nothing; the next Hermes start must not load
    # Chroma to rebuild an index of nothing.
    from automem.core.store import Store

    location = Location(tmp_path / "fresh-root", "default")
    store = Store(location, Config())
    assert store.count() == 0
    store.close()
    assert (location.chroma_dir / "chroma.sqlite3").exists()

    def no_store():
        raise AssertionError("the start path opened the store")

    text, ids = recall.system_prompt_block(location, Config(), open_store=no_store)
    assert ids == [] and index.is_fresh(location, 0)


# -- nothing injected twice (issue 29) -------------------------------------------------------------------------------
def test_the_block_never_carries_two_memories_with_the_same_normalised_text():
    """The owner's instruction and a person's own copy of it are two memories (decisions never cross people); a
    reader who sees both gets the fact once, the one ranked first."""
    items = [item(1, "Always answer in English.", "instruction"),
             item(2, "always answer in  English", "instruction"),
             item(3, "用户住在上海", "user"), item(4, "用户住在上海。", "user"), item(5, "用户喜欢暗色主题", "user")]
    items[1].scope = "user:telegram:7"
    chosen = recall.select_block(items, "default", Config(), scopes=("user:telegram:7", ""))
    assert sorted(i.id for i in chosen) == ["m_2", "m_4", "m_5"]


def test_a_prefetch_never_carries_the_same_fact_twice(store, location, config):
    remember(store, [Candidate("Always answer in English.", "instruction", "default", room="cli")])
    remember(store, [Candidate("always answer in English", "instruction", "default", room="cli",
                               scope="user:telegram:7")])
    scopes = ("user:telegram:7",)
    for warm in (store, None):
        text, ids = recall.prefetch_block(location, config, "which language should answers be in? English?",
                                          store=warm, scopes=scopes)
        assert len(ids) == 1 and text.lower().count("answer in english") == 1, text
    chosen = recall.select_prefetch_keyword(location, "answer in English", "default", config, scopes=scopes)
    assert len(chosen) == 1


def test_every_index_read_answers_empty_without_an_index_on_a_broken_one_and_on_a_filter_it_cannot_hold(location):
    import sqlite3

    from automem.core import index_sync

    where = {"profile": "default"}
    bad = {"no_such_field": "x"}  # a filter on a field the index does not hold

    def reads(where):
        return {"items": index.items(location, where), "visible_ids": index.visible_ids(location, ["m_1"], where),
                "block_candidates": index.block_candidates(location, where),
                "keyword_search": index.keyword_search(location, "tea", where), "page": index.page(location, where),
                "scopes": index.scopes(location, "default"), "counts": index.counts(location),
                "waiting": index.waiting(location), "count_waiting": index.count_waiting(location),
                "meta_of": index.meta_of(location), "known_ids": index_sync.known_ids(location),
                "raced": index.raced(location, ["m_1"]), "stamp_of": index.stamp_of(location),
                "covered": index.covered(location), "covered_ids": index.covered_ids(location)}

    empty = {"items": [], "visible_ids": None, "block_candidates": [], "keyword_search": ([], {}), "page": None,
             "scopes": None, "counts": {"owner": {}, "others": {}}, "waiting": [], "count_waiting": {},
             "meta_of": {}, "known_ids": None, "raced": set(), "stamp_of": ("", 0.0), "covered": None,
             "covered_ids": None}
    assert reads(where) == empty  # no index yet
    assert reads(bad) == empty  # no index: the filter is never looked at
    index.apply(location, put=[item(1, "The user drinks tea")], generation=0)  # a new embedded store's first write
    got = reads(where)
    assert got["stamp_of"][0] == "pending:0" and got["covered"] == ("pending:0", 1)
    assert [i.id for i in got["items"]] == ["m_1"] and got["visible_ids"] == {"m_1"}
    assert [h.id for h, _ in got["keyword_search"][0]] == ["m_1"] and got["page"][1] == 1
    assert got["scopes"] == {"": 1} and got["counts"]["owner"] == {"default": {"user": 1}}
    # a filter the index cannot answer: the readers whose caller reads the store instead say so (None); the others
    # raise, as a caller's mistake
    assert index.visible_ids(location, ["m_1"], bad) is None and index.page(location, bad) is None
    for read in (index.items, index.block_candidates, lambda loc, w: index.keyword_search(loc, "tea", w)):
        with pytest.raises(ValueError, match="no column 'no_such_field'"):
            read(location, bad)
    # a broken index (its tables gone behind its back, the meta table left): every read answers empty, none raises
    conn = sqlite3.connect(str(index.index_path(location)))
    for table in ("words", "tally", "recalls", "known", "memories"):
        conn.execute(f"DROP TABLE {table}")
    conn.commit()
    conn.close()
    got = reads(where)
    assert got["stamp_of"][0] == "pending:0" and got["meta_of"]["version"] == index.INDEX_VERSION  # meta still reads
    assert {k: v for k, v in got.items() if k not in ("stamp_of", "meta_of")} == {
        k: v for k, v in empty.items() if k not in ("stamp_of", "meta_of")}
