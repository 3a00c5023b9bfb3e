#!/usr/bin/env python3
"""Figures of the extraction pipeline, measured on this machine (prints them; asserts nothing).

1. What the hook spends: `pipeline.enqueue` (prepare the transcript + write the job file atomically) p50/p95,
   and starting the detached drainer.
2. Prompt and completion tokens of the seed's conversation (check 1, and check 2 with the P2 block), from the
   `usage` field of a fake OpenAI-compatible server on 127.0.0.1 (its tokenizer counts one token per CJK
   character, word or punctuation mark: close to GLM-4's count for Chinese text, not identical), and of
   tests/data/sample_conversation.json (11 turns). `--only tokens` prints these alone: run it on two commits to
   compare prompts.
3. Jobs per minute one drainer sustains against a server that answers at once (and with the offline rules).
4. The write path's judge: pairs per job that reach it and its prompt + completion tokens, on the seed conversation
   (check 1 on an empty store, check 2 the same conversation again, then a reworded one) and on a 20-candidate job
   (20 stored facts, then a job whose answer restates or changes each: tune-corpus pairs of the user wing); and
   convergence: LLM requests per session on a store written offline (pairs waiting for a judge), and how many wait.

Usage: python -m scripts.bench_pipeline [--enqueues 300] [--jobs 40] [--json] [--only judge]
"""

from __future__ import annotations

import argparse
import json
import os
import time

from automem.config import Config
from automem.paths import Location
from scripts.harness import DATA, REPO, Stopwatch, header, percentile, print_json, temp_root, time_ms
from tests.support.fake_llm import FakeLLM
from tests.support.seed import SEED_ANSWER, SEED_CHAT


def bench_enqueue(n: int) -> dict:
    from automem.extract.pipeline import enqueue, spawn_detached_drainer

    sample = json.loads((DATA / "sample_conversation.json").read_text(encoding="utf-8"))
    with temp_root() as tmp:
        loc = Location(tmp, "default")
        cfg = Config(extract_backend="rules")
        # The detached drainers read the root's config: without this, `auto` picks the host model wherever
        # hermes-agent is importable, and with no model configured every job backs off.
        (loc.root / "config.yaml").write_text("automem:\n  extract_backend: rules\n", encoding="utf-8")
        enqueue(loc, sample, session_id="warm", config=cfg)  # first call creates the folders
        times = []
        for i in range(n):
            msgs = sample + [{"role": "user", "content": f"会话 {i}"}]
            with Stopwatch() as sw:
                jid = enqueue(loc, msgs, session_id=f"s{i}", config=cfg)
            times.append(sw.ms)
            assert jid
        spawn = []
        for _ in range(5):
            spawn.append(time_ms(spawn_detached_drainer, loc, wait_seconds=0))
            time.sleep(0.05)
        # let the drainers we started finish (rules backend, nothing waits) before the folder goes
        deadline = time.time() + 300
        from automem.extract.drainer import SingleDrainer
        from automem.extract.spool import pending_jobs

        while (pending_jobs(loc) or SingleDrainer(loc).held_elsewhere) and time.time() < deadline:
            time.sleep(0.5)
    return {"enqueue_ms_p50": round(percentile(times, 50), 3), "enqueue_ms_p95": round(percentile(times, 95), 3),
            "enqueue_ms_max": round(max(times), 3), "enqueues": n,
            "spawn_drainer_ms_p50": round(percentile(spawn, 50), 2), "spawn_drainer_ms_max": round(max(spawn), 2)}


