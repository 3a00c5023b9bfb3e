#!/usr/bin/env python3
"""How long past-task recall adds to a kanban worker's first turn.

Builds, in a temporary Hermes root, a real board (hermes_cli.kanban_db of hermes-agent 0.19) and a store holding
--memories task memories (default 1,000), then for --tasks new cards (default 24) runs exactly what the plugin's
`pre_llm_call` does on a worker's first turn (`automem.hermes.kanban_recall.worker_first_turn`: the cheap
kanban-sync, read the card, search past tasks and lessons, format the block):

- cold: each card in a fresh Python process, as a real worker is one: importing automem.hermes.kanban_recall,
  loading the embedding model and opening the store are part of what the worker pays;
- warm: the same calls again in one process whose store and model are loaded (a long-lived process).

With --workers N it also runs real hermes-agent 0.19 kanban workers (a scripted model on 127.0.0.1, profile
`editor` with automem installed, the same 1,000 memories), N with `kanban_recall: true` and N with it off, and
prints how long each took from `hermes kanban dispatch` to the worker's first model request: the difference is what
recall adds to a real worker's first turn (it runs in a child process started at plugin load, overlapping Hermes'
own start-up).

Prints p50 / p95 / max in milliseconds.
Usage: python -m scripts.bench_kanban_recall [--memories N] [--tasks N] [--workers N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scripts.harness import Stopwatch, child_env, header, percentile, temp_root, time_ms

TOPICS = [
    ("Kanban 入门文章", "介绍看板、列与 WIP 限制"), ("Docker 网络", "bridge 网络与容器间 DNS"),
    ("Postgres autovacuum", "lowered scale factors on hot tables"), ("SQLite WAL", "checkpoints and readers"),
    ("发布说明", "整理了 0.19 版本的变更"), ("CI pipeline", "cached wheels, cut build time in half"),
    ("用户访谈纪要", "汇总了五位用户的反馈"), ("Rust error handling", "thiserror vs anyhow guide"),
    ("周报", "本周完成三项任务"), ("Kubernetes ingress", "nginx ingress with TLS"),
    ("博客 SEO", "标题与摘要优化"), ("Python packaging", "pyproject and wheels"),
    ("日志系统", "结构化日志与采样"), ("API rate limits", "token bucket per key"),
    ("数据备份", "每日快照与异地副本"), ("Frontend perf", "code splitting and lazy routes"),
    ("团队活动", "订了会议室和午餐"), ("Security review", "rotated keys, removed stale tokens"),
    ("翻译文档", "把安装指南译成英文"), ("Load testing", "k6 scripts for the checkout path"),
]
VERBS = ["写一篇", "Review", "整理", "Draft", "优化", "Fix", "调研", "Update"]
AUDIENCE = ["面向新手", "for the backend team", "面向运维", "for customers", "内部参考", "for the release"]


def synthetic_runs(n: int, board: str, seed: int = 7):
    from automem.hermes.kanban_board import TaskRun

    rng = random.Random(seed)
    now = int(time.time())
    runs = []
    for i in range(n):
        topic, detail = TOPICS[i % len(TOPICS)]
        verb = VERBS[rng.randrange(len(VERBS))]
        title = f"{verb} {topic} #{i}"
        summary = f"{detail}; {AUDIENCE[rng.randrange(len(AUDIENCE))]}; 交付物 {rng.randrange(1, 9)} 份。"
        profile = ("blog-writer", "editor", "ops")[i % 3]
        ended = now - (n - i) * 600
        runs.append(TaskRun(board=board, task_id=f"t_{0x10000000 + i:08x}", run_id=1_000_000 + i, title=title,
                            assignee=profile, profile=profile, outcome="blocked" if i % 17 == 0 else "completed",
                            summary=summary, started_at=ended - 300, ended_at=ended))
    return runs


def build(root: Path, n_memories: int, n_tasks: int) -> list[str]:
    """The store with task memories, an instruction, and a board with `n_tasks` claimed cards. Returns their ids."""
    os.environ["HERMES_HOME"] = str(root)
    from hermes_cli import kanban_db as kb

    from automem.config import load_config
    from automem.core.store import open_store
    from automem.core.write_path import Candidate, remember
    from automem.hermes.kanban_record import record_runs
    from automem.paths import Location

    loc = Location(root=root, profile="editor")
    cfg = load_config(loc)
    store = open_store(loc, cfg)
    with Stopwatch() as sw:
        runs = synthetic_runs(n_memories, "default")
        for start in range(0, len(runs), 250):
            record_runs(store, runs[start:start + 250], "bench")
        remember(store, [Candidate("日期必须是RFC3339格式", wing="instruction", profile="blog-writer",
                                   room="auto-extract"),
                         Candidate("文章标题不超过二十个字", wing="instruction", profile="editor",
                                   room="auto-extract")])
        count = store.count()
        store.close()
    print(f"store: {count} memories written in {sw.s:.1f} s")

    conn = kb.connect(root / "kanban.db")
    ids = []
    rng = random.Random(11)
    for i in range(n_tasks):
        topic, detail = TOPICS[rng.randrange(len(TOPICS))]
        tid = kb.create_task(conn, title=f"{VERBS[i % len(VERBS)]} {topic} (new)", body=f"{detail}. 新任务 {i}",
                             assignee="editor")
        kb.claim_task(conn, tid)
        ids.append(tid)
    conn.close()
    return ids


CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
from automem.config import load_config
from automem.hermes.kanban_recall import worker_first_turn
from automem.paths import Location
t_import = time.perf_counter()
loc = Location.resolve(os.environ["HERMES_HOME"])
block = worker_first_turn(loc, load_config(loc))
t1 = time.perf_counter()
print(json.dumps({"total_ms": (t1 - t0) * 1000, "import_ms": (t_import - t0) * 1000, "chars": len(block),
                  "has_tasks": "- t_" in block}))
"""


