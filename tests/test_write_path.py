"""The write path keeps every fact: events never supersede each other, a batch decides each line as alone, the judge
settles what the rules cannot (outside the write lock, re-checked under it), and a failed judge changes nothing.

Real ChromaDB on disk, the offline embeddings, and for the judge a scripted OpenAI-compatible server on 127.0.0.1
(tests/support/fake_llm.py) reached through the real `openai` backend.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

import pytest

from automem.cli import main
from automem.config import Config
from automem.core.dedup import CONTROLS
from automem.core.store import Store
from automem.core.write_path import RELATED_TO, Candidate, remember
from automem.extract.llm import OpenAIBackend
from automem.extract.pipeline import make_judge
from automem.log import read_events
from automem.paths import Location
from tests.support.fake_llm import FakeLLM

REPO = Path(__file__).resolve().parent.parent
JUDGE = "记忆去重助手"  # in the judge's system prompt


def judge_config(url: str, **extra) -> Config:
    return Config(extract_backend="openai", extract_base_url=url, extract_api_key="judge-key", extract_timeout=30.0,
                  **extra)


def judge_requests(llm: FakeLLM) -> list[list[dict]]:
    """The pairs of every judge call the fake received, without the control pair (`dedup.control_for`)."""
    return [[p for p in json.loads(r["body"]["messages"][1]["content"]) if p["old"] not in CONTROL_TEXTS]
            for r in llm.chat_requests() if JUDGE in r["body"]["messages"][0]["content"]]


CONTROL_TEXTS = {text for choices in CONTROLS.values() for text, _ in choices}


# -- events ------------------------------------------------------------------------------------------------------
EVENTS = [
    # blog posts, many of one shape
    "发布了博客文章《Rust 入门第一篇》，首周阅读 3200", "发布了博客文章《Rust 入门第二篇》，首周阅读 4100",
    "发布了博客文章《Go 并发模式》，首周阅读 2800", "Published the blog post 'Why I moved to Neovim', 1,900 readers",
    "Published the blog post 'Async Rust in practice', 2,400 readers", "写完了关于家庭理财的博客草稿",
    "发布了关于家庭理财的博客", "Drafted a post about learning to swim at forty", "博客这个月新增了300个订阅",
    "The post about burnout was shared on Hacker News", "那篇讲理财误区的文章被公众号转载了",
    "Wrote a guest post for the Rust Weekly newsletter", "Wrote a guest post for the Go Weekly newsletter",
    "给博客换了新的主题配色", "Moved the blog from Hexo to Astro",
    # fixes
    "修复了安卓端闪退的问题", "修复了安卓端卡顿的问题", "修复了购物车数量为负数的bug",
    "Fixed the timezone bug in the report scheduler", "Fixed the N+1 query on the dashboard page",
    "Fixed the N+1 query on the invoices page", "修好了登录页在 Safari 上白屏的问题",
    "Fixed the memory leak in the image resizer", "修复了导出 CSV 时中文乱码的问题",
    "Fixed the flaky test in the payments module",
    # deploys
    "部署了网关 v2.3 到生产环境", "部署了网关 v2.4 到生产环境",
    "Deployed v2.0.1 of the notification service to production",
    "Deployed v2.0.1 of the notification service to staging", "今天上午部署了网关 1.4.0", "今天下午部署了网关 1.4.1",
    "Rolled back the 3.1.4 release of the web client", "把 blog.example.net 的 DNS 解析切到了新服务器",
    "给移动端仓库配好了 CI", "Set up Dependabot for the mobile repo", "Upgraded the Postgres cluster from 14 to 16",
    "把 Redis 从 5.0 升到了 7.2", "Renewed the SSL certificate for admin.example.io",
    "Renewed the SSL certificate for status.example.io", "Tagged release 5.2.0 on GitHub",
    # reviews
    "Reviewed PR #2201 for the checkout flow", "Reviewed PR #2210 for the checkout flow", "评审了支付模块的重构方案",
    "评审了搜索服务的缓存方案", "Reviewed the onboarding docs with the design team", "给小林的 PR 提了三条修改意见",
    "Reviewed the Q3 roadmap with leadership", "审核了新同事写的数据库迁移脚本",
    "Reviewed the security audit report", "Reviewed the API rate-limit proposal",
    # life events of the same shape
    "用户去了趟敦煌", "用户又去了趟敦煌", "The cat threw up this morning", "The cat threw up again this evening",
    "用户周六去爬了香山", "用户周日去爬了八达岭长城",
    "The user ran a 5K in 26 minutes", "The user ran a 10K in 55 minutes",
    "用户交了第三章的作业", "用户交了第四章的作业",
]


def test_sixty_distinct_events_added_one_by_one_all_stay_active(store):
    assert len(EVENTS) == 60 and len(set(EVENTS)) == 60
    decisions = [remember(store, [Candidate(text, wing="episodic", room="auto-extract")])[0] for text in EVENTS]
    assert [d.action for d in decisions if d.action != "new"] == [], [
        (d.text, d.action, d.reason) for d in decisions if d.action != "new"]
    active = store.list(profile="default", wing="episodic")
    assert len(active) == 60 and all(m.status == "active" for m in active)
    # ...and the same event restated is still one memory
    [again] = remember(store, [Candidate("今天上午部署了网关 1.4.0 ", wing="episodic", room="auto-extract")])
    assert again.action == "duplicate"


# -- a batch decides each line as alone -------------------------------------------------------------------------
MIXED = [
    {"text": "用户习惯使用vim编辑器", "profile": "alice"},
    {"text": "我习惯用vim编辑器", "profile": "bob"},  # alice's wording: bob cannot see it
    {"text": "我习惯用vim编辑器", "profile": "alice"},  # ...alice can: a duplicate of her line 1
    {"text": "项目统一用Python 3.11", "wing": "instruction", "profile": "alice"},
    {"text": "项目改用Python 3.12", "wing": "instruction", "profile": "bob"},  # the shared wing: an update
    {"text": "用户住在上海", "profile": "bob"},
    {"text": "用户住在上海", "profile": "carol"},
    {"text": "Deployed v2.3 of the gateway", "wing": "episodic", "profile": "alice"},
    {"text": "Deployed v2.3 of the gateway", "wing": "episodic", "profile": "bob"},
    {"text": "Deployed v2.4 of the gateway", "wing": "episodic", "profile": "alice"},
]


def _decisions(out: str) -> list[tuple]:
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [(r["decision"], r["profile"], r["wing"], r["text"], r["matched_id"] if r["decision"] != "new" else None)
            for r in rows]


def test_a_mixed_profile_batch_decides_each_line_exactly_as_adding_it_alone(capsys, tmp_path):
    batch_root, alone_root = tmp_path / "batch", tmp_path / "alone"
    batch_root.mkdir(), alone_root.mkdir()
    lines = tmp_path / "mixed.jsonl"
    lines.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in MIXED), encoding="utf-8")
    assert main(["add", "--file", str(lines), "--json", "--hermes-home", str(batch_root)]) == 0
    batch = _decisions(capsys.readouterr().out)
    alone = []
    for row in MIXED:
        assert main(["add", row["text"], "--wing", row.get("wing", "user"), "--profile", row["profile"], "--json",
                     "--hermes-home", str(alone_root)]) == 0
        alone += _decisions(capsys.readouterr().out)
    assert batch == alone
    assert [d[0] for d in batch] == ["new", "new", "duplicate", "new", "update", "new", "new", "new", "new", "new"]


# -- the judge ---------------------------------------------------------------------------------------------------
def test_the_judge_gets_every_unsure_pair_in_one_call_and_nothing_sure(store):
    remember(store, [Candidate("用户住在上海"), Candidate("用户习惯使用vim编辑器"),
                     Candidate("The user is allergic to bee stings")])
    with FakeLLM([{"match": {"system": JUDGE}, "json": ["update", "new", "new"]}]) as llm:
        judge = make_judge(OpenAIBackend(judge_config(llm.url)), details := {})
        out = remember(store, [Candidate("用户住在北京"),  # the rules: new; the judge: update
                               Candidate("我习惯用vim编辑器"),  # the same words: sure, not asked
                               Candidate("The user is allergic to wasp stings"),  # the judge: new
                               Candidate("用户每周去两次健身房"),  # 0.74 from 用户住在北京, of this batch: not asked
                               Candidate("Deploys go out on Tuesdays after the standup")],  # nothing near: not asked
                       judge=judge)
        calls = judge_requests(llm)
    # each candidate meets at most `dedup_judge_neighbours` (2) stored memories: the related ones first, then those
    # beyond the related distance (0.73 here, within 0.75), where a slot changed in far words would go unseen
    assert len(calls) == 1 and [(p["new"], p["old"]) for p in calls[0]] == [
        ("用户住在北京", "用户住在上海"), ("用户住在北京", "用户习惯使用vim编辑器"),
        ("The user is allergic to wasp stings", "The user is allergic to bee stings")]
    assert [d.action for d in out] == ["update", "duplicate", "new", "new", "new"]
    # ...and the control pair, since one of them is far (`dedup.settle`)
    assert out[0].reason.startswith("judge: update") and details["judge_pairs"] == 4
    stored = {m.text: m for m in store.list(profile="default")}
    assert "用户住在上海" not in stored  # superseded on the judge's word
    assert not stored["The user is allergic to wasp stings"].extra.get(RELATED_TO)  # judged: nothing to revisit
    assert not stored["用户每周去两次健身房"].extra.get(RELATED_TO) and out[3].matched_id is None  # nothing ties them


def test_a_single_valued_fact_changed_in_far_words_reaches_the_judge_now_or_the_next_one(store):
    """"banks with Chase" / "moved every account over to Capital One" share no word and sit 0.67 apart, beyond the
    related distance (0.62), where unrelated memories begin: no rule ties them. A judge is asked in the call it makes
    anyway; without one both stay, unlinked (they may well be unrelated), and the pair waits for the next judge
    (`maybe_updates`), which is asked whether it is a new value and nothing else."""
    from automem.core.memory import MAYBE_UPDATES
    from automem.core.write_path import settle_waiting, waiting_pairs
    from automem.text import normalise

    old = "The user banks with Chase."
    new = "The user moved every account over to Capital One and keeps no money elsewhere."
    remember(store, [Candidate(old, profile=p) for p in ("offline", "judged", "wrong")])
    for profile in ("offline", "wrong"):
        [offline] = remember(store, [Candidate(new, profile=profile)])
        assert offline.action == "new" and offline.matched_id is None
        stored = {m.text: m for m in store.list(profile=profile)}
        assert not stored[normalise(new)].extra.get(RELATED_TO)  # no link: recall and an update's cluster ignore it
        assert stored[normalise(new)].extra[MAYBE_UPDATES] == stored[normalise(old)].id
        assert [(n.text, o.text) for n, o in waiting_pairs(store, profile)] == [(normalise(new), normalise(old))]
    # the next judge settles it: "update" supersedes Chase; a "duplicate" for a far pair drops nothing
    assert [s["answer"] for s in settle_waiting(store, lambda pairs: ["update"] * len(pairs), "offline")] == ["update"]
    assert [m.text for m in store.list(profile="offline")] == [normalise(new)]
    assert [s["answer"] for s in settle_waiting(store, lambda pairs: ["duplicate"] * len(pairs), "wrong")] == ["new"]
    assert len(store.list(profile="wrong")) == 2 and waiting_pairs(store, "wrong") == []
    assert not {m.text: m for m in store.list(profile="wrong")}[normalise(new)].extra.get(MAYBE_UPDATES)
    with FakeLLM([{"match": {"system": JUDGE}, "json": ["update"]}]) as llm:
        judge = make_judge(OpenAIBackend(judge_config(llm.url)), {})
        [judged] = remember(store, [Candidate(new, profile="judged")], judge=judge)
        [call] = judge_requests(llm)
    assert [(p["new"], p["old"]) for p in call] == [(normalise(new), normalise(old))]
    assert judged.action == "update" and judged.reason.startswith("judge: update")
    assert [m.text for m in store.list(profile="judged")] == [normalise(new)]


def test_a_far_restatement_is_merged_on_a_reading_judges_word_and_kept_in_the_store(store):
    """"我是谷歌的码农" restates "用户在Google做软件工程师" in no word the rules read (0.73 apart). A judge that tells
    the control pair apart in the same call is taken at its word: the candidate is merged into the stored one, and
    kept as a merged record whose history names it, so its words are still in the store. A judge that says "duplicate"
    to everything drops nothing: both stay."""
    from automem.core.memory import OWNER, memory_id
    from automem.text import normalise

    old, new = "用户在Google做软件工程师", "我是谷歌的码农"
    for profile in ("reading", "blanket"):
        remember(store, [Candidate(old, profile=profile)])
    reading = {"per_item": {"answers": [[normalise(new), normalise(old), "duplicate"]], "default": "new"}}
    with FakeLLM([{"match": {"system": JUDGE}, **reading}]) as llm:
        [merged] = remember(store, [Candidate(new, profile="reading")],
                            judge=make_judge(OpenAIBackend(judge_config(llm.url)), {}))
        [call] = judge_requests(llm)
        [sent] = [json.loads(r["body"]["messages"][1]["content"]) for r in llm.chat_requests()]
    assert [(p["new"], p["old"]) for p in call] == [(normalise(new), normalise(old))] and len(sent) == 2
    assert sent[1]["old"] in CONTROL_TEXTS
    assert merged.action == "duplicate" and "told the control pair apart" in merged.reason
    kept = {m.text: m for m in store.list(profile="reading")}
    assert list(kept) == [normalise(old)]
    record = store.get([memory_id("reading", "user", normalise(new), OWNER)])[0]
    assert (record.status, record.superseded_by, record.superseded_how) == ("superseded", kept[normalise(old)].id,
                                                                           "merge")
    # said again by a conversation, the merged words restate what they were merged into; said on purpose, they
    # come back (as after a forget), for a judge to settle again
    [again] = remember(store, [Candidate(new, profile="reading", room="auto-extract")])
    assert (again.action, again.matched_id) == ("duplicate", kept[normalise(old)].id)
    assert [m.text for m in store.list(profile="reading")] == [normalise(old)]
    [on_purpose] = remember(store, [Candidate(new, profile="reading", room="cli")])
    assert on_purpose.action == "new" and len(store.list(profile="reading")) == 2
    with FakeLLM([{"match": {"system": JUDGE}, "json": ["duplicate", "duplicate"]}]) as llm:
        [blanket] = remember(store, [Candidate(new, profile="blanket")],
                             judge=make_judge(OpenAIBackend(judge_config(llm.url)), {}))
    assert blanket.action == "new" and len(store.list(profile="blanket")) == 2


def test_shorthand_is_embedded_with_its_meaning_so_its_restatement_in_plain_words_is_found(store):
    """"我们俩是丁克" and "用户和伴侣决定不要孩子" share no word, and the model puts them 0.95 apart: no write would
    ever compare them. Embedded with what 丁克 means (automem/data/gloss.yaml), they stand within the related
    distance: the write compares them and asks the judge, whose "duplicate" merges them. The text stored is the
    user's own, and a question in plain words finds the shorthand."""
    from automem.core.embeddings import glossed
    from automem.text import normalise

    assert glossed("I'm OOO 12/20-1/2.") == "I'm OOO 12/20-1/2. (OOO: out of office)"
    assert glossed("cooool, ooo") == "cooool, ooo" and glossed("工资9960") == "工资9960"
    # "RN" is a nurse only in capitals: "cramming rn" is "right now"
    assert glossed("RN here, nights again") == "RN here, nights again (RN: registered nurse)"
    assert glossed("cramming rn") == "cramming rn" and "两个孩子" in glossed("我家俩娃天天闹腾")
    assert glossed("GF bread only") == "GF bread only"  # gluten-free, not a girlfriend: no guess
    assert glossed("ran my first 26.2 in Chicago") == "ran my first 26.2 in Chicago (26.2: a marathon)"
    assert glossed("paid $126.25") == "paid $126.25"
    old, new = "用户和伴侣决定不要孩子。", "我们俩是丁克。"
    a, b = store.embed([old, new])
    assert 1 - sum(x * y for x, y in zip(a, b)) < Config().dedup_related_distance
    remember(store, [Candidate(old)])
    answers = {"per_item": {"answers": [[normalise(new), normalise(old), "duplicate"]], "default": "new"}}
    with FakeLLM([{"match": {"system": JUDGE}, **answers}]) as llm:
        [d] = remember(store, [Candidate(new)], judge=make_judge(OpenAIBackend(judge_config(llm.url)), {}))
    assert d.action == "duplicate" and [m.text for m in store.list()] == [normalise(old)]
    remember(store, [Candidate("用户是个夜猫子。"), Candidate("用户喜欢喝乌龙茶。")])
    [(top, _)] = store.search(embedding=store.embed(["用户是不是习惯熬夜、很晚才睡？"])[0], k=1)
    assert top.text == normalise("用户是个夜猫子。")