def bench_tokens() -> dict:
    from automem.core.store import Store
    from automem.extract.pipeline import extract_now

    with temp_root() as tmp, FakeLLM([{"match": {"system": "记忆提取助手"}, "json": SEED_ANSWER}]) as llm:
        loc = Location(tmp, "default")
        cfg = Config(extract_backend="openai", extract_base_url=llm.url, extract_api_key="bench")
        store = Store(loc, cfg)
        try:
            first = extract_now(loc, SEED_CHAT, config=cfg, session_id="s1", store=store)
            second = extract_now(loc, SEED_CHAT, config=cfg, session_id="s2", store=store)
            # a longer one (tests/data/sample_conversation.json, 11 turns), in another profile: no known memories
            sample = json.loads((REPO / "tests" / "data" / "sample_conversation.json").read_text(encoding="utf-8"))
            other = Location(tmp, "sample")
            other.profile_home.mkdir(parents=True, exist_ok=True)
            third = extract_now(other, sample, config=cfg, session_id="s3")
        finally:
            store.close()
        sys_chars = [len(r["body"]["messages"][0]["content"]) for r in llm.chat_requests()]
    return {"check1_prompt_tokens": first.details.get("prompt_tokens"),
            "check1_completion_tokens": first.details.get("completion_tokens"),
            "check2_prompt_tokens": second.details.get("prompt_tokens"),
            "check2_completion_tokens": second.details.get("completion_tokens"),
            "check2_decisions": [d["decision"] for d in second.decisions],
            "sample_prompt_tokens": third.details.get("prompt_tokens"),
            "system_prompt_chars": sys_chars}


def bench_drain(jobs: int, backend: str) -> dict:
    from automem.core.store import Store
    from automem.extract.pipeline import drain, enqueue

    rules = [{"match": {"system": "记忆去重助手"}, "text": '["new","new","new","new"]'},
             {"match": {"user_re": r"主题(\d+)"},
              "json": {"persona": ["用户喜欢第{{1}}号配色主题"], "instruction": ["第{{1}}号项目统一使用Python 3.{{1}}"],
                       "episodic": ["用户完成了第{{1}}号博客的迁移"]}}]
    with temp_root() as tmp, FakeLLM(rules) as llm:
        loc = Location(tmp, "default")
        cfg = Config(extract_backend=backend, extract_base_url=llm.url, extract_api_key="bench")
        store = Store(loc, cfg)
        try:
            store.embed(["warm up"])
            store.count()
            for i in range(jobs):
                msgs = [{"role": "user", "content": f"我喜欢主题{i}。以后都用主题{i}的配色。"},
                        {"role": "assistant", "content": f"好的，主题{i}。"},
                        {"role": "user", "content": f"我今天完成了主题{i}博客的迁移"}]
                enqueue(loc, msgs, session_id=f"s{i}", config=cfg)
            with Stopwatch() as sw:
                report = drain(loc, cfg, store=store)
            seconds = sw.s
            memories = store.count()
        finally:
            store.close()
    return {"backend": backend, "jobs": report.done, "seconds": round(seconds, 2),
            "jobs_per_minute": round(report.done / seconds * 60, 1), "memories": memories,
            "llm_requests": len(llm.chat_requests())}


REWORDED_CHAT = [{"role": "user", "content": "提醒一下，我一直用vim写代码，项目都用Python 3.11版本"},
                 {"role": "assistant", "content": "好的。"}]
REWORDED_ANSWER = {"persona": ["用户一直使用vim编辑器写代码"], "episodic": [],
                   "instruction": ["项目都使用Python 3.11版本", "代码要符合PEP8规范，文档字符串采用Google风格"]}
# The fake judge answers "new" to every pair, one word per pair (as a judge would): a rule per batch size.
JUDGE_RULES = [{"match": {"system": "记忆去重助手", "user_re": r"\A\[\n(?:\{[^\n]*\}(?:,\n|\n)){%d}\]\Z" % n},
                "json": ["new"] * n} for n in range(1, 61)]