def line(name: str, values: list[float]) -> str:
    return (f"{name:<34} n={len(values):<3} p50={percentile(values, 50):8.1f} ms  "
            f"p95={percentile(values, 95):8.1f} ms  max={max(values):8.1f} ms")


WORKER_RULES = [
    {"match": {"no_tools": True}, "text": "title"},
    {"match": {"user_re": r"work kanban task (t_[0-9a-f]{8})", "after_tool": False},
     "tool_calls": [{"name": "kanban_show", "arguments": {"task_id": "{{1}}"}}]},
    {"match": {"after_tool": "kanban_show"},
     "tool_calls": [{"name": "kanban_complete", "arguments": {"summary": "done by the bench"}}]},
    {"match": {"after_tool": "kanban_complete"}, "text": "finished"},
]


def set_profile_recall(path: Path, on: bool) -> None:
    """Set `automem: kanban_recall:` in the profile's config.yaml."""
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    section = data.get("automem") if isinstance(data.get("automem"), dict) else {}
    section["kanban_recall"] = on
    data["automem"] = section
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")


def real_workers(tmp: Path, n: int, n_memories: int) -> dict[str, list[float]]:
    """Milliseconds from `hermes kanban dispatch` to the worker's first model request, recall on and off."""
    from tests.support.fake_llm import FakeLLM
    from tests.support.hermes import HermesRoot, poll

    out: dict[str, list[float]] = {"on": [], "off": []}
    with FakeLLM(WORKER_RULES) as llm:
        root = HermesRoot.create(tmp, llm.url, extra_config="automem:\n  auto_extract: false\n", name="workers")
        root.create_profile("editor")
        root.automem("install", "--hermes-home", str(root.root), "--profile", "editor", "--no-pip").check()
        root.hermes_cmd("kanban", "init").check()
        os.environ["HERMES_HOME"] = str(root.root)
        from automem.config import load_config
        from automem.core.store import open_store
        from automem.hermes.kanban_record import record_runs
        from automem.paths import Location

        loc = Location(root=root.root, profile="editor")
        store = open_store(loc, load_config(loc))
        runs = synthetic_runs(n_memories, "default", seed=3)
        for start in range(0, len(runs), 250):
            record_runs(store, runs[start:start + 250], "bench")
        store.close()
        rng = random.Random(5)
        for i in range(2 * n):
            mode = "on" if i % 2 == 0 else "off"  # interleaved, so drift on the machine hits both alike
            set_profile_recall(root.config_path("editor"), mode == "on")
            topic, detail = TOPICS[rng.randrange(len(TOPICS))]
            res = root.hermes_cmd("kanban", "create", f"Review {topic} (bench {i})", "--assignee", "editor",
                                  "--body", detail, "--json").check()
            tid = json.loads(res.stdout[res.stdout.index("{"):])["id"]
            seen = len(llm.requests)
            t0 = time.time()
            root.hermes_cmd("kanban", "dispatch").check()

            def first_request():
                for r in llm.requests[seen:]:
                    if f"work kanban task {tid}" in json.dumps(r.get("body"), ensure_ascii=False) and \
                            (r.get("body") or {}).get("tools"):
                        return r
                return None

            req = poll(first_request, deadline_s=120, interval_s=0.05, what=f"first request of {tid}")
            out[mode].append((req["ts"] - t0) * 1000)
            poll(lambda: b"done" in subprocess.run(
                [root.hermes, "kanban", "show", tid, "--json"], capture_output=True, env=root.env()).stdout,
                deadline_s=120, what=f"{tid} done")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=1000)
    ap.add_argument("--tasks", type=int, default=24)
    ap.add_argument("--workers", type=int, default=0, help="also time N real hermes workers with recall on and off")
    args = ap.parse_args()
    if args.tasks < 1 or args.memories < 1:
        ap.error("--memories and --tasks must be at least 1")

    print(header("bench_kanban_recall"))
    with temp_root(prefix="automem-bench-kanban-") as tmp:
        root = tmp / "root"
        (root / "profiles" / "editor").mkdir(parents=True)
        home = tmp / "home"
        home.mkdir()
        os.environ["HOME"] = str(home)
        for name in list(os.environ):
            if name.startswith(("AUTOMEM_", "HERMES_KANBAN")):
                del os.environ[name]
        ids = build(root, args.memories, args.tasks)

        env = {k: v for k, v in child_env(clean=True).items() if not k.startswith("HERMES_")}
        env.update(HOME=str(home), HERMES_HOME=str(root / "profiles" / "editor"),
                   HERMES_KANBAN_DB=str(root / "kanban.db"), HERMES_KANBAN_BOARD="default", HERMES_PROFILE="editor")
        cold, imports, sizes, with_tasks = [], [], [], 0
        for tid in ids:
            res = subprocess.run([sys.executable, "-c", CHILD], env={**env, "HERMES_KANBAN_TASK": tid},
                                 capture_output=True, text=True, timeout=300)
            if res.returncode != 0:
                print(res.stderr, file=sys.stderr)
                return 1
            out = json.loads(res.stdout.strip().splitlines()[-1])
            cold.append(out["total_ms"])
            imports.append(out["import_ms"])
            sizes.append(out["chars"])
            with_tasks += out["has_tasks"]

        from automem.config import load_config
        from automem.core.store import open_store
        from automem.hermes.kanban_recall import worker_first_turn
        from automem.paths import Location

        loc = Location.resolve(str(root / "profiles" / "editor"))
        cfg = load_config(loc)
        store = open_store(loc, cfg)
        worker_first_turn(loc, cfg, env={**env, "HERMES_KANBAN_TASK": ids[0]}, store=store)  # load model + store
        warm = []
        for tid in ids:
            warm.append(time_ms(worker_first_turn, loc, cfg, env={**env, "HERMES_KANBAN_TASK": tid}, store=store))
        store.close()

    print(f"kanban past-task recall, {args.memories} task memories, {len(ids)} cards, budget "
          f"{cfg.recall_max_chars} chars / {cfg.recall_max_items} items")
    print(line("cold (fresh worker process)", cold))
    print(line("  of which importing automem", imports))
    print(line("warm (store and model loaded)", warm))
    print(f"block size: p50 {statistics.median(sizes):.0f} chars, max {max(sizes)}; "
          f"{with_tasks}/{len(ids)} blocks list past tasks")

    if args.workers:
        with temp_root(prefix="automem-bench-workers-") as tmp:
            times = real_workers(tmp, args.workers, args.memories)
        print(f"real hermes workers, dispatch -> first model request ({args.memories} task memories):")
        print(line("  kanban_recall: true", times["on"]))
        print(line("  kanban_recall: false", times["off"]))
        print(f"  recall adds (p50 on - p50 off): "
              f"{percentile(times['on'], 50) - percentile(times['off'], 50):+.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