# Persona memories that stand nearer to the new value than its old one does: no vector query of the write's size
# brings the old value back, only the attribute both fill.
CROWD = [
    "I'm now a fan of Austin FC.", "Austin's music scene is what I love most.", "Texas summers are too hot for me.",
    "Texas barbecue is my favourite food.", "I'm now doing all my shopping online.", "I'm now into Tex-Mex cooking.",
    "这两年一直在学吉他。", "这两年一直坚持跑步。", "这两年一直在存钱买房。", "这几年一直在练书法。",
    "最近一直在追一部美剧。", "我最近在美团上点外卖比较多。", "我最近在学做饭。", "我现在在学游泳。",
    "我现在早上六点起床。", "我现在每天都喝绿茶。",
]


@pytest.mark.parametrize("old,new", [
    ("The user lives in Chicago.", "Austin is where I've settled now."),
    ("用户住在北京。", "这两年一直在深圳打拼。"),
    ("The user works at Deloitte as an auditor.", "我跳槽了，现在在美团上班。"),
])
def test_a_slot_changed_in_far_words_is_found_by_the_attribute_not_by_distance(store, old, new):
    """"The user lives in Chicago" / "Austin is where I've settled now": 0.73 apart and more, and among other persona
    memories the old value is not one of the nearest the write compares with. The write path looks the old value up
    by the single-valued attribute both fill (the recall index's `slots`): a judge is asked whether it is the new
    value (only "update" applies), and without one the new memory waits for the next judge."""
    from automem.core.candidate import waits_for
    from automem.core.memory import MAYBE_UPDATES
    from automem.core.write_path import settle_waiting
    from automem.text import normalise

    for profile in ("offline", "judged"):
        remember(store, [Candidate(old, profile=profile)] + [Candidate(t, profile=profile) for t in CROWD])
    nearest = store.search(new, k=store.config.dedup_neighbours, profile="offline", wing="user")
    assert normalise(old) not in [m.text for m, _ in nearest]  # no distance would have found it
    old_id = {m.text: m.id for m in store.list(profile="offline")}[normalise(old)]

    [offline] = remember(store, [Candidate(new, profile="offline")])
    assert offline.action == "new"  # and maybe linked to a close one ("I'm now a fan of Austin FC"): asked too
    stored = {m.text: m for m in store.list(profile="offline")}[normalise(new)]
    assert stored.extra[MAYBE_UPDATES] == old_id and (old_id, True) in waits_for(stored)

    def judge(pairs):  # a right judge: only the old value is replaced
        return ["update" if o == normalise(old) else "new" for _, o, _ in pairs]

    answers = [s["answer"] for _ in range(3) for s in settle_waiting(store, judge, "offline")]
    assert "update" in answers and normalise(old) not in {m.text for m in store.list(profile="offline")}
    assert len(store.list(profile="offline")) == len(CROWD) + 1  # nothing else went

    asked: list[tuple[str, str, str]] = []
    [judged] = remember(store, [Candidate(new, profile="judged")],
                        judge=lambda pairs: asked.extend(pairs) or judge(pairs))
    assert (normalise(new), normalise(old), "user") in asked
    assert judged.action == "update" and normalise(old) not in {m.text for m in store.list(profile="judged")}
    assert len(store.list(profile="judged")) == len(CROWD) + 1