def bench_judge() -> dict:
    from automem.core.store import Store
    from automem.core.write_path import Candidate, remember
    from automem.extract.pipeline import extract_now

    out: dict = {}
    rules = [*JUDGE_RULES,
             {"match": {"user": "一直用vim"}, "json": REWORDED_ANSWER},
             {"match": {"user": "第二十个"}, "json": "$JOB20"},
             {"match": {"system": "记忆提取助手"}, "json": SEED_ANSWER}]
    pairs = [json.loads(line) for line in (DATA / "dedup_corpus" / "tune.jsonl").open(encoding="utf-8")]
    twenty = [p for p in pairs if p["wing"] == "user" and p["label"] != "both_true"][::4][:20]
    rules[len(JUDGE_RULES) + 1]["json"] = {"persona": [p["candidate"] for p in twenty], "episodic": [],
                                           "instruction": []}
    with temp_root() as tmp, FakeLLM(rules) as llm:
        loc = Location(tmp, "default")
        cfg = Config(extract_backend="openai", extract_base_url=llm.url, extract_api_key="bench")
        store = Store(loc, cfg)
        try:
            for name, chat in (("seed_check1", SEED_CHAT), ("seed_check2", SEED_CHAT),
                               ("seed_reworded", REWORDED_CHAT)):
                res = extract_now(loc, chat, config=cfg, session_id=name, store=store)
                out[name] = _judge_figures(res)
            remember(store, [Candidate(p["existing"], wing="user") for p in twenty])
            chat = [{"role": "user", "content": "这是第二十个候选的会话：" + "；".join(p["candidate"] for p in twenty)},
                    {"role": "assistant", "content": "好的。"}]
            out["job_20_candidates"] = _judge_figures(extract_now(loc, chat, config=cfg, session_id="j20",
                                                                  store=store))
        finally:
            store.close()
    out.update(bench_convergence(rules, pairs))
    return out


def bench_convergence(rules: list, pairs: list[dict]) -> dict:
    """A store written offline (tune restatements kept apart by the rules: pairs waiting for a judge), then sessions
    with the openai backend: the LLM requests each makes (extraction + judge), and the pairs still waiting after it.
    Session 1 asks the judge nothing of its own (the seed on a store without it): the background settle makes its
    one call. Session 2 (reworded) asks the judge about its candidates: waiting pairs ride along in that call.
    Session 3 asks nothing again: within the hour no background settle, no judge call."""
    from automem.core.store import Store
    from automem.core.write_path import Candidate, remember, waiting_for_judge
    from automem.extract.pipeline import extract_now

    restated = [p for p in pairs if p["wing"] == "user" and p["label"] == "restatement"][:40]
    out: dict = {}
    with temp_root() as tmp, FakeLLM(rules) as llm:
        loc = Location(tmp, "default")
        cfg = Config(extract_backend="openai", extract_base_url=llm.url, extract_api_key="bench")
        store = Store(loc, cfg)
        try:
            for p in restated:  # offline: no judge
                remember(store, [Candidate(p["existing"], wing="user")])
                remember(store, [Candidate(p["candidate"], wing="user")])
            waiting = sum(waiting_for_judge(store).values())
            for name, chat in (("settle_session1", SEED_CHAT), ("settle_session2", REWORDED_CHAT),
                               ("settle_session3", SEED_CHAT)):
                before = len(llm.chat_requests())
                res = extract_now(loc, chat, config=cfg, session_id=name, store=store)
                figures = _judge_figures(res)
                figures["llm_requests"] = len(llm.chat_requests()) - before
                figures["waiting_before"] = waiting
                waiting = sum(waiting_for_judge(store).values())
                figures["waiting_after"] = waiting
                figures["settled_in_background"] = res.details.get("settled", 0)
                out[name] = figures
        finally:
            store.close()
    return out


