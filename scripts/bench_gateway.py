#!/usr/bin/env python3
"""What extraction costs in a gateway chat that never ends: jobs and LLM tokens per 100 turns (prints figures).

A provider is driven the way the gateway drives it (initialize with a Telegram user's kwargs, then `sync_turn`
after every turn with the whole history), for 100 turns of an everyday chat: short and long messages, a fact
every few turns. Extraction uses the `openai` backend against a fake OpenAI-compatible server on 127.0.0.1 whose
`usage` counts one token per CJK character, word or punctuation mark (close to GLM-4's count, not identical).
Each window setting (extract_every_turns / extract_every_chars) is measured on the same chat; the last row is
the seed's behaviour, one job at session end with only the last 4,000 characters.

Usage: python -m scripts.bench_gateway [--turns 100] [--json]
"""

from __future__ import annotations

import argparse
import random
import sys

from automem.config import Config
from automem.paths import Location
from scripts.harness import Stopwatch, header, print_json, temp_root
from tests.support.fake_llm import FakeLLM

EXTRACTOR = "你是一个记忆提取助手"
USER = dict(platform="telegram", user_id="1001", chat_id="1001", chat_type="dm",
            gateway_session_key="agent:main:telegram:dm:1001")
FACTS = ["我对花生过敏", "I moved to Lisbon last spring", "我女儿今年上小学二年级", "My cat is called Mochi",
         "以后回复我都用中文", "I run 5 km every Saturday morning", "我在一家做在线教育的公司上班",
         "Please keep answers under 200 words"]
CHATTER = ["今天天气不错，我们聊聊周末去哪里玩吧", "Can you explain how HTTP caching headers work?",
           "帮我把这段话改得更正式一点：我们下周开会讨论一下这个问题，大家准备一下材料",
           "What's a good name for a small bakery in a seaside town?",
           "给我列一个去杭州三天的行程，预算不要太高，想看西湖和灵隐寺", "ok thanks", "好的",
           "Summarise the plot of Pride and Prejudice in three sentences"]


def chat(turns: int, seed: int = 7) -> list[tuple[str, str]]:
    rnd = random.Random(seed)
    out = []
    for n in range(1, turns + 1):
        user = FACTS[(n // 7) % len(FACTS)] if n % 7 == 3 else rnd.choice(CHATTER)
        assistant = rnd.choice(["好的，我记住了。", "Sure, here is a short answer. " * rnd.randint(1, 6),
                                "这是一个详细一些的回答，" * rnd.randint(2, 12)])
        out.append((user, assistant))
    return out


def run(conversation, every_turns: int, every_chars: int, session_end_only: bool = False) -> dict:
    from automem.extract import pipeline
    from automem.hermes.session import HermesSession

    answer = {"persona": [], "episodic": [], "instruction": []}
    with FakeLLM([{"match": {"system": EXTRACTOR}, "json": answer}]) as llm, temp_root(prefix="automem-gw-") as tmp:
        loc = Location(tmp, "default")
        cfg = Config(extract_backend="openai", extract_base_url=llm.url, extract_api_key="k",
                     extract_every_turns=every_turns, extract_every_chars=every_chars)
        if session_end_only:  # the seed: nothing per turn, one job at the end with the last 4,000 characters
            cfg.extract_every_turns, cfg.extract_every_chars = 10 ** 9, 10 ** 9
        (loc.root / "config.yaml").write_text("automem:\n  extract_backend: openai\n", encoding="utf-8")
        sess = HermesSession.start(str(loc.root), session_id="gw-1", platform="telegram", gateway=USER)
        sess.config = cfg
        orig = pipeline.start_background_drainer
        pipeline.start_background_drainer = lambda *a, **k: type("K", (), {"kick": lambda self: None})()
        history: list[dict] = []
        try:
            with Stopwatch() as sw:
                for user, assistant in conversation:
                    history += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
                    sess.on_turn(list(history))
                if session_end_only:
                    from automem.extract.transcript import prepare

                    t = prepare(history, cfg.transcript_message_chars, cfg.transcript_max_chars)
                    pipeline.enqueue(loc, [{"role": r, "content": x} for r, x in t.messages], session_id="gw-1",
                                     config=cfg, identity=sess.identity)
            hook_ms = sw.ms / len(conversation)
            sess.shutdown(join_s=0)
            from automem.extract.spool import pending_jobs

            in_jobs = sum(len(text) for j in pending_jobs(loc) for _, text in j.transcript)
            report = pipeline.drain(loc, cfg, backend=None)
        finally:
            pipeline.start_background_drainer = orig
        jobs = report.jobs
        extracted = sum(len(j.get("candidates") or []) for j in jobs)
        total_chars = sum(min(len(u), cfg.transcript_message_chars) + min(len(a), cfg.transcript_message_chars)
                          for u, a in conversation)  # what extraction reads of each message (500 characters)
        return {"every_turns": None if session_end_only else every_turns,
                "every_chars": None if session_end_only else every_chars,
                "jobs": len(jobs), "prompt_tokens": sum(int(j.get("prompt_tokens") or 0) for j in jobs),
                "completion_tokens": sum(int(j.get("completion_tokens") or 0) for j in jobs),
                "transcript_share": round(in_jobs / max(1, total_chars), 3),
                "sync_turn_ms": round(hook_ms, 2), "candidates": extracted}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    conversation = chat(args.turns)
    rows = [run(conversation, t, c) for t, c in ((5, 4000), (10, 4000), (20, 4000), (10, 8000))]
    rows.append(run(conversation, 10, 4000, session_end_only=True))
    if args.json:
        print_json({"turns": args.turns, "rows": rows})
        return 0
    print(header("bench_gateway"))
    print(f"{args.turns} turns of one never-ending Telegram chat, openai backend against a fake server")
    print(f"{'window':<26}{'jobs':>6}{'prompt tok':>12}{'compl tok':>11}{'chat seen':>11}{'sync_turn ms':>14}")
    for r in rows:
        name = ("session end only (seed)" if r["every_turns"] is None
                else f"{r['every_turns']} turns / {r['every_chars']} chars")
        print(f"{name:<26}{r['jobs']:>6}{r['prompt_tokens']:>12}{r['completion_tokens']:>11}"
              f"{r['transcript_share']:>10.0%}{r['sync_turn_ms']:>14}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