# Events nearer to "I'm on PTO 7/7 through 7/18" than the vacation it retells: no vector query of the write's size
# brings that one back, only the date both name.
def _store_among(store, old: str, crowd: list[str], profiles: tuple[str, ...], new: str) -> None:
    """`old` and the `crowd` of events nearer to `new` stored in each profile: no vector query of the write's size
    brings `old` back to `new`."""
    from automem.text import normalise

    for profile in profiles:
        remember(store, [Candidate(t, wing="episodic", profile=profile) for t in (old, *crowd)])
    nearest = store.search(new, k=store.config.dedup_neighbours, profile=profiles[0], wing="episodic")
    assert normalise(old) not in [m.text for m, _ in nearest]  # no distance would have found it


EVENT_CROWD = [
    "I took PTO last Friday.", "Requested PTO through HR.", "I'm offline all afternoon.",
    "I'm on the 7:18 train every morning.", "I'm on leave until Monday.", "I'm fully offline during the flight.",
    "I'm on the 7:07 bus.", "Offline through the weekend.", "I'm working late tonight.",
]


def test_an_event_told_far_apart_is_found_by_a_date_both_name_and_merged_on_a_reading_judges_word(store):
    """"I'm on PTO 7/7 through 7/18" retells "The user is on vacation from July 7 to July 18" in words 0.66 apart,
    and among other events the stored one is not one of the nearest the write compares with. The recall index files
    each event under the full dates it names: the write finds the stored one by the date, and a judge that told the
    control pair apart merges the two; one that did not, or no judge, keeps both (the new one waits)."""
    from automem.core.candidate import waits_for
    from automem.core.dedup import CONTROLS
    from automem.text import normalise

    old, new = "The user is on vacation from July 7 to July 18.", "I'm on PTO 7/7 through 7/18, fully offline."
    _store_among(store, old, EVENT_CROWD, ("offline", "blind", "judged"), new)
    old_id = {m.text: m.id for m in store.list(profile="offline")}[normalise(old)]

    [offline] = remember(store, [Candidate(new, wing="episodic", profile="offline")])
    stored = {m.text: m for m in store.list(profile="offline")}[normalise(new)]
    assert offline.action == "new" and (old_id, True) in waits_for(stored)

    def judge(pairs):  # a right judge: the same vacation; the control pair and the rest are new
        return ["duplicate" if o == normalise(old) else "new" for _, o, _ in pairs]

    controls = {text for choices in CONTROLS.values() for text, _ in choices}
    [blind] = remember(store, [Candidate(new, wing="episodic", profile="blind")],  # "duplicate" to the control too
                       judge=lambda pairs: ["duplicate" if o in controls else a for a, (_, o, _) in zip(judge(pairs),
                                                                                                      pairs)])
    assert blind.action == "new" and len(store.list(profile="blind")) == len(EVENT_CROWD) + 2
    [judged] = remember(store, [Candidate(new, wing="episodic", profile="judged")], judge=judge)
    assert judged.action == "duplicate" and normalise(old) in {m.text for m in store.list(profile="judged")}
    assert len(store.list(profile="judged")) == len(EVENT_CROWD) + 1  # the retelling is merged into the vacation


# Events nearer to "flight's cancelled, driving there instead" than the flight it calls off
KIND_CROWD = [
    "Cancelled my gym membership today.", "I'm driving to the lake this weekend.", "The road trip got cancelled.",
    "I'm driving to work today instead of biking.", "Driving to my parents' place on Sunday.",
    "The book club got cancelled this week.", "Yoga's cancelled tonight.", "I'm driving the kids to school.",
    "Cancelled the cable subscription.",
]


def test_an_event_called_off_in_far_words_finds_the_one_of_its_kind_and_a_reading_judge_applies_it(store):
    """"flight's cancelled, driving there instead" calls off "The user has a flight to Denver on November 3" in words
    no nearest-neighbour query of the write reaches among other events. The recall index files each event under its
    kinds (a flight, a wedding, 体检): an event that says it is called off or moved finds the stored one of its kind,
    and a judge that told the control pair apart supersedes it; a blind one does not, and someone else's flight
    called off is not even asked about."""
    from automem.core.dedup import CONTROLS
    from automem.text import normalise

    old, new = "The user has a flight to Denver on November 3.", "flight's cancelled, driving there instead"
    _store_among(store, old, KIND_CROWD, ("blind", "judged", "sister"), new)
    asked: list = []

    def judge(pairs):  # a right judge: the flight is called off; the control pair and the rest are new
        asked.extend(o for _, o, _ in pairs)
        return ["update" if o == normalise(old) else "new" for _, o, _ in pairs]

    controls = {text for choices in CONTROLS.values() for text, _ in choices}
    [blind] = remember(store, [Candidate(new, wing="episodic", profile="blind")],
                       judge=lambda pairs: ["update" if o in controls else a for a, (_, o, _) in zip(judge(pairs),
                                                                                                   pairs)])
    assert blind.action == "new" and normalise(old) in {m.text for m in store.list(profile="blind")}
    [judged] = remember(store, [Candidate(new, wing="episodic", profile="judged")], judge=judge)
    assert judged.action == "update" and normalise(old) not in {m.text for m in store.list(profile="judged")}
    asked.clear()
    [other] = remember(store, [Candidate("my sister's flight got cancelled, she's driving instead",
                                         wing="episodic", profile="sister")], judge=judge)
    assert other.action == "new" and normalise(old) not in asked
    assert normalise(old) in {m.text for m in store.list(profile="sister")}


def test_the_lookup_by_attribute_reads_the_writers_profile_not_anothers_shared_instructions(store):
    """Instructions are shared across profiles, but a write replaces only its own profile's old value: the lookup asks
    the index for the writer's profile, so another profile's newer instructions filling the same attribute never
    crowd its own old value out of the few it reads."""
    from automem.core.memory import OWNER


    remember(store, [Candidate("请用英文回答我", wing="instruction")])
    remember(store, [Candidate(t, wing="instruction", profile="editor")
                     for t in ("Always reply in French.", "回复请用德语", "Answer in Spanish, please.")])
    assert len([m for m in store.list(profile=None) if m.wing == "instruction"]) == 4
    found = store.filling(["REPLY_LANGUAGE"], profile="default", wings=("instruction", "user"), scope=OWNER)
    assert [m.text for m in found] == ["请用英文回答我"]
    assert len(store.filling(["REPLY_LANGUAGE"], profile="editor", wings=("instruction",), scope=OWNER)) == 3


def test_a_new_value_filed_as_persona_finds_its_own_profiles_instruction_among_other_profiles_nearer(store):
    """The sibling wing is searched for the writer's own profile: other profiles' instructions (shared, nearer to the
    new value) never crowd its own old value out of the three the search returns, so no stale value stays."""
    remember(store, [Candidate("项目统一使用Python 3.11", wing="instruction")])
    remember(store, [Candidate(t, wing="instruction", profile="coder")
                     for t in ("We moved to Python tooling from Rye", "We moved the Python linters to Ruff",
                               "Python 3.13 is on the roadmap", "We moved the Python formatter to Black")])
    assert "项目统一使用Python 3.11" in {m.text for m in store.list()}  # nearer to the new value, none replaced it
    [d] = remember(store, [Candidate("we moved to Python 3.12", wing="user")])
    assert d.action == "update" and "项目统一使用Python 3.11" not in {m.text for m in store.list()}
    assert len([m for m in store.list(profile="coder")]) == 4