def _judge_figures(res) -> dict:
    d = res.details
    return {"candidates": len(d.get("candidates") or []), "judge_calls": d.get("judge_calls", 0),
            "judge_pairs": d.get("judge_pairs", 0), "judge_prompt_tokens": d.get("judge_prompt_tokens", 0),
            "judge_completion_tokens": d.get("judge_completion_tokens", 0),
            "extraction_tokens": d.get("prompt_tokens", 0) - d.get("judge_prompt_tokens", 0)
            + d.get("completion_tokens", 0) - d.get("judge_completion_tokens", 0),
            "decisions": [x["decision"] for x in res.decisions]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--enqueues", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=40)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--only", choices=("judge", "tokens"), help="only this part")
    args = ap.parse_args()
    for name in list(os.environ):
        if name.startswith("AUTOMEM_") or name == "GLM_API_KEY":
            os.environ.pop(name)
    out = {"cpus": os.cpu_count()}
    if args.only == "tokens":
        out["tokens"] = bench_tokens()
        t = out["tokens"]
        print(json.dumps(out, ensure_ascii=False) if args.json else
              f"extraction prompt tokens (the fake's count): seed check 1 {t['check1_prompt_tokens']} "
              f"(+{t['check1_completion_tokens']} completion), check 2 with the known block "
              f"{t['check2_prompt_tokens']}; sample_conversation.json (11 turns) {t['sample_prompt_tokens']}; "
              f"system prompt {t['system_prompt_chars']} characters")
        return 0
    if args.only == "judge":
        out["judge"] = bench_judge()
        if args.json:
            print_json(out, ensure_ascii=False)
        else:
            print(header("bench_pipeline"))
            print(_judge_lines(out["judge"]))
        return 0
    out["judge"] = bench_judge()
    out["hook"] = bench_enqueue(args.enqueues)
    out["tokens"] = bench_tokens()
    out["drain_openai_fake"] = bench_drain(args.jobs, "openai")
    out["drain_rules"] = bench_drain(args.jobs, "rules")
    if args.json:
        print_json(out, ensure_ascii=False)
        return 0
    h, t = out["hook"], out["tokens"]
    print(header("bench_pipeline"))
    print(f"machine: {out['cpus']} cores")
    print(f"hook cost (enqueue: prepare + atomic job file), {h['enqueues']} calls: "
          f"p50 {h['enqueue_ms_p50']} ms, p95 {h['enqueue_ms_p95']} ms, max {h['enqueue_ms_max']} ms")
    print(f"starting the detached drainer (Popen): p50 {h['spawn_drainer_ms_p50']} ms, "
          f"max {h['spawn_drainer_ms_max']} ms")
    print(f"seed conversation, check 1: {t['check1_prompt_tokens']} prompt + {t['check1_completion_tokens']} "
          f"completion tokens; check 2 (with the P2 block): {t['check2_prompt_tokens']} + "
          f"{t['check2_completion_tokens']} ({', '.join(t['check2_decisions'])})")
    print(_judge_lines(out["judge"]))
    for key in ("drain_openai_fake", "drain_rules"):
        d = out[key]
        print(f"drainer, {d['backend']} backend{' (server answers at once)' if d['backend'] == 'openai' else ''}: "
              f"{d['jobs']} jobs in {d['seconds']} s = {d['jobs_per_minute']} jobs/minute "
              f"({d['memories']} memories, {d['llm_requests']} LLM requests)")
    return 0


def _judge_lines(j: dict) -> str:
    lines = ["judge (a fake that answers new to every pair; tokens: the fake's count, one per CJK character or word):"]
    for name, f in j.items():
        lines.append(f"  {name}: {f['candidates']} candidates, {f['judge_pairs']} pairs to the judge in "
                     f"{f['judge_calls']} call(s), {f['judge_prompt_tokens']} + {f['judge_completion_tokens']} judge "
                     f"tokens (extraction {f['extraction_tokens']}); decisions {', '.join(f['decisions'])}")
        if "llm_requests" in f:
            lines.append(f"    {f['llm_requests']} LLM requests in all; pairs waiting for a judge "
                         f"{f['waiting_before']} -> {f['waiting_after']} ({f['settled_in_background']} settled by "
                         f"the background settle)")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
