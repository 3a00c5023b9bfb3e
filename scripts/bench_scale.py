#!/usr/bin/env python3
"""How automem's costs grow with the store: figures for 1k, 10k and 100k memories (printed, never asserted).

For each size N, a fresh temporary Hermes root is filled with N synthetic memories (seeded, so every run stores the
same texts: templates x vocabulary lists in English, Chinese and mixed, over the wings user / episodic /
instruction and the profiles default / work / family, 5..200 characters, all different) through
`Store.import_memories`, in a child process of its own. Then, on that root:

* load: the import rate (memories/s, embedding included) and the time of the `Store.close` that follows (it
  rebuilds the recall snapshot); the embedding model's own batched rate (`automem.core.embeddings.embed` on 2,000
  texts in one call, model already loaded) is measured once, in the first loader;
* warm, in the loader process after the import: `Store.recall(q, k=5, profile="default")` p50/p95 over 20
  questions (and the same for "family", the smallest profile, a fifth of the store: most of a question's nearest
  neighbours belong to other profiles), and one write through
  `automem.core.write_path.remember(store, [Candidate(text)])`, wall and CPU time, median of 5 new facts (with
  `--writes N`, N writes: the 5, then texts of the store's own kind, which meet close neighbours and take the
  update path; the snapshot refresh those writes cause happens at close, timed on its own);
* one write in a fresh process: `python -m automem add TEXT --hermes-home ROOT --no-judge` (the offline rules
  decide; no LLM judge is asked), wall time, median of 3 different texts;
* one session-end job: `python -m automem extract tests/data/sample_conversation.json --backend rules
  --hermes-home ROOT` (the extraction pipeline with the offline rules extractor, through the spool and the write
  path), wall time of the process;
* Hermes' start path in a fresh process, with no warm store: `HermesSession.start(ROOT, session_id=...)`, then
  `.system_prompt_block()` once and `.prefetch(question)` for 20 questions; 3 such processes: the system block's
  and the first prefetch's median, the prefetch p50/p95 over all 60, and the processes' median wall time. Where
  automem has a resident recall process (automem.core.resident), the first fresh process starts it and the later
  ones may be answered by it: the table says in how many runs one answered; the script stops it (SIGTERM) before
  the temporary root goes (and anything else still running under it);
* peak RSS (ru_maxrss) and CPU time (user + sys), from os.wait4 of each child alone: the CPU figure moves less
  than wall time with whatever else the machine runs.

    python -m scripts.bench_scale [--sizes 1000,10000,100000] [--writes 5] [--json]

Wall times on a shared machine move with whatever else runs; the figures are one run's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import sys
import time

from scripts.harness import (
    DATA,
    REPO,
    Stopwatch,
    commit,
    percentile,
    print_json,
    python_m,
    run_child,
    stop_residents,
    temp_root,
    time_ms,
)

SEED = 20261203
EMBED_SAMPLE = 2000
SAMPLE_TRANSCRIPT = DATA / "sample_conversation.json"
FRESH_RUNS = 3
PROFILES = (("default", 0.5), ("work", 0.3), ("family", 0.2))

# -- synthetic memories ------------------------------------------------------------------------------------------
V = {
    "tool": ["vim", "Neovim", "VS Code", "Emacs", "PyCharm", "tmux", "zsh", "fish", "ripgrep", "Docker", "Podman",
             "uv", "poetry", "pytest", "ruff", "black", "mypy", "git", "make", "Ansible"],
    "task": ["Python scripts", "code review", "note taking", "writing blog posts", "shell scripting",
             "data analysis", "editing configs", "reading logs", "small refactors", "unit tests"],
    "relation": ["sister", "brother", "mother", "father", "cousin", "aunt", "uncle", "best friend", "colleague",
                 "neighbour"],
    "name": ["Sam", "Alice", "Ben", "Chloe", "David", "Emma", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kai",
             "Lena", "Mateo", "Nora", "Omar", "Priya", "Quinn", "Rosa", "Tom"],
    "city": ["Berlin", "Shanghai", "Lisbon", "Toronto", "Osaka", "Nairobi", "Austin", "Chengdu", "Melbourne",
             "Oslo", "Madrid", "Hangzhou", "Seattle", "Prague", "Seoul"],
    "activity": ["go running", "swim", "play tennis", "practise guitar", "read novels", "cook dinner",
                 "call my parents", "do yoga", "go hiking", "review my budget"],
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "timeofday": ["morning", "afternoon", "evening", "night"],
    "food": ["ramen", "dumpling", "pizza", "sushi", "taco", "curry", "hotpot", "bakery", "noodle", "salad"],
    "place": ["the station", "the river", "my office", "the old market", "the park", "the university",
              "the harbour", "the museum"],
    "allergen": ["peanuts", "shellfish", "gluten", "lactose", "sesame", "eggs", "soy", "kiwi"],
    "job": ["backend engineer", "data scientist", "product manager", "designer", "teacher", "nurse",
            "site reliability engineer", "technical writer", "accountant", "researcher"],
    "company": ["startup", "bank", "hospital", "game studio", "university lab", "logistics firm", "newspaper",
                "consultancy"],
    "device": ["laptop", "desktop", "home server", "phone", "tablet", "Raspberry Pi"],
    "os": ["Ubuntu", "Debian", "Fedora", "macOS", "Arch Linux", "Windows 11", "NixOS"],
    "project": ["billing", "search", "onboarding", "analytics", "blog", "mobile app", "payments", "inventory",
                "chat bot", "data pipeline", "recommendation", "admin panel"],
    "thing": ["migration", "release", "database upgrade", "API redesign", "load test", "security review",
              "dashboard", "backup job", "CI pipeline", "cache layer"],
    "cause": ["an expired certificate", "a full disk", "a missing env var", "a schema mismatch",
              "a DNS timeout", "a bad config push", "a memory leak", "a race in the queue"],
    "fix": ["rolling back", "rotating the key", "adding an index", "raising the limit", "pinning the version",
            "restarting the workers", "a hotfix", "clearing the cache"],
    "instr": ["run the tests", "ask for my approval", "check the logs", "write a short summary",
              "back up the database", "update the changelog", "lint the code"],
    "event": ["pushing to main", "deleting files", "a deploy", "sending an email", "closing a ticket",
              "merging a pull request"],
    "doc": ["release notes", "commit messages", "blog posts", "emails to clients", "design docs", "bug reports"],
    "style": ["plain English", "short bullet points", "a friendly tone", "British spelling", "active voice",
              "numbered steps"],
    "bad": ["force-push", "delete branches", "install global packages", "change my dotfiles", "email my boss",
            "restart production"],
    "tool_zh": ["vim", "VS Code", "飞书文档", "Excel", "Notion", "Obsidian", "WPS", "Typora", "Docker", "git"],
    "task_zh": ["写代码", "记笔记", "做报表", "写周报", "管理项目", "整理照片", "写论文", "记账"],
    "relation_zh": ["姐姐", "哥哥", "妈妈", "爸爸", "表妹", "舅舅", "室友", "同事", "老同学", "邻居"],
    "name_zh": ["小王", "小李", "张伟", "王芳", "刘洋", "陈静", "杨帆", "赵磊", "黄敏", "周杰", "吴婷", "孙浩"],
    "city_zh": ["北京", "上海", "杭州", "成都", "深圳", "广州", "南京", "武汉", "西安", "苏州", "重庆", "厦门"],
    "day_zh": ["周一", "周二", "周三", "周四", "周五", "周六", "周日", "每天", "工作日"],
    "timeofday_zh": ["早上", "中午", "下午", "晚上", "睡前"],
    "activity_zh": ["跑步", "游泳", "练吉他", "看书", "做饭", "打羽毛球", "练瑜伽", "背单词", "散步", "写日记"],
    "project_zh": ["支付系统", "搜索服务", "官网", "小程序", "数据平台", "推荐系统", "客服机器人", "库存系统"],
    "thing_zh": ["数据库迁移", "版本发布", "性能测试", "接口改造", "安全审查", "监控告警", "备份任务", "缓存优化"],
    "doc_zh": ["周报", "技术文档", "邮件", "会议纪要", "博客文章", "需求文档"],
    "style_zh": ["简洁的中文", "要点列表", "正式的语气", "口语化的风格", "分步骤说明"],
    "bad_zh": ["删除文件", "强制推送", "修改生产配置", "给客户发邮件", "重启服务器"],
    "food_zh": ["火锅", "小笼包", "牛肉面", "烤鸭", "麻辣烫", "寿司", "披萨", "煎饼"],
    "lang_zh": ["日语", "德语", "法语", "西班牙语", "韩语"],
}

TEMPLATES = (  # (wing, template)
    ("user", "I prefer {tool} for {task}."),
    ("user", "My {relation} {name} lives in {city} and works as a {job}."),
    ("user", "I usually {activity} on {day} {timeofday}s, around {hour} o'clock."),
    ("user", "My favourite {food} place is near {place} in {city}."),
    ("user", "I am allergic to {allergen}, so skip recipes with it; {name} knows a good substitute."),
    ("user", "I work as a {job} at a {company} in {city} since {year}."),
    ("user", "My {device} runs {os} {ver}.{minor} and I use {tool} on it every day."),
    ("episodic", "On {month}/{dom}/{year} we finished the {project} {thing}; it took {num} hours."),
    ("episodic", "Last {day} I met {name} near {place} to plan the {project} {thing}."),
    ("episodic", "The {project} {thing} on {month}/{dom} failed because of {cause}; fixed by {fix}."),
    ("episodic", "{name} reviewed the {project} {thing} on {day} and asked for {num} changes."),
    ("instruction", "Always {instr} before {event}, especially for the {project} repo."),
    ("instruction", "When writing {doc}, use {style} and keep them under {num} words."),
    ("instruction", "Never {bad} without asking me first, even for the {project} project."),
    ("user", "我喜欢用{tool_zh}来{task_zh}，已经用了{num}个月。"),
    ("user", "我{relation_zh}{name_zh}住在{city_zh}，每年{month}月回家一次。"),
    ("user", "我通常{day_zh}{timeofday_zh}{activity_zh}，大概{num}分钟。"),
    ("user", "我最爱吃{city_zh}的{food_zh}，对{allergen}过敏。"),
    ("episodic", "{year}年{month}月{dom}日我们完成了{project_zh}的{thing_zh}，花了{num}个小时。"),
    ("episodic", "{month}月{dom}日和{name_zh}在{city_zh}讨论了{project_zh}的{thing_zh}。"),
    ("instruction", "写{doc_zh}时请用{style_zh}，不要超过{num}字。"),
    ("instruction", "没有问过我之前，永远不要{bad_zh}（{project_zh}也一样）。"),
    ("user", "我的{device}装的是{os} {ver}.{minor}，平时用{tool}写代码。"),
    ("episodic", "{project} 的 {thing} 在{month}月{dom}日上线了，{name_zh}负责 review。"),
    ("instruction", "提交 {project} 的代码前先用 {tool} 检查一遍，再{instr_zh}。"),
    ("user", "I am learning {lang_zh}, 每天{timeofday_zh}练{num}分钟 with {name}."),
)
EXTRA = {"instr_zh": ["跑一遍测试", "写好提交说明", "更新文档", "通知我一声"]}

QUESTIONS = [
    "What editor do I prefer for Python scripts?", "Where does my sister live?", "When do I usually go running?",
    "What am I allergic to?", "Which operating system does my laptop run?", "Why did the billing release fail?",
    "How should I write release notes?", "What must I do before pushing to main?", "Who reviewed the search migration?",
    "What job does my brother have?", "我喜欢用什么工具写代码？", "我姐姐住在哪里？", "我通常什么时候跑步？",
    "支付系统的数据库迁移是什么时候完成的？", "写周报有什么要求？", "有什么事情不能不问我就做？",
    "我在学什么语言？", "小程序的版本发布花了多久？", "What is my favourite ramen place?", "提交代码前要做什么？",
]
NEW_TEXTS = [  # one write each; meant to be new facts (no near neighbour among the synthetic ones)
    "My landlord's name is Gregor and the rent is due on the 3rd of every month.",
    "我的护照号码不用记，但护照将在2029年8月到期，需要提前半年续签。",
    "I keep my climbing shoes in the blue locker at the Westside bouldering gym.",
    "我女儿的钢琴课在每周四下午四点半，老师姓顾。",
    "The wifi router at the cabin resets itself when the generator switches over.",
    "I switched my bank from N26 to a local credit union in March because of fees.",
    "周末想带爸妈去千岛湖，预算三千块左右，他们不喜欢爬山。",
    "My bike's rear tyre is 700x28c and I run it at 80 psi.",
]


def synthetic(n: int, seed: int = SEED) -> list:
    """`n` distinct memories (deterministic for `seed`)."""
    from automem.core.memory import Memory, memory_id
    from automem.text import MAX_CHARS, MIN_CHARS, normalise

    rnd = random.Random(seed)
    vocab = {**V, **EXTRA}
    names = [p for p, _ in PROFILES]
    weights = [w for _, w in PROFILES]
    now = 1_764_000_000
    seen: set[tuple[str, str, str]] = set()
    out = []
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 50 * n + 1000:
            raise RuntimeError(f"could only make {len(out)} distinct memories of {n}")
        wing, tpl = rnd.choice(TEMPLATES)
        fields = {k: rnd.choice(v) for k, v in vocab.items() if "{" + k + "}" in tpl}
        fields.update(num=rnd.randint(2, 240), ver=rnd.randint(1, 40), minor=rnd.randint(0, 12),
                      hour=rnd.randint(5, 23), year=rnd.randint(2015, 2026), month=rnd.randint(1, 12),
                      dom=rnd.randint(1, 28))
        text = normalise(tpl.format(**fields))
        if not MIN_CHARS <= len(text) <= MAX_CHARS:
            continue
        profile = rnd.choices(names, weights)[0]
        key = (profile, wing, text)
        if key in seen:
            continue
        seen.add(key)
        when = now - len(out) * 37
        out.append(Memory(id=memory_id(profile, wing, text), text=text, wing=wing, profile=profile, room="import",
                          added_by="bench_scale", created_at=when, updated_at=when))
    return out


# -- children ------------------------------------------------------------------------------------------------------
def child_load(root: str, n: int, measure_embed: bool, n_writes: int = 5) -> dict:
    from automem.config import Config
    from automem.core.store import open_store
    from automem.core.write_path import Candidate, remember
    from automem.paths import Location

    out: dict = {}
    with Stopwatch() as sw:
        mems = synthetic(n)
    out["generate_s"] = sw.s
    if measure_embed:
        from automem.core.embeddings import embed

        sample = [m.text for m in synthetic(EMBED_SAMPLE, seed=SEED + 1)]
        embed(["warm-up"])  # the model's load is not part of its rate
        with Stopwatch() as sw:
            embed(sample)
        out["embed_rate"] = EMBED_SAMPLE / sw.s
    location = Location.resolve(hermes_home=root)
    store = open_store(location, Config())
    with Stopwatch() as sw:
        store.import_memories(mems)
    out["import_s"] = sw.s
    out["import_rate"] = n / out["import_s"]
    out["count"] = store.count()
    with Stopwatch() as sw:
        store.close()
    out["close_after_import_s"] = sw.s

    store = open_store(location, Config())
    store.recall("warm-up", k=5, profile="default")

    def recall_ms(profile: str) -> list[float]:
        return [time_ms(store.recall, q, k=5, profile=profile) for q in QUESTIONS]

    out["recall_ms"] = recall_ms("default")
    out["recall_family_ms"] = recall_ms("family")  # the smallest profile: most nearest neighbours are others'
    writes, cpu, actions = [], [], []
    # the first five: new facts; more (--writes): texts of the store's own kind, which meet close neighbours
    more = [(m.text, m.wing, m.profile) for m in synthetic(max(0, n_writes - 5), seed=SEED + 2)]
    for text, wing, profile in [(t, "user", "default") for t in NEW_TEXTS[3:8]][:n_writes] + more:
        c0 = time.process_time()
        with Stopwatch() as sw:
            d = remember(store, [Candidate(text, wing=wing, profile=profile)])
        writes.append(sw.ms)
        cpu.append((time.process_time() - c0) * 1000)
        actions.append(d[0].action if d else "-")
    out["remember_ms"], out["remember_cpu_ms"], out["remember_actions"] = writes, cpu, actions
    with Stopwatch() as sw:
        store.close()
    out["close_after_writes_s"] = sw.s
    out["maxrss_self_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return out


def child_fresh(root: str, session_id: str) -> dict:
    """Hermes' start path: no store opened beforehand."""
    with Stopwatch() as sw:
        from automem.hermes.session import HermesSession
    out: dict = {"import_s": sw.s}
    with Stopwatch() as sw:
        sess = HermesSession.start(root, session_id=session_id)
    out["start_ms"] = sw.ms
    with Stopwatch() as sw:
        block = sess.system_prompt_block()
    out["system_block_ms"] = sw.ms
    out["system_block_chars"] = len(block)
    lat, chars = [], 0
    for q in QUESTIONS:
        with Stopwatch() as sw:
            chars += len(sess.prefetch(q))
        lat.append(sw.ms)
    out["prefetch_ms"] = lat
    out["prefetch_chars"] = chars
    out["warm_after"] = sess.warm
    out["resident_up"] = resident_pid(root) is not None
    out["shutdown_ms"] = time_ms(sess.shutdown)
    out["maxrss_self_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return out


def resident_pid(root: str) -> int | None:
    """The pid of the resident recall process serving `root` (automem.core.resident), if one answers."""
    try:
        from automem.core import resident_client
        from automem.paths import Location
    except ImportError:  # a version without a resident
        return None
    try:
        reply = resident_client.ask(Location.resolve(root), {"op": "ping"}, timeout=2.0)
    except Exception:  # noqa: BLE001 - only a figure
        return None
    return int(reply["pid"]) if reply and reply.get("ok") and reply.get("pid") else None


def child_json(kind: str, *args: str) -> tuple[dict, float, int, float]:
    """(its JSON, wall s, peak RSS KB, CPU s) of a `--child` run of this script."""
    child = run_child(python_m("scripts.bench_scale", "--child", kind, *args))
    if child.returncode != 0:
        raise RuntimeError(f"{kind} child failed (exit {child.returncode}): {child.stderr.strip()[-800:]}")
    return json.loads(child.stdout.strip().splitlines()[-1]), child.wall_s, child.peak_rss_kb, child.cpu_s


def measure(n: int, measure_embed: bool, log, n_writes: int = 5) -> dict:
    res: dict = {"n": n}
    with temp_root(prefix=f"automem-scale-{n}-") as tmp:
        root = str(tmp)
        log(f"[{n}] loading {n} memories ...")
        load, wall, rss, cpu = child_json("load", root, str(n), "1" if measure_embed else "0", str(n_writes))
        res.update(load=load, load_wall_s=wall, load_rss_kb=rss, load_cpu_s=cpu)
        log(f"[{n}] import {load['import_s']:.1f} s ({load['import_rate']:.0f}/s)")

        cli = []
        for text in NEW_TEXTS[:3]:
            add = run_child(python_m("automem", "add", text, "--hermes-home", root, "--no-judge"))
            if add.returncode != 0:
                raise RuntimeError(f"automem add failed (exit {add.returncode}): {add.stderr.strip()[-400:]}")
            cli.append({"wall_s": add.wall_s, "cpu_s": add.cpu_s, "rss_kb": add.peak_rss_kb,
                        "decision": add.stdout.strip().split(" ", 1)[0]})
        res["cli_add"] = cli
        log(f"[{n}] cli add " + ", ".join(f"{c['wall_s']:.2f} s" for c in cli))

        ext = run_child(python_m("automem", "extract", str(SAMPLE_TRANSCRIPT), "--backend", "rules", "--session",
                                 f"bench-{n}", "--hermes-home", root))
        if ext.returncode != 0:
            raise RuntimeError(f"automem extract failed (exit {ext.returncode}): {ext.stderr.strip()[-400:]}")
        decisions = [ln.split(" ", 1)[0] for ln in ext.stdout.splitlines()[1:] if ln.strip()]
        res["extract"] = {"wall_s": ext.wall_s, "cpu_s": ext.cpu_s, "rss_kb": ext.peak_rss_kb,
                          "decisions": len(decisions), "new": decisions.count("new"),
                          "summary": ext.stdout.splitlines()[0] if ext.stdout else ""}
        log(f"[{n}] extract {ext.wall_s:.2f} s ({len(decisions)} decisions)")

        fresh = []
        for r in range(FRESH_RUNS):
            data, wall, rss, cpu = child_json("fresh", root, f"bench-fresh-{n}-{r}")
            data.update(wall_s=wall, rss_kb=rss, cpu_s=cpu)
            fresh.append(data)
        res["fresh"] = fresh
        res["resident_stopped"] = next(iter(stop_residents(root)), None)  # it would outlive the temporary root
        log(f"[{n}] fresh start path " + ", ".join(f"{f['wall_s']:.2f} s" for f in fresh) +
            (f" (stopped the resident they started, pid {res['resident_stopped']})" if res["resident_stopped"]
             else ""))
    return res


# -- the table -----------------------------------------------------------------------------------------------------
def rows_of(results: list[dict]) -> list[tuple[str, list[str]]]:
    def col(fn) -> list[str]:
        out = []
        for r in results:
            try:
                out.append(fn(r))
            except (KeyError, ValueError, TypeError, statistics.StatisticsError):
                out.append("-")
        return out

    med = statistics.median

    def prefetches(r: dict) -> list[float]:
        return [x for f in r["fresh"] for x in f["prefetch_ms"]]

    return [
        ("memories stored (count)", col(lambda r: f"{r['load']['count']}")),
        ("import_memories rate (mem/s)", col(lambda r: f"{r['load']['import_rate']:.0f}")),
        ("import_memories total (s)", col(lambda r: f"{r['load']['import_s']:.1f}")),
        ("close after import: snapshot (s)", col(lambda r: f"{r['load']['close_after_import_s']:.2f}")),
        ("loader peak RSS (MB)", col(lambda r: f"{r['load_rss_kb'] / 1024:.0f}")),
        ("warm recall p50 (ms)", col(lambda r: f"{percentile(r['load']['recall_ms'], 50):.1f}")),
        ("warm recall p95 (ms)", col(lambda r: f"{percentile(r['load']['recall_ms'], 95):.1f}")),
        ("warm recall, profile family (20%), p50 (ms)",
         col(lambda r: f"{percentile(r['load']['recall_family_ms'], 50):.1f}")),
        ("warm recall, profile family (20%), p95 (ms)",
         col(lambda r: f"{percentile(r['load']['recall_family_ms'], 95):.1f}")),
        ("in-process remember, median (ms)", col(lambda r: f"{med(r['load']['remember_ms']):.0f}")),
        ("close after 5 writes: snapshot (s)", col(lambda r: f"{r['load']['close_after_writes_s']:.2f}")),
        ("`automem add` process, median of 3 (s)", col(lambda r: f"{med(c['wall_s'] for c in r['cli_add']):.2f}")),
        ("`automem add` CPU user+sys, median (s)", col(lambda r: f"{med(c['cpu_s'] for c in r['cli_add']):.2f}")),
        ("`automem add` peak RSS (MB)", col(lambda r: f"{max(c['rss_kb'] for c in r['cli_add']) / 1024:.0f}")),
        ("`automem extract` rules job (s)", col(lambda r: f"{r['extract']['wall_s']:.2f}")),
        ("`automem extract` CPU user+sys (s)", col(lambda r: f"{r['extract']['cpu_s']:.2f}")),
        ("fresh: import automem.hermes (ms)",
         col(lambda r: f"{med(f['import_s'] for f in r['fresh']) * 1000:.0f}")),
        ("fresh: system block, 1st call (ms)",
         col(lambda r: f"{med(f['system_block_ms'] for f in r['fresh']):.0f}")),
        ("fresh: first prefetch (ms)", col(lambda r: f"{med(f['prefetch_ms'][0] for f in r['fresh']):.1f}")),
        ("fresh: prefetch p50 (ms)", col(lambda r: f"{percentile(prefetches(r), 50):.1f}")),
        ("fresh: prefetch p95 (ms)", col(lambda r: f"{percentile(prefetches(r), 95):.1f}")),
        ("fresh: process total, median of 3 (s)", col(lambda r: f"{med(f['wall_s'] for f in r['fresh']):.2f}")),
        ("fresh: process CPU user+sys, median (s)", col(lambda r: f"{med(f['cpu_s'] for f in r['fresh']):.2f}")),
        ("fresh: resident answering at exit (runs)",
         col(lambda r: f"{sum(bool(f.get('resident_up')) for f in r['fresh'])}/{len(r['fresh'])}")),
        ("fresh: peak RSS (MB)", col(lambda r: f"{max(f['rss_kb'] for f in r['fresh']) / 1024:.0f}")),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000", help="comma-separated store sizes (default %(default)s)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ap.add_argument("--writes", type=int, default=5, help="in-process writes to time (default %(default)s; beyond 5, "
                    "texts of the store's own kind)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind, rest = args.child[0], args.child[1:]
        data = (child_load(rest[0], int(rest[1]), rest[2] == "1", int(rest[3]) if len(rest) > 3 else 5)
                if kind == "load" else child_fresh(*rest))
        print(json.dumps(data))
        return 0
    try:
        sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
        if not sizes or min(sizes) < 1:
            raise ValueError
    except ValueError:
        print(f"bench_scale: error: --sizes wants positive integers, got {args.sizes!r}", file=sys.stderr)
        return 2
    if not SAMPLE_TRANSCRIPT.exists():
        print(f"bench_scale: error: {SAMPLE_TRANSCRIPT} is missing", file=sys.stderr)
        return 2

    def log(msg: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)

    sha = commit()
    started = time.time()
    results = []
    for i, n in enumerate(sizes):
        try:
            results.append(measure(n, i == 0, log, args.writes))
        except RuntimeError as exc:
            print(f"bench_scale: error at {n} memories: {exc}", file=sys.stderr)
            return 1
    embed_rate = results[0]["load"].get("embed_rate")
    if args.json:
        print_json({"commit": sha, "sizes": sizes, "embed_rate": embed_rate, "results": results}, indent=2)
        return 0
    rows = rows_of(results)
    width = max(len(label) for label, _ in rows)
    print(f"automem scale benchmark, commit {sha}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, "
          f"{os.cpu_count()} cores, took {time.time() - started:.0f} s")
    print(f"embedding model, batched: {embed_rate:.0f} texts/s (embed() on {EMBED_SAMPLE} synthetic texts, "
          f"one call, model loaded)")
    print(f"extract: `automem extract {SAMPLE_TRANSCRIPT.relative_to(REPO)} --backend rules` "
          f"(decisions: " + ", ".join(f"{r['n']}: {r['extract']['decisions']}" for r in results) + ")")
    print()
    print(f"{'measure':<{width}}" + "".join(f"{n:>12,}" for n in sizes))
    print("-" * (width + 12 * len(sizes)))
    for label, cells in rows:
        print(f"{label:<{width}}" + "".join(f"{c:>12}" for c in cells))
    big, small = max(results, key=lambda r: r["n"]), min(results, key=lambda r: r["n"])
    if big is not small:
        b = statistics.median(c["wall_s"] for c in big["cli_add"])
        s = statistics.median(c["wall_s"] for c in small["cli_add"])
        bi = statistics.median(big["load"]["remember_ms"])
        si = statistics.median(small["load"]["remember_ms"])
        label = lambda n: f"{n // 1000}k" if n % 1000 == 0 else str(n)  # noqa: E731
        bc = statistics.median(c["cpu_s"] for c in big["cli_add"])
        sc = statistics.median(c["cpu_s"] for c in small["cli_add"])
        print(f"{label(big['n'])} write / {label(small['n'])} write = {b / s:.2f}x  (`automem add` process, wall; "
              f"its CPU: {bc / sc:.2f}x; in-process remember: {bi / si:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