@pytest.mark.parametrize("how", ["judge", "offline then settle"])
def test_an_instruction_refiled_as_persona_is_decided_against_the_instructions_too(store, how):
    """Said as an instruction, "每晚十点记得催我吃药" is filed as persona by the screening (a health fact stays
    the owner's); it restates the instruction "每天晚上10点提醒用户吃药", which is in the other wing. Decided
    against both wings, it is merged by a judge now, or linked and merged by the next one; never left beside it,
    injected twice."""
    from automem.core.write_path import settle_waiting

    old, new = "每天晚上10点提醒用户吃药。", "每晚十点记得催我吃药。"
    [first] = remember(store, [Candidate(old, wing="instruction", room="cli")])
    asked: list = []

    def judge(pairs):
        asked.extend(pairs)
        return ["duplicate" if o == old else "new" for _, o, *_ in pairs]

    [d] = remember(store, [Candidate(new, wing="instruction", room="cli")], judge=judge if how == "judge" else None)
    assert "filed as persona" in d.reason
    if how == "judge":
        assert (d.action, d.matched_id) == ("duplicate", first.id) and asked[0][:2] == (new, old)
    else:
        assert d.action == "new"
        [stored] = [m for m in store.list() if m.text == new]
        assert stored.wing == "user" and stored.extra[RELATED_TO] == first.id
        assert [s["answer"] for s in settle_waiting(store, judge, "default")] == ["duplicate"]
    assert [(m.text, m.wing) for m in store.list()] == [(old, "instruction")]


def test_a_memory_waiting_in_a_close_and_a_far_pair_has_both_settled_in_one_call(store):
    """Stored without a judge, "Austin is where I've settled now" waits with "Austin FC is the team I follow" (close:
    any answer applies) and with "The user lives in Chicago" (far, the same attribute: only an update). The next
    settle asks both in its one call and applies both answers."""
    from automem.core.candidate import waits_for
    from automem.core.write_path import settle_waiting
    from automem.text import normalise

    old, close = "The user lives in Chicago.", "Austin FC is the team I follow."
    new = "Austin is where I've settled now."
    remember(store, [Candidate(old), Candidate(close)])  # one extraction: its writer reconciled them
    [d] = remember(store, [Candidate(new)])
    stored = {m.text: m for m in store.list(profile="default")}
    ids = {t: stored[normalise(t)].id for t in (old, close)}
    assert waits_for(stored[normalise(new)]) == [(ids[close], False), (ids[old], True)]
    settled = settle_waiting(store, lambda pairs: ["update" if o == normalise(old) else "new" for _, o, _ in pairs],
                             "default")
    assert sorted((s["older"], s["answer"]) for s in settled) == sorted([(ids[close], "new"), (ids[old], "update")])
    assert sorted(m.text for m in store.list(profile="default")) == sorted([normalise(close), normalise(new)])
    assert waits_for({m.id: m for m in store.list(profile="default")}[d.id]) == []


@pytest.mark.parametrize("how", ["settle", "compact", "judge"])
@pytest.mark.parametrize("old,new,slot", [("请用英文回答我。", "以后都用日语跟我说。", "REPLY_LANGUAGE"),
                                          ("Express prices in US dollars.", "Convert all costs to euros for me.",
                                           "CURRENCY")])  # this one close: the other wing is no link either
def test_an_instruction_changed_and_filed_as_persona_still_replaces_the_old_one(store, how, old, new, slot):
    """"请用英文回答我" is an instruction; "以后都用日语跟我说" reads like a personal fact and the screening files it as
    persona (automem.core.instructions). The lookup by attribute covers the other wing: a judge is asked now, or,
    offline, the next one (the write's settle or `compact --judge`), and the old setting goes."""
    from automem.core.memory import MAYBE_UPDATES
    from automem.core.write_path import settle_waiting, waiting_pairs
    from automem.ops.compact import compact
    from automem.text import normalise

    def update(pairs):
        return ["update"] * len(pairs)

    remember(store, [Candidate(old, wing="instruction")])
    [d] = remember(store, [Candidate(new, wing="instruction")], judge=update if how == "judge" else None)
    assert d.wing == "user" and d.action == ("update" if how == "judge" else "new")
    if how != "judge":
        assert slot in d.reason
        [(newer, older)] = waiting_pairs(store, "default")
        assert (newer.text, older.text, older.wing) == (normalise(new), normalise(old), "instruction")
        assert newer.extra[MAYBE_UPDATES] == older.id
        if how == "settle":
            assert [s["answer"] for s in settle_waiting(store, update, "default")] == ["update"]
        else:
            compact(store, judge=update)
    assert [(m.text, m.wing) for m in store.list(profile="default")] == [(normalise(new), "user")]


@pytest.mark.parametrize("old,other", [
    ("The user lives in Chicago.", "My brother just settled in Austin."),  # another person's attribute
    ("用户住在北京。", "用户以前在深圳打拼过几年。"),  # a past value
    ("The user works at Deloitte as an auditor.", "The user used to work at Ramp."),
])
def test_a_look_alike_of_a_far_slot_change_never_waits_for_a_judge_as_its_new_value(store, old, other):
    """Said of the same attribute but of another holder or of the past: the lookup by attribute notes nothing for
    the next judge."""
    from automem.core.memory import MAYBE_UPDATES
    from automem.text import normalise

    remember(store, [Candidate(old, profile="offline")] + [Candidate(t, profile="offline") for t in CROWD])
    old_id = {m.text: m.id for m in store.list(profile="offline")}[normalise(old)]
    [d] = remember(store, [Candidate(other, profile="offline")])
    assert d.action == "new" and "worded far apart" not in d.reason
    assert {m.id: m for m in store.list(profile="offline")}[d.id].extra.get(MAYBE_UPDATES) != old_id


@pytest.mark.parametrize("answer", [{"status": 500}, {"text": "I think the first is a duplicate"},
                                    {"json": ["maybe"]}, {"close": True}])
def test_a_failed_or_garbled_judge_leaves_the_loss_averse_decision(store, answer):
    remember(store, [Candidate("The user is allergic to bee stings")])
    with FakeLLM([{"match": {"system": JUDGE}, **answer}]) as llm:
        judge = make_judge(OpenAIBackend(judge_config(llm.url)), {})
        [d] = remember(store, [Candidate("The user is allergic to wasp stings")], judge=judge)
        assert judge_requests(llm)
    assert d.action == "new" and not d.reason.startswith("judge:")
    [bee] = [m for m in store.list(profile="default") if "bee" in m.text]
    [wasp] = [m for m in store.list(profile="default") if "wasp" in m.text]
    assert bee.status == wasp.status == "active"
    assert wasp.extra.get(RELATED_TO) == bee.id  # nobody compared them: compact --judge may


def test_the_judge_never_lets_one_event_supersede_another(store):
    remember(store, [Candidate("Deployed v2.3 of the gateway", wing="episodic")])
    with FakeLLM([{"match": {"system": JUDGE}, "json": ["update"]}]) as llm:
        judge = make_judge(OpenAIBackend(judge_config(llm.url)), {})
        [d] = remember(store, [Candidate("Deployed v2.4 of the gateway", wing="episodic")], judge=judge)
        assert judge_requests(llm)[0][0]["kind"] == "event"
    assert d.action == "new"
    assert len(store.list(profile="default", wing="episodic")) == 2


def test_an_event_told_again_in_the_same_words_moved_and_judged_an_update_is_a_correction(store):
    """One occurrence told two ways ("from Tokyo to Seoul" / "from Seoul to Tokyo", the same Friday): the judge's
    update stands."""
    old, new = "The user flew from Tokyo to Seoul last Friday", "The user flew from Seoul to Tokyo last Friday"
    remember(store, [Candidate(old, wing="episodic")])
    with FakeLLM([{"match": {"system": JUDGE}, "json": ["update"]}]) as llm:
        judge = make_judge(OpenAIBackend(judge_config(llm.url)), {})
        [d] = remember(store, [Candidate(new, wing="episodic")], judge=judge)
    assert d.action == "update" and _texts(store, wing="episodic") == [new]


@pytest.mark.parametrize("old, new", [
    ("The user had an anniversary dinner at Nobu on Friday night.",
     "The user corrected that the anniversary meal was actually on Saturday, at a small Italian trattoria."),
    ("用户于3月5日去医院做了体检。", "用户说之前记错了，检查身体那天其实是七号周四。"),
    ("The user's Q3 report is due September 30.", "The user's Q3 report deadline was pushed to October 14."),
    ("用户的 OKR deadline 是这周五。", "用户的 OKR deadline 延到了下周三。"),
])
def test_an_event_the_candidate_says_it_corrects_or_reschedules_takes_the_judges_update(store, old, new):
    """"actually", "记错了", "pushed to", "延到" (lexicon `change.correction`): the candidate says the earlier account
    was wrong or the plan moved, so a judge's update supersedes it. Without such words two events stay two
    occurrences whatever the judge says (above)."""
    from automem.text import normalise

    remember(store, [Candidate(old, wing="episodic")])
    with FakeLLM([{"match": {"system": JUDGE}, "json": ["update"]}]) as llm:
        judge = make_judge(OpenAIBackend(judge_config(llm.url)), {})
        [d] = remember(store, [Candidate(new, wing="episodic")], judge=judge)
    assert d.action == "update" and _texts(store, wing="episodic") == [normalise(new)]


@pytest.mark.parametrize("old, new", [
    ("The user had dinner with Sam at Nopa on Friday.", "The user had dinner with Sam at Zuni on Friday."),
    ("用户这周四下午三点去字节面试。", "用户这周四下午四点去字节面试。"),
])
def test_an_event_corrected_in_one_detail_without_saying_so_takes_the_judges_update(store, old, new):
    """No correction word, nothing that says "another" (`occurrence.another_occurrence`): the judge's update is
    applied, so the agent no longer states the place or hour the user never went at."""
    from automem.text import normalise

    remember(store, [Candidate(old, wing="episodic")])
    with FakeLLM([{"match": {"system": JUDGE}, "json": ["update"]}]) as llm:
        judge = make_judge(OpenAIBackend(judge_config(llm.url)), {})
        [d] = remember(store, [Candidate(new, wing="episodic")], judge=judge)
    assert d.action == "update" and _texts(store, wing="episodic") == [normalise(new)]
    [old_memory] = [m for m in store.list(profile="default", wing="episodic", include_hidden=True)
                    if m.status == "superseded"]
    assert old_memory.superseded_by == d.id


@pytest.mark.parametrize("old, new", [
    ("The user ran the Berlin half marathon in April.", "The user ran the Berlin half marathon in April again."),
    ("My mom flew to Chengdu last week.", "My dad flew to Chengdu last week."),
    ("用户去年国庆去了日本。", "用户今年国庆去了日本。"),
    ("用户处理了工单#2231，关于支付失败。", "用户处理了工单#2298，关于支付失败。"),
])
def test_another_occurrence_stays_when_the_judge_wrongly_says_update(store, old, new):
    """"again", another person, another year, another ticket: two occurrences, kept whatever a judge says."""
    remember(store, [Candidate(old, wing="episodic")])
    with FakeLLM([{"match": {"system": JUDGE}, "json": ["update"]}]) as llm:
        judge = make_judge(OpenAIBackend(judge_config(llm.url)), {})
        [d] = remember(store, [Candidate(new, wing="episodic")], judge=judge)
        assert judge_requests(llm), "the pair was put to the judge"
    assert d.action == "new"
    assert len(store.list(profile="default", wing="episodic")) == 2


def test_a_neighbourhood_that_moved_while_the_judge_was_asked_is_decided_again(location, config):
    """Another writer stores the candidate's very text during the judge call: under the lock the write path sees
    it and says duplicate, instead of applying the judge's update to a store it did not see."""
    first, other = Store(location, config), Store(location, config)
    try:
        remember(first, [Candidate("用户住在上海")])

        def judge(pairs):
            remember(other, [Candidate("用户住在北京", room="auto-extract")])  # "another process" writes meanwhile
            return ["update"] * len(pairs)

        [d] = remember(first, [Candidate("用户住在北京")], judge=judge)
        assert d.action == "duplicate" and d.reason == "the same text is already stored"
        # where the user lives is single-valued: the other writer's line updated it
        assert {m.text: m.status for m in first.list(profile="default", include_hidden=True)} == {
            "用户住在上海": "superseded", "用户住在北京": "active"}
        assert read_events(location, "write_recheck")
    finally:
        first.close()
        other.close()


SLOW_JUDGE_ADD = """
import sys
sys.path.insert(0, {repo!r})
from automem.cli import main
sys.exit(main(["add", "用户住在北京", "--json", "--hermes-home", {root!r}]))
"""


@pytest.mark.embedded_only("the write lock is a file on this machine")
def test_a_slow_judge_does_not_block_another_process_add(capsys, root):
    """Process A's `automem add` waits 10 s for its judge; meanwhile this process's `automem add` goes through the
    same write lock at once, and A then applies its judge's answer."""
    with FakeLLM([{"match": {"system": JUDGE}, "delay": 10, "json": ["update"]}]) as llm:
        (root / "config.yaml").write_text(f"automem:\n  extract_backend: openai\n  extract_base_url: {llm.url}\n"
                                          f"  extract_api_key: judge-key\n", encoding="utf-8")
        assert main(["add", "用户住在上海", "--hermes-home", str(root)]) == 0
        capsys.readouterr()
        env = dict(os.environ, PYTHONPATH=str(REPO))
        proc = subprocess.Popen([sys.executable, "-c", SLOW_JUDGE_ADD.format(repo=str(REPO), root=str(root))],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            while not judge_requests(llm) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert judge_requests(llm), proc.communicate(timeout=30)
            # A is inside its judge call now. This add takes the write lock and returns...
            assert main(["add", "项目统一用Python 3.11", "--wing", "instruction", "--no-judge", "--json",
                         "--hermes-home", str(root)]) == 0
            assert json.loads(capsys.readouterr().out)["decision"] == "new"
            assert proc.poll() is None  # ...while A still waits for its judge
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, err
    assert json.loads(out)["decision"] == "update"
    assert len(judge_requests(llm)) == 1


# -- where the judge is used -------------------------------------------------------------------------------------
def test_automem_add_uses_the_judge_when_a_backend_is_configured_and_no_judge_skips_it(capsys, root):
    with FakeLLM([{"match": {"system": JUDGE}, "json": ["duplicate"]}]) as llm:
        (root / "config.yaml").write_text(f"automem:\n  extract_backend: openai\n  extract_base_url: {llm.url}\n"
                                          f"  extract_api_key: judge-key\n", encoding="utf-8")
        home = ["--hermes-home", str(root), "--json"]
        assert main(["add", "The user lives in Vancouver", *home]) == 0
        assert main(["add", "The user calls Vancouver home", "--no-judge", *home]) == 0
        assert not judge_requests(llm)
        assert main(["add", "Vancouver is where the user calls home", *home]) == 0
        rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["decision"] for r in rows] == ["new", "new", "duplicate"]
    assert len(judge_requests(llm)) == 1 and rows[2]["reason"].startswith("judge: duplicate")


def test_automem_add_says_so_when_the_judge_cannot_be_reached(capsys, root):
    (root / "config.yaml").write_text("automem:\n  extract_backend: openai\n  extract_base_url: http://127.0.0.1:9/v1\n"
                                      "  extract_api_key: judge-key\n  extract_timeout: 2\n", encoding="utf-8")
    assert main(["add", "The user is allergic to bee stings", "--hermes-home", str(root)]) == 0
    assert main(["add", "The user is allergic to wasp stings", "--json", "--hermes-home", str(root)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out.splitlines()[-1])["decision"] == "new"
    assert "the judge could not be asked" in captured.err and captured.err.count("\n") == 1


def test_the_agent_tool_remember_uses_the_sessions_model_as_judge(root):
    from automem.hermes.session import HermesSession

    with FakeLLM([{"match": {"system": JUDGE}, "json": ["duplicate"]}]) as llm:
        session = HermesSession(Location(root, "default"), judge_config(llm.url))
        try:
            first = json.loads(session.handle_tool("automem_remember", {"text": "用户的柯基叫豆豆",
                                                                        "category": "persona"}))
            second = json.loads(session.handle_tool("automem_remember", {"text": "用户养了一只叫豆豆的柯基",
                                                                         "category": "persona"}))
        finally:
            session.shutdown()
        assert len(judge_requests(llm)) == 1
    assert (first["decision"], second["decision"]) == ("new", "duplicate")
    assert second["reason"].startswith("judge: duplicate")


# -- compact --judge revisits related_to --------------------------------------------------------------------------
def test_compact_judge_revisits_the_pairs_stored_as_related(capsys, root):
    store = Store(Location(root, "default"), Config())
    try:
        remember(store, [Candidate("The user lives in Vancouver")])
        remember(store, [Candidate("The user calls Vancouver home")])  # a restatement the rules cannot tell
        remember(store, [Candidate("The user is allergic to bee stings")])
        remember(store, [Candidate("The user is allergic to wasp stings")])
        linked = [m for m in store.list(profile="default") if m.extra.get(RELATED_TO)]
        assert sorted(m.text for m in linked) == \
            ["The user calls Vancouver home", "The user is allergic to wasp stings"]
    finally:
        store.close()
    home = ["--hermes-home", str(root)]
    (root / "config.yaml").write_text("automem:\n  extract_backend: rules\n", encoding="utf-8")
    assert main(["compact", "--judge", *home]) == 2  # no LLM backend: one clear line
    assert "needs an LLM backend" in capsys.readouterr().err
    with FakeLLM([{"match": {"system": JUDGE}, "json": ["duplicate", "new"]}]) as llm:
        (root / "config.yaml").write_text(f"automem:\n  extract_backend: openai\n  extract_base_url: {llm.url}\n"
                                          f"  extract_api_key: judge-key\n", encoding="utf-8")
        assert main(["compact", "--judge", "--json", *home]) == 0
        rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        [pairs] = judge_requests(llm)  # one call, in write order
        assert [(p["new"], p["old"]) for p in pairs] == [
            ("The user calls Vancouver home", "The user lives in Vancouver"),
            ("The user is allergic to wasp stings", "The user is allergic to bee stings")]
        assert main(["compact", "--judge", "--json", *home]) == 0  # settled: nothing is asked again
        again = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert len(judge_requests(llm)) == 1
    merges = [r["merge"] for r in rows if "merge" in r]
    assert [(m["action"], m["superseded_text"], m["kept_text"]) for m in merges] == [
        ("duplicate", "The user calls Vancouver home", "The user lives in Vancouver")]
    assert rows[-1]["summary"]["judged"] == 2 and again[-1]["summary"]["merged"] == 0
    store = Store(Location(root, "default"), Config())
    try:
        active = {m.text: m for m in store.list(profile="default")}
    finally:
        store.close()
    assert sorted(active) == ["The user is allergic to bee stings", "The user is allergic to wasp stings",
                              "The user lives in Vancouver"]
    assert not active["The user is allergic to wasp stings"].extra.get(RELATED_TO)


def test_compact_judge_asks_a_far_pair_only_whether_it_is_a_new_value(capsys, root):
    """A pair stored far apart without a judge (`maybe_updates`): compact --judge applies an "update", and a
    "duplicate" drops nothing (only a new value was asked about)."""
    from automem.core.memory import MAYBE_UPDATES

    old = "The user banks with Chase."
    new = "The user moved every account over to Capital One and keeps no money elsewhere."
    store = Store(Location(root, "default"), Config())
    try:
        remember(store, [Candidate(old, profile=p) for p in ("a", "b")])
        remember(store, [Candidate(new, profile=p) for p in ("a", "b")])
    finally:
        store.close()
    with FakeLLM([{"match": {"system": JUDGE}, "json": ["update", "duplicate"]}]) as llm:
        (root / "config.yaml").write_text(f"automem:\n  extract_backend: openai\n  extract_base_url: {llm.url}\n"
                                          f"  extract_api_key: judge-key\n", encoding="utf-8")
        assert main(["compact", "--judge", "--json", "--hermes-home", str(root)]) == 0
        capsys.readouterr()
        [pairs] = judge_requests(llm)
        assert [p["old"] for p in pairs] == [old, old]
    store = Store(Location(root, "default"), Config())
    try:
        a, b = ({m.text: m for m in store.list(profile=p)} for p in ("a", "b"))
    finally:
        store.close()
    assert list(a) == [new]
    assert sorted(b) == sorted([old, new]) and not b[new].extra.get(MAYBE_UPDATES)


def test_compact_never_merges_what_the_judge_kept_apart(store):
    from automem.core.write_path import JUDGED_NEW
    from automem.ops.compact import compact

    [first] = remember(store, [Candidate("用户喜欢暗色主题")])
    with FakeLLM([{"match": {"system": JUDGE}, "json": ["new"]}]) as llm:
        judge = make_judge(OpenAIBackend(judge_config(llm.url)), {})
        [second] = remember(store, [Candidate("用户偏好暗色主题")], judge=judge)  # the rules alone: a duplicate
    assert second.action == "new" and second.reason.startswith("judge: new")
    assert store.get([second.id])[0].extra[JUDGED_NEW] == first.id
    assert compact(store).merges == []
    assert len(store.list(profile="default")) == 2


# -- issue 29: no stale fact beside its update, order and roles, single-valued slots, convergence -----------------
FAILING_JUDGE = [{"match": {"system": JUDGE}, "status": 500}]


def _failing_judge(llm: FakeLLM):
    return make_judge(OpenAIBackend(judge_config(llm.url)), {})


def _texts(store, profile: str = "default", wing: str | None = None) -> list[str]:
    return sorted(m.text for m in store.list(profile=profile, wing=wing))


SEED_UPDATE = [("项目统一使用Python 3.11", "项目使用Python 3.11版本", "we moved to Python 3.12"),
               ("The project uses Python 3.11", "The project's Python version is 3.11", "We switched to Python 3.12")]


@pytest.mark.parametrize("judged", ["judge fails", "no judge"])
@pytest.mark.parametrize("old, reworded, update", SEED_UPDATE)
def test_an_update_supersedes_every_active_copy_of_the_old_value(store, old, reworded, update, judged):
    """The seed's scenario: the reworded 3.11 memory is kept as a second one (unsure), then the update comes while
    the judge is down (or there is none): no active memory may still say 3.11, and each names the update."""
    with FakeLLM(FAILING_JUDGE) as llm:
        judge = _failing_judge(llm) if judged == "judge fails" else None
        [first] = remember(store, [Candidate(old, wing="instruction")], judge=judge)
        [second] = remember(store, [Candidate(reworded, wing="instruction")], judge=judge)
        assert (first.action, second.action) == ("new", "new")  # unsure: both kept, linked
        [d] = remember(store, [Candidate(update, wing="instruction")], judge=judge)
        if judge is not None:
            assert judge_requests(llm)  # it was asked, and failed
    assert d.action == "update", d.reason
    # the only active memory is the update (the screening may file it as persona: the old value goes all the same)
    assert _texts(store) == [update]
    hidden = {m.id: m for m in store.list(profile="default", include_hidden=True)}
    assert hidden[first.id].superseded_by == hidden[second.id].superseded_by == d.id
    assert "3.11" not in " ".join(_texts(store))


@pytest.mark.parametrize("old, reworded, update", SEED_UPDATE)
def test_with_a_judge_the_update_supersedes_the_whole_cluster_in_one_call(store, old, reworded, update):
    with FakeLLM([{"match": {"system": JUDGE}, "status": 500, "times": 1},
                  {"match": {"system": JUDGE}, "json": ["update", "update"]}]) as llm:
        judge = _failing_judge(llm)
        remember(store, [Candidate(old, wing="instruction")], judge=judge)
        remember(store, [Candidate(reworded, wing="instruction")], judge=judge)  # the judge fails: kept apart
        [d] = remember(store, [Candidate(update, wing="instruction")], judge=judge)
        assert len(judge_requests(llm)) == 2
    assert d.action == "update"
    assert _texts(store) == [update]


# Two things whose names differ by a number or a suffix are two things: an update of one never touches the other.
NAMED_APART = [("北极星项目1统一使用Python 3.11", "北极星项目统一使用Python 3.11", "北极星项目1改用Python 3.12"),
               ("server1 runs Ubuntu 22.04", "server runs Ubuntu 22.04", "server1 now runs Ubuntu 24.04"),
               ("Project Atlas 2 uses Node 18", "Project Atlas uses Node 18", "Project Atlas 2 moved to Node 20")]


@pytest.mark.parametrize("judged", ["judge fails", "no judge"])
@pytest.mark.parametrize("one, other, update", NAMED_APART)
def test_an_update_of_one_named_thing_never_supersedes_another_named_alike(store, one, other, update, judged):
    with FakeLLM(FAILING_JUDGE) as llm:
        judge = _failing_judge(llm) if judged == "judge fails" else None
        remember(store, [Candidate(one, wing="instruction")], judge=judge)
        remember(store, [Candidate(other, wing="instruction")], judge=judge)
        [d] = remember(store, [Candidate(update, wing="instruction")], judge=judge)
        assert other in _texts(store), d.reason  # the other thing keeps its value
        assert one not in _texts(store) and update in _texts(store)  # the one named changes
        # and restating the other thing's value does not take back the update
        remember(store, [Candidate(other, wing="instruction")], judge=judge)
        assert update in _texts(store) and other in _texts(store)


@pytest.mark.parametrize("index_state", ["index fresh", "index stale"])
def test_an_update_follows_links_only_within_the_writers_profile_and_scope(store, index_state):
    """The cluster an update supersedes is read along `related_to` links (from the recall index when it reflects
    the store, else from Chroma by the link alone, the visibility rule applied to the records): a copy of the old
    value linked to it from another person's scope or another profile, or one already superseded, is never touched;
    the linked copy in the writer's own group goes, and so does one linked to that copy (and one in another of the
    owner's profiles: instructions are shared by them, `shared_wings`)."""
    from automem.core import index
    from automem.core.memory import Memory, memory_id

    old, reworded, further, update = ("项目统一使用Python 3.11", "项目使用Python 3.11版本", "项目用的是Python 3.11版本",
                                      "we moved to Python 3.12")
    [first] = remember(store, [Candidate(old, wing="instruction")])
    first_id = first.id

    def linked(text: str, to: str, profile: str = "default", scope: str = "", status: str = "active") -> Memory:
        return Memory(id=memory_id(profile, "instruction", text, scope), text=text, wing="instruction",
                      profile=profile, room="auto-extract", scope=scope, created_at=1, updated_at=1, status=status,
                      extra={RELATED_TO: to})

    mine = linked(reworded, first_id)
    chained = linked(further, mine.id)  # linked to the copy, not to the old memory
    shared = linked(reworded, first_id, profile="coder")
    others = [linked(reworded, first_id, scope="user:telegram:42"), linked(reworded, first_id, profile="coder",
                                                                         scope="user:telegram:42"),
              linked("项目一直用Python 3.11版本", first_id, status="superseded")]
    records = [mine, chained, shared] + others
    store.write_records(records, store.embed([m.text for m in records]))
    if index_state == "index stale":
        index.mark_stale(store.location)
    [d] = remember(store, [Candidate(update, wing="instruction")])
    assert d.action == "update", d.reason
    after = {m.id: m for m in store.get([first_id] + [m.id for m in records])}
    assert sorted(d.superseded) == sorted([first_id, mine.id, chained.id, shared.id])
    assert {after[i].superseded_by for i in d.superseded} == {d.id}
    assert [after[m.id].status for m in others] == ["active", "active", "superseded"]
    assert not after[others[2].id].superseded_by  # left as it was


@pytest.mark.parametrize("index_state", ["index fresh", "index stale"])
def test_linked_to_reads_what_the_filtered_list_reads(store, index_state):
    """`Store.linked_to` (the cluster walk's read) returns exactly the records `Store.list` returns for the link and
    the same visibility filter, from the recall index or from Chroma."""
    from automem.core import index
    from automem.core.memory import Memory, memory_id

    def rec(n: int, to: str, profile: str = "default", scope: str = "", wing: str = "instruction",
            status: str = "active") -> Memory:
        text = f"第{n}条：项目使用Python 3.11版本"
        return Memory(id=memory_id(profile, wing, text, scope), text=text, wing=wing, profile=profile,
                      room="auto-extract", scope=scope, created_at=n, updated_at=n, status=status,
                      extra={RELATED_TO: to} if to else {})

    records = [rec(1, ""), rec(2, ""), rec(3, "x1"), rec(4, "x1", scope="user:telegram:42"), rec(5, "x2", "coder"),
               rec(6, "x2", wing="user"), rec(7, "x1", status="superseded"), rec(8, "x3", "coder", wing="user"),
               rec(9, "x2", scope="chat:telegram:7")]
    store.write_records(records, store.embed([m.text for m in records]))
    if index_state == "index stale":
        index.mark_stale(store.location)
    for profile, wing, scope in [("default", "instruction", ""), ("default", "user", ""), ("coder", "user", ""),
                                 ("default", "instruction", "user:telegram:42"), ("coder", "instruction", ""),
                                 ("default", "instruction", "chat:telegram:7")]:
        flt = store.where(profile, wing=wing, scopes=(scope,), inherit=False)
        want = {m.id for link in ("x1", "x2", "x3")
                for m in store.list(profile=profile, wing=wing, where={RELATED_TO: link}, scopes=(scope,),
                                    inherit=False)}
        assert {m.id for m in store.linked_to(["x1", "x2", "x3", ""], flt)} == want, (profile, wing, scope)
    assert store.linked_to([], {}) == [] and store.linked_to(["nothing links here"], {}) == []


ORDER_ROLE = [("I prefer vim over nano", "I prefer nano over vim", "user", "update"),
              ("Alice reports to Bob", "Bob reports to Alice", "user", "update"),
              ("用户喜欢茶胜过咖啡", "用户喜欢咖啡胜过茶", "user", "update"),
              ("从北京飞上海", "从上海飞北京", "episodic", "new"),
              ("用户从北京飞上海", "用户从上海飞北京", "episodic", "new")]


@pytest.mark.parametrize("first, second, wing, verdict", ORDER_ROLE)
def test_the_same_words_in_another_order_or_role_are_never_a_duplicate_by_rule(store, first, second, wing, verdict):
    """Without a judge (or with one that fails) the pair stays two memories, linked for a later judge; with one,
    the judge decides."""
    with FakeLLM(FAILING_JUDGE) as failing, FakeLLM([{"match": {"system": JUDGE}, "json": [verdict]}]) as good:
        for profile, judge in (("offline", None), ("failing", _failing_judge(failing)),
                               ("judged", _failing_judge(good))):
            [a] = remember(store, [Candidate(first, wing=wing, profile=profile)], judge=judge)
            [b] = remember(store, [Candidate(second, wing=wing, profile=profile)], judge=judge)
            if profile == "judged":
                assert b.action == verdict and b.reason.startswith("judge:"), b.reason
                assert [(p["new"], p["old"]) for p in judge_requests(good)[-1]] == [(second, first)]
            else:
                assert b.action == "new", (profile, b.reason)
                assert store.get([b.id])[0].extra.get(RELATED_TO) == a.id  # waiting for a judge
                assert _texts(store, profile, wing) == sorted([first, second])


SINGLE_VALUED = [("The user lives in 杭州", "The user moved to 深圳"),
                 ("用户住在杭州", "用户搬到了深圳"),
                 ("The user works at Initech", "The user now works at Globex"),
                 ("用户在阿里巴巴工作", "用户现在在腾讯工作"),
                 ("用户在京东上班", "The user works at Meituan")]  # a company named in either language


@pytest.mark.parametrize("old, new", SINGLE_VALUED)
def test_a_single_valued_slot_changing_value_is_an_update_never_a_silent_second_fact(store, old, new):
    with FakeLLM(FAILING_JUDGE) as failing, FakeLLM([{"match": {"system": JUDGE}, "json": ["update"]}]) as good:
        for profile, judge in (("offline", None), ("failing", _failing_judge(failing))):
            remember(store, [Candidate(old, profile=profile)], judge=judge)
            [d] = remember(store, [Candidate(new, profile=profile)], judge=judge)
            assert d.action == "update", (profile, d.reason)
            assert _texts(store, profile) == [new]
        remember(store, [Candidate(old, profile="judged")])
        [d] = remember(store, [Candidate(new, profile="judged")], judge=_failing_judge(good))
        assert [(p["new"], p["old"]) for p in judge_requests(good)[0]] == [(new, old)]  # the judge confirms it
        assert d.action == "update" and _texts(store, "judged") == [new]


# Too far apart for the rules (another language, other words), near enough to be one slot: the judge is asked.
FAR_SLOT = [("The user is employed by Contoso", "The user joined Fabrikam as a new hire"),
            ("用户在蔚来上班", "The user works at Stripe"),
            ("用户的直属领导是李姐", "The user reports to Mr. Chen now"),
            ("The user reports to Klaus", "The user's new manager is Ingrid"),  # the slot's own word as subject
            ("The user's main editor is Sublime Text", "These days the user does all coding in Zed"),  # said as now
            ("用户的鹦鹉笼子放在阳台", "The user now keeps the parrot's cage in the study")]  # what the user holds


@pytest.mark.parametrize("old, new", FAR_SLOT)
def test_a_slot_change_the_rules_cannot_read_goes_to_the_judge_and_offline_waits_for_one(store, old, new):
    with FakeLLM([{"match": {"system": JUDGE}, "json": ["update"]}]) as good:
        remember(store, [Candidate(old, profile="judged")])
        [d] = remember(store, [Candidate(new, profile="judged")], judge=_failing_judge(good))
        assert [(p["new"], p["old"]) for p in judge_requests(good)[0]] == [(new, old)]
    assert d.action == "update" and _texts(store, "judged") == [new]
    [a] = remember(store, [Candidate(old, profile="offline")])
    [b] = remember(store, [Candidate(new, profile="offline")])
    assert b.action == "new" and _texts(store, "offline") == sorted([old, new])  # both kept ...
    assert store.get([b.id])[0].extra.get(RELATED_TO) == a.id  # ... and linked: the next judge settles it


MANY_VALUED = [("The user likes sushi", "The user likes ramen", "user"),
               ("用户对海鲜过敏", "用户对尘螨过敏", "user"),
               ("The user is allergic to latex", "The user is now allergic to shellfish", "user"),
               ("The user speaks French", "The user speaks Japanese", "user"),
               ("用户会弹吉他", "用户会打鼓", "user"),
               ("The user knows Rust", "The user knows Go", "user"),
               ("Went to the dentist on Monday", "Went to the gym on Monday", "episodic"),
               ("用户周二去了医院复查", "用户周二去了银行办卡", "episodic")]


@pytest.mark.parametrize("old, new, wing", MANY_VALUED)
def test_many_valued_facts_stay_additive(store, old, new, wing):
    with FakeLLM(FAILING_JUDGE) as failing:
        for profile, judge in (("offline", None), ("failing", _failing_judge(failing))):
            remember(store, [Candidate(old, wing=wing, profile=profile)], judge=judge)
            [d] = remember(store, [Candidate(new, wing=wing, profile=profile)], judge=judge)
            assert d.action == "new", (profile, d.reason)
            assert _texts(store, profile, wing) == sorted([old, new])


# -- convergence: what was kept apart for lack of a judge goes to the next one ---------------------------------------
OFFLINE_PAIRS = [("The user lives in Vancouver", "The user calls Vancouver home", "duplicate"),
                 ("The user is allergic to bee stings", "The user is allergic to wasp stings", "new"),
                 ("I prefer vim over nano", "I prefer nano over vim", "update")]


def _keep_apart(store: Store, pairs: Sequence[tuple[str, str, str]] = OFFLINE_PAIRS) -> None:
    """Write each pair's old text, then its new one, with no judge: the write path keeps them apart, both active,
    the new one waiting for the next judge."""
    for old, new, _ in pairs:
        remember(store, [Candidate(old)])
        remember(store, [Candidate(new)])


@contextmanager
def _waiting(root: Path) -> Iterator[tuple[Location, Store]]:
    """The default profile's store on `root` with OFFLINE_PAIRS kept apart, waiting for a judge; closed after."""
    location = Location(root, "default")
    store = Store(location, Config())
    try:
        _keep_apart(store)
        yield location, store
    finally:
        store.close()


def _answering(pairs: Sequence[tuple[str, str, str]], calls: list):
    """A judge that answers each known (new, old) pair as scripted and records every call it gets."""
    from automem.text import normalise

    answers = {(normalise(new), normalise(old)): a for old, new, a in pairs}

    def judge(batch):
        calls.append([p for p in batch if p[1] not in CONTROL_TEXTS])
        return [answers.get((new, old), "new") for new, old, *_ in batch]

    return judge


def test_pairs_kept_apart_offline_ride_along_in_the_next_judge_call(store):
    from automem.core.write_path import waiting_pairs

    _keep_apart(store)
    assert len(waiting_pairs(store, "default")) == 3
    calls: list = []
    judge = _answering(OFFLINE_PAIRS + [("用户喜欢暗色主题", "用户喜欢亮色主题", "update")], calls)
    remember(store, [Candidate("用户喜欢暗色主题")])
    [d] = remember(store, [Candidate("用户喜欢亮色主题")], judge=judge)  # this write asks the judge anyway
    assert d.action == "update" and len(calls) == 1
    asked = {(new, old) for new, old, *_ in calls[0]}
    assert {(new, old) for old, new, _ in OFFLINE_PAIRS} <= asked  # the three waiting pairs rode along
    assert waiting_pairs(store, "default") == []
    assert _texts(store) == sorted(["The user lives in Vancouver", "The user is allergic to bee stings",
                                    "The user is allergic to wasp stings", "I prefer nano over vim",
                                    "用户喜欢亮色主题"])


SHIFTS = ("The user works night shifts on weekdays and day shifts on weekends",
          "The user works day shifts on weekdays and night shifts on weekends")


@pytest.mark.parametrize("old, new", [SHIFTS, ("用户每天早上跑步", "早上用户每天都跑步")])
@pytest.mark.parametrize("answer", ["update", "new", "duplicate"])
def test_the_same_words_moved_are_kept_offline_shown_once_and_settled_by_the_next_judge(store, old, new, answer):
    """Issue 29: the same words in another order are never a duplicate by rule (the shifts swapped is a new fact the
    rules cannot read). Offline both stay, linked; recall shows only the newer; the next judge decides."""
    from automem.core import recall
    from automem.core.write_path import SAME_WORDS_AS, settle_waiting, waiting_pairs

    remember(store, [Candidate(old)])
    [d] = remember(store, [Candidate(new)])
    assert d.action == "new" and _texts(store) == sorted([old, new])
    [newer] = [m for m in store.list(profile="default") if m.text == new]
    [older] = [m for m in store.list(profile="default") if m.text == old]
    assert newer.extra[RELATED_TO] == newer.extra[SAME_WORDS_AS] == older.id
    assert [(a.id, b.id) for a, b in waiting_pairs(store, "default")] == [(newer.id, older.id)]

    block, shown = recall.system_prompt_block(store.location, store.config, lambda: store)
    assert shown == [newer.id] and new in block and old not in block
    block, shown = recall.prefetch_block(store.location, store.config, old, store=store)
    assert shown == [newer.id], block

    calls: list = []
    assert settle_waiting(store, _answering([(old, new, answer)], calls), "default")
    assert len(calls) == 1 and waiting_pairs(store, "default") == []
    kept = {"update": [new], "duplicate": [old], "new": sorted([old, new])}[answer]
    assert _texts(store) == kept
    _, shown = recall.system_prompt_block(store.location, store.config, lambda: store)
    assert sorted(shown) == sorted(m.id for m in store.list(profile="default"))  # judged new: both shown again


def test_a_judge_call_carries_a_bounded_number_of_waiting_pairs_and_the_rest_wait(store, config):
    from automem.core.write_path import waiting_pairs

    config.dedup_settle_pairs = 2
    _keep_apart(store, OFFLINE_PAIRS + [("Alice reports to Bob", "Bob reports to Alice", "update")])
    before = len(waiting_pairs(store, "default"))
    assert before == 4
    calls: list = []
    remember(store, [Candidate("用户喜欢暗色主题")])
    remember(store, [Candidate("用户喜欢亮色主题")], judge=_answering([], calls))  # "new" for every pair
    own = [old for new, old, *_ in calls[0] if new == "用户喜欢亮色主题"]
    assert len(calls) == 1 and own[0] == "用户喜欢暗色主题" and len(own) <= config.dedup_judge_neighbours
    assert len(calls[0]) == len(own) + 2  # and two waiting pairs ride along
    assert len(waiting_pairs(store, "default")) == before - 2


def test_waiting_pairs_are_never_judged_across_profiles_or_people(store):
    from automem.core.write_path import waiting_pairs

    remember(store, [Candidate("The user lives in Vancouver", profile="other")])
    remember(store, [Candidate("The user calls Vancouver home", profile="other")])
    remember(store, [Candidate("The user lives in Vancouver", scope="user:telegram:7")])
    remember(store, [Candidate("The user calls Vancouver home", scope="user:telegram:7")])
    calls: list = []
    remember(store, [Candidate("用户喜欢暗色主题")])
    remember(store, [Candidate("用户喜欢亮色主题")], judge=_answering([], calls))
    assert [(new, old) for new, old, *_ in calls[0]] == [("用户喜欢亮色主题", "用户喜欢暗色主题")]
    assert len(waiting_pairs(store, "other")) == 1


def test_stats_and_hermes_memory_status_say_how_many_pairs_wait_for_a_judge(capsys, root):
    from automem.hermes.status import status_config

    with _waiting(root):
        pass  # the pairs wait; the store is closed before the CLI opens it
    assert main(["stats", "--json", "--hermes-home", str(root)]) == 0
    assert json.loads(capsys.readouterr().out)["waiting_for_judge"] == 3
    assert main(["stats", "--hermes-home", str(root)]) == 0
    assert "waiting for a judge: 3" in capsys.readouterr().out
    assert status_config(root)["waiting for a judge"].startswith("3 pairs")


def test_a_session_settles_waiting_pairs_inside_its_one_judge_call(root):
    """The pipeline with an LLM: one extraction call and one judge call, which carries the waiting pairs."""
    from automem.extract.pipeline import extract_now

    with _waiting(root) as (location, store):
        remember(store, [Candidate("用户喜欢暗色主题")])
        # the candidate's own pairs come first in the call, then the waiting ones: all "new" here, settled all the same
        rules = [{"match": {"system": JUDGE}, "json": ["update"] + ["new"] * 10},
                 {"match": {"system": "记忆提取助手"}, "json": {"persona": ["用户喜欢亮色主题"]}}]
        with FakeLLM(rules) as llm:
            cfg = judge_config(llm.url)
            chat = [{"role": "user", "content": "我现在喜欢亮色主题"}, {"role": "assistant", "content": "好的"}]
            result = extract_now(location, chat, config=cfg, session_id="s1", store=store)
            assert result.status == "done", result.error
            assert len(llm.chat_requests()) == 2  # the extraction and one judge call, as before
            [pairs] = judge_requests(llm)
        assert pairs[0]["new"] == "用户喜欢亮色主题"
        assert {(new, old) for old, new, _ in OFFLINE_PAIRS} <= {(p["new"], p["old"]) for p in pairs}
        from automem.core.write_path import waiting_pairs

        assert waiting_pairs(store, "default") == []


def test_a_session_that_asks_the_judge_nothing_settles_waiting_pairs_at_most_once_an_hour(root):
    """The background half: no candidate of the session needed the judge, so the waiting pairs get a call of their
    own, but only once per profile and hour, and only while pairs wait."""
    from automem.core.write_path import waiting_pairs
    from automem.extract.pipeline import extract_now

    with _waiting(root) as (location, store):
        rules = [{"match": {"system": JUDGE}, "json": ["duplicate", "new", "update"]},
                 {"match": {"system": "记忆提取助手"}, "json": {"persona": ["用户每周去两次健身房"]}}]
        with FakeLLM(rules) as llm:
            cfg = judge_config(llm.url)
            chat = [{"role": "user", "content": "我每周去两次健身房"}, {"role": "assistant", "content": "好的"}]
            assert extract_now(location, chat, config=cfg, session_id="s1", store=store).status == "done"
            [pairs] = judge_requests(llm)
            assert [(p["new"], p["old"]) for p in pairs] == [(new, old) for old, new, _ in OFFLINE_PAIRS]
            assert waiting_pairs(store, "default") == []
            remember(store, [Candidate("The user is allergic to cat hair")])
            remember(store, [Candidate("The user is allergic to dog hair")])
            assert len(waiting_pairs(store, "default")) == 1
            chat = [{"role": "user", "content": "我每周去三次游泳馆"}, {"role": "assistant", "content": "好的"}]
            assert extract_now(location, chat, config=cfg, session_id="s2", store=store).status == "done"
            assert len(judge_requests(llm)) == 1  # within the hour: it waits
        assert _texts(store) == sorted(["The user lives in Vancouver", "The user is allergic to bee stings",
                                        "The user is allergic to wasp stings", "I prefer nano over vim",
                                        "用户每周去两次健身房", "The user is allergic to cat hair",
                                        "The user is allergic to dog hair"])
