"""The durable spool and its fault matrix, against a real HTTP server on 127.0.0.1 and a real ChromaDB.

Each fault has its own test: server down, timeout, 429 then OK, 500 then OK, garbage then OK, a truncated answer,
a drainer SIGKILLed in the middle of a job. Afterwards every expected memory is stored exactly once and nothing
was raised into the caller.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from automem.config import Config
from automem.extract.drainer import process_one
from automem.extract.pipeline import drain, enqueue, extract_now, spawn_detached_drainer, start_background_drainer
from automem.extract.spool import JobLock, dead_jobs, job_path, pending_jobs, spool_stats
from automem.log import hashed, read_events
from automem.paths import Location
from automem.text import normalise
from tests.support.fake_llm import FakeLLM
from tests.test_pipeline import SEED_ANSWER, SEED_CHAT, free_port, llm_config

# The spool's faults are what is tested, not what the embeddings mean: the cheap embedder spares each drainer
# process the model's 2-3 s (docs/testing.md).
pytestmark = pytest.mark.embedder("hash")

REPO = Path(__file__).resolve().parent.parent
EXPECTED = sorted(normalise(t) for t in ["用户习惯使用vim编辑器", "项目统一使用Python 3.11",
                                        "代码风格遵循PEP8，docstring用Google风格"])
EXTRACT = {"match": {"system": "记忆提取助手"}, "json": SEED_ANSWER}


@pytest.fixture
def env(location):
    """A store on a fresh root, closed at the end; `check()` asserts the expected memories are there once each."""
    from automem.core.store import Store

    holder = {}

    def open_store(cfg):
        holder["store"] = Store(location, cfg)
        return holder["store"]

    def check():
        store = holder["store"]
        every = [m.text for m in store.list(profile=None, include_hidden=True)]
        assert sorted(every) == EXPECTED, every

    yield location, open_store, check
    if "store" in holder:
        holder["store"].close()


def only_job(location):
    jobs = pending_jobs(location)
    assert len(jobs) == 1, jobs
    return jobs[0]


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie may linger when PID 1 does not reap)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def job_events(location, status=None):
    return [e for e in read_events(location, "job") if status is None or e["status"] == status]


# -- the spool itself -------------------------------------------------------------------------------------------
def test_enqueue_is_atomic_idempotent_and_first(location):
    cfg = Config()
    jid = enqueue(location, SEED_CHAT, session_id="s1", config=cfg)
    assert jid and jid == enqueue(location, SEED_CHAT, session_id="s1", config=cfg)
    assert [p.name for p in location.spool_dir.iterdir() if p.is_file()] == [f"{jid}.json"]
    data = json.loads(job_path(location, jid).read_text())
    assert data["attempts"] == 0 and data["profile"] == "default" and data["transcript"][0][0] == "user"
    assert oct(location.spool_dir.stat().st_mode & 0o777) == "0o700"
    assert oct(job_path(location, jid).stat().st_mode & 0o777) == "0o600"
    other = enqueue(location, SEED_CHAT, session_id="s2", config=cfg)
    changed = enqueue(location, SEED_CHAT + [{"role": "user", "content": "还有一件事"}], session_id="s1", config=cfg)
    assert len({jid, other, changed}) == 3
    assert enqueue(location, SEED_CHAT[:1], session_id="s3", config=cfg) is None  # under 2 messages
    assert not list(location.spool_dir.glob(".*.tmp"))


def test_enqueue_never_raises(tmp_path):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    loc = Location(blocked, "default")  # the root is a file: the spool cannot be created
    assert enqueue(loc, SEED_CHAT, session_id="s", config=Config()) is None


def test_a_held_job_lock_keeps_other_drainers_off(env):
    location, open_store, _ = env
    enqueue(location, SEED_CHAT, session_id="s1", config=Config())
    job = only_job(location)
    lock = JobLock(location, job.id)
    assert lock.try_acquire()
    calls = []
    try:
        assert process_one(location, Config(), job, lambda j, d: calls.append(j)) == "locked"
    finally:
        lock.release()
    assert calls == []


def test_two_drainer_processes_never_process_the_same_job(env, tmp_path):
    location, open_store, check = env
    with FakeLLM([{**EXTRACT, "delay": 0.5}]) as llm:
        for i in range(4):
            enqueue(location, SEED_CHAT + [{"role": "user", "content": f"第{i}个会话"}], session_id=f"s{i}",
                    config=Config())
        env_vars = dict(os.environ, PYTHONPATH=str(REPO), AUTOMEM_EXTRACT_BASE_URL=llm.url, GLM_API_KEY="k")
        procs = [subprocess.Popen([sys.executable, "-m", "automem", "drain", "--hermes-home", str(location.root)],
                                  env=env_vars, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        outs = [p.communicate(timeout=240) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        assert len(llm.chat_requests()) == 4  # one call per job, whoever took it
    done = job_events(location, "done")
    assert sorted(e["job"] for e in done) == sorted(set(e["job"] for e in done)) and len(done) == 4
    assert pending_jobs(location) == []
    open_store(Config())
    check()


# -- the fault matrix ---------------------------------------------------------------------------------------------
def test_server_down_then_up(env):
    location, open_store, check = env
    port = free_port()
    cfg = llm_config(f"http://127.0.0.1:{port}/v1")
    store = open_store(cfg)
    result = extract_now(location, SEED_CHAT, config=cfg, session_id="s1", store=store)
    assert result.status == "retry" and "cannot reach" in result.error
    job = only_job(location)
    assert job.attempts == 1 and job.next_attempt_at > time.time() - 1 and "cannot reach" in job.last_error
    with FakeLLM([EXTRACT], port=port) as llm:
        report = drain(location, cfg, store=store, wait_seconds=5)
        assert report.done == 1 and len(llm.chat_requests()) == 1
    check()
    assert pending_jobs(location) == []


def test_timeout_then_ok(env):
    location, open_store, check = env
    with FakeLLM([{**EXTRACT, "delay": 3, "times": 1}, EXTRACT]) as llm:
        cfg = llm_config(llm.url, extract_timeout=0.5)
        store = open_store(cfg)
        enqueue(location, SEED_CHAT, session_id="s1", config=cfg)
        report = drain(location, cfg, store=store, wait_seconds=10)
        assert (report.retry, report.done) == (1, 1)
        assert "within 0.5 s" in job_events(location, "retry")[0]["error"]
        assert len(llm.chat_requests()) == 2
    check()


def test_429_then_ok_honours_retry_after(env):
    location, open_store, check = env
    with FakeLLM([{"status": 429, "retry_after": 1, "times": 1}, EXTRACT]) as llm:
        cfg = llm_config(llm.url, spool_backoff_seconds=30.0, spool_backoff_max_seconds=60.0)
        store = open_store(cfg)
        enqueue(location, SEED_CHAT, session_id="s1", config=cfg)
        report = drain(location, cfg, store=store, wait_seconds=10)
        assert (report.retry, report.done) == (1, 1)
        retry = job_events(location, "retry")[0]
        assert retry["retry_in_s"] == 1.0 and "429" in retry["error"]  # the server's wait, not our 30 s
        gap = llm.chat_requests()[1]["ts"] - llm.chat_requests()[0]["ts"]
        assert 0.9 <= gap < 10
    check()


def test_500_then_ok(env):
    location, open_store, check = env
    with FakeLLM([{"status": 500, "times": 2}, EXTRACT]) as llm:
        cfg = llm_config(llm.url)
        store = open_store(cfg)
        enqueue(location, SEED_CHAT, session_id="s1", config=cfg)
        report = drain(location, cfg, store=store, wait_seconds=10)
        assert (report.retry, report.done) == (2, 1)
        delays = [e["retry_in_s"] for e in job_events(location, "retry")]
        assert delays == [0.05, 0.1]  # exponential back-off
    check()


def test_garbage_then_ok(env):
    location, open_store, check = env
    with FakeLLM([{"match": {"system": "记忆提取助手"}, "text": "当然！我很乐意帮忙。", "times": 1},
                  {"raw": "<html>502 Bad Gateway</html>", "times": 1}, EXTRACT]) as llm:
        cfg = llm_config(llm.url)
        store = open_store(cfg)
        enqueue(location, SEED_CHAT, session_id="s1", config=cfg)
        report = drain(location, cfg, store=store, wait_seconds=10)
        assert (report.retry, report.done) == (2, 1)
        errors = [e["error"] for e in job_events(location, "retry")]
        assert "no JSON memories" in errors[0] and "not JSON" in errors[1]
        # what the model said: in the drainer's report; the log keeps its hash, never the words
        assert "当然" in report.jobs[0]["answer_preview"]
        assert job_events(location, "retry")[0]["answer_preview"] == hashed("当然！我很乐意帮忙。")
    check()


def test_an_answer_cut_off_mid_json_is_retried_and_every_memory_is_stored_once(env):
    """A body cut off mid-transfer is retried. An answer the model itself cut off mid-JSON keeps its complete items,
    and the job runs again (at once, with twice the max_tokens) for the rest; the complete answer then adds only
    what was missing: every memory exists once."""
    location, open_store, check = env
    cut = json.dumps(SEED_ANSWER, ensure_ascii=False)
    cut = cut[:cut.index("代码风格") + 4]
    with FakeLLM([{"match": {"user": "第一次"}, "text": "x" * 400, "truncate_body": 60, "times": 1},
                  {"match": {"system": "记忆提取助手"}, "text": cut, "finish_reason": "length", "times": 1},
                  EXTRACT]) as llm:
        cfg = llm_config(llm.url)
        store = open_store(cfg)
        enqueue(location, SEED_CHAT + [{"role": "user", "content": "第一次"}], session_id="s1", config=cfg)
        report = drain(location, cfg, store=store, wait_seconds=10)
        assert (report.retry, report.done, report.dead) == (2, 1, 0)
        cut_off = job_events(location, "retry")[1]
        assert cut_off["truncated"] and cut_off["error"].startswith("the answer was cut off after 2 memories")
        assert [d["decision"] for d in cut_off["decisions"]] == ["new", "new"]
        done = job_events(location, "done")[0]
        assert sorted(d["decision"] for d in done["decisions"]) == ["duplicate", "duplicate", "new"]
        extraction = [r["body"] for r in llm.chat_requests() if "记忆提取助手" in r["body"]["messages"][0]["content"]]
        assert [b["max_tokens"] for b in extraction] == [800, 800, 1600]
        assert "项目统一使用Python 3.11" in extraction[-1]["messages"][0]["content"]  # P2 names what was stored
    check()


def test_drainer_sigkilled_mid_job_then_recovers(env):
    location, open_store, check = env
    with FakeLLM([{**EXTRACT, "delay": 60, "times": 1}, EXTRACT]) as llm:
        cfg = llm_config(llm.url)
        enqueue(location, SEED_CHAT, session_id="s1", config=cfg)
        env_vars = dict(os.environ, PYTHONPATH=str(REPO), AUTOMEM_EXTRACT_BASE_URL=llm.url, GLM_API_KEY="k",
                        AUTOMEM_SPOOL_BACKOFF_SECONDS="0.2")
        proc = subprocess.Popen([sys.executable, "-m", "automem", "drain", "--hermes-home", str(location.root)],
                                env=env_vars, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 120
        while not llm.chat_requests() and time.time() < deadline:  # the drainer is inside the LLM call
            time.sleep(0.05)
        assert llm.chat_requests(), proc.stderr.read() if proc.poll() is not None else "no request"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        job = only_job(location)
        assert job.attempts == 1  # the attempt was counted when the job was claimed
        store = open_store(cfg)
        report = drain(location, cfg, store=store, wait_seconds=5)
        assert report.done == 1
    check()


def test_sigkilled_at_any_point_stores_each_memory_once(env):
    """Kill drainers at growing offsets after their LLM request arrived (inside the call, while parsing, while
    writing), then let one finish: each memory is stored exactly once."""
    location, open_store, check = env
    with FakeLLM([{**EXTRACT, "delay": 0.3}]) as llm:
        cfg = llm_config(llm.url, spool_max_attempts=12)
        enqueue(location, SEED_CHAT, session_id="s1", config=cfg)
        env_vars = dict(os.environ, PYTHONPATH=str(REPO), AUTOMEM_EXTRACT_BASE_URL=llm.url, GLM_API_KEY="k",
                        AUTOMEM_SPOOL_BACKOFF_SECONDS="0.01", AUTOMEM_SPOOL_MAX_ATTEMPTS="12")
        kills = 0
        # The first three land inside the 0.3 s LLM call whatever the machine's load; the rest later in the job.
        for offset in (0.05, 0.15, 0.25, 0.32, 0.36, 0.42, 0.5, 0.7):
            seen = len(llm.chat_requests())
            proc = subprocess.Popen([sys.executable, "-m", "automem", "drain", "--wait", "5",
                                     "--hermes-home", str(location.root)], env=env_vars,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.time() + 120
            while len(llm.chat_requests()) == seen and proc.poll() is None and time.time() < deadline:
                time.sleep(0.01)
            time.sleep(offset)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait(timeout=10)
            if not pending_jobs(location):
                break
        assert kills >= 3
        store = open_store(cfg)
        drain(location, cfg, store=store, wait_seconds=5)
    assert pending_jobs(location) == [] and dead_jobs(location) == []
    check()


# -- giving up, and coming back -------------------------------------------------------------------------------
def test_after_max_attempts_the_job_is_dead_then_revived(env):
    location, open_store, check = env
    with FakeLLM([{"status": 503, "times": 3}, EXTRACT]) as llm:
        cfg = llm_config(llm.url, spool_max_attempts=3)
        store = open_store(cfg)
        enqueue(location, SEED_CHAT, session_id="s1", config=cfg)
        report = drain(location, cfg, store=store, wait_seconds=10)
        assert (report.retry, report.dead, report.pending) == (2, 1, 0)
        dead = dead_jobs(location)
        assert len(dead) == 1 and "gave up after 3 attempts" in dead[0].last_error and "503" in dead[0].last_error
        assert spool_stats(location)["dead_jobs"] == 1
        report = drain(location, cfg, store=store, retry_dead=True)
        assert (report.revived, report.done) == (1, 1) and dead_jobs(location) == []
    check()


def test_a_rejected_key_goes_to_dead_at_once_with_what_to_do(env):
    location, open_store, check = env
    with FakeLLM([{"status": 401, "times": 1}, EXTRACT]) as llm:
        cfg = llm_config(llm.url)
        store = open_store(cfg)
        result = extract_now(location, SEED_CHAT, config=cfg, session_id="s1", store=store)
        assert result.status == "dead" and "extract_api_key" in result.error
        assert len(llm.chat_requests()) == 1
        assert drain(location, cfg, store=store, retry_dead=True).done == 1
    check()


def test_processing_a_job_again_cannot_duplicate(env):
    location, open_store, check = env
    with FakeLLM([EXTRACT]) as llm:
        cfg = llm_config(llm.url)
        store = open_store(cfg)
        for _ in range(3):  # an explicit re-run of the same content runs the whole pipeline again
            result = extract_now(location, SEED_CHAT, config=cfg, session_id="s1", store=store)
            assert result.status == "done"
        assert [d["decision"] for d in result.decisions] == ["duplicate"] * 3
        assert enqueue(location, SEED_CHAT, session_id="s1", config=cfg)  # done already: not queued again
        assert pending_jobs(location) == []
    check()


# -- drainers for hosts -------------------------------------------------------------------------------------------
def test_detached_drainer_outlives_its_parent(env, tmp_path):
    location, open_store, check = env
    with FakeLLM([{**EXTRACT, "delay": 1.0}]) as llm:
        parent = textwrap.dedent(f"""\
            import json, os, sys
            from automem.paths import Location
            from automem.extract.pipeline import enqueue, spawn_detached_drainer
            loc = Location.resolve({str(location.root)!r})
            jid = enqueue(loc, json.loads(sys.argv[1]), session_id="s1")
            pid = spawn_detached_drainer(loc)
            print(json.dumps({{"job": jid, "pid": pid, "sid": os.getsid(0)}}))
            """)  # exits right away, like `hermes chat -q`
        env_vars = dict(os.environ, PYTHONPATH=str(REPO), AUTOMEM_EXTRACT_BASE_URL=llm.url, GLM_API_KEY="k")
        env_vars.pop("HERMES_HOME", None)
        t0 = time.monotonic()
        out = subprocess.run([sys.executable, "-c", parent, json.dumps(SEED_CHAT, ensure_ascii=False)], env=env_vars,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        parent_s = time.monotonic() - t0
        info = json.loads(out.stdout)
        assert info["pid"] and os.getsid(info["pid"]) != info["sid"]  # its own session
        deadline = time.time() + 120
        while (pending_jobs(location) or not job_events(location, "done")) and time.time() < deadline:
            time.sleep(0.2)
        assert job_events(location, "done")[0]["job"] == info["job"]
        assert parent_s < 10  # the parent did not wait for the extraction
        # the drainer exits once nothing is due
        for _ in range(150):
            if not running(info["pid"]):
                break
            time.sleep(0.1)
        else:
            pytest.fail("the detached drainer is still running with nothing due")
    open_store(Config())
    check()


def test_a_second_detached_drainer_is_not_started_while_one_runs(location):
    from automem.extract.drainer import SingleDrainer

    enqueue(location, SEED_CHAT, session_id="s1", config=Config())
    guard = SingleDrainer(location)
    assert guard.try_acquire()
    try:
        assert spawn_detached_drainer(location) is None
    finally:
        guard.release()


def test_background_thread_drainer(env):
    location, open_store, check = env
    with FakeLLM([EXTRACT]) as llm:
        cfg = llm_config(llm.url)
        store = open_store(cfg)
        from automem.extract.pipeline import stop_background_drainers

        drainer = start_background_drainer(location, cfg, store=store)
        try:
            enqueue(location, SEED_CHAT, session_id="s1", config=cfg)
            assert start_background_drainer(location, cfg) is drainer  # one thread per profile, kicked
            deadline = time.time() + 60
            while not job_events(location, "done") and time.time() < deadline:
                time.sleep(0.05)
            assert job_events(location, "done") and drainer.alive
        finally:
            stop_background_drainers()
        assert not drainer.alive
    check()


def test_every_job_is_logged_with_tokens_latency_and_decisions(env):
    location, open_store, _ = env
    with FakeLLM([EXTRACT]) as llm:
        cfg = llm_config(llm.url)
        store = open_store(cfg)
        extract_now(location, SEED_CHAT, config=cfg, session_id="s1", store=store)
    rec = job_events(location, "done")[0]
    assert rec["backend"] == "openai" and rec["prompt_tokens"] > 100 and rec["completion_tokens"] > 10
    assert rec["latency_ms"] > 0 and len(rec["candidates"]) == 3 and len(rec["decisions"]) == 3
    assert rec["error"] == "" and rec["attempt"] == 1


def test_leftover_locks_and_temporary_files_are_cleaned_and_dead_jobs_expire(location):
    from automem.extract.spool import Job, cleanup_leftovers, ensure_spool, move_to_dead, write_atomic

    ensure_spool(location)
    locks = location.spool_dir / ".locks"
    now = time.time()

    def job(jid: str) -> Job:
        return Job(id=jid, profile="default", transcript=[["user", "hi there"], ["assistant", "hello"]],
                   created_at=now)

    write_atomic(job_path(location, "j_pending"), job("j_pending").to_json())
    for jid in ("j_pending", "j_finished", "j_held", "j_dead_old", "j_dead_new"):
        (locks / f"{jid}.lock").write_text("")
    held = JobLock(location, "j_held")
    assert held.try_acquire()  # a drainer still finishing that job
    for jid, age_days in (("j_dead_old", 31), ("j_dead_new", 29)):
        move_to_dead(location, job(jid), "gave up")
        os.utime(job_path(location, jid, dead=True), (now - age_days * 86400, now - age_days * 86400))
    stale_tmp = location.spool_dir / ".j_x.json.4242.1.tmp"
    fresh_tmp = location.spool_dir / ".j_y.json.4243.1.tmp"
    for tmp in (stale_tmp, fresh_tmp):
        tmp.write_text("{")
    os.utime(stale_tmp, (now - 7200, now - 7200))
    try:
        removed = cleanup_leftovers(location, Config(), now=now)
    finally:
        held.release()
    assert removed == {"locks": 3, "tmp": 1, "dead_expired": 1}
    assert sorted(p.name for p in locks.iterdir()) == ["j_held.lock", "j_pending.lock"]
    assert not stale_tmp.exists() and fresh_tmp.exists()
    assert [j.id for j in dead_jobs(location)] == ["j_dead_new"]
    [expired] = read_events(location, "dead_job_expired")
    assert expired["job"] == "j_dead_old" and expired["age_days"] == 31.0
    # the period is configurable; drain runs the cleanup
    os.utime(job_path(location, "j_dead_new", dead=True), (now - 3 * 86400, now - 3 * 86400))
    drain(location, Config(spool_dead_keep_days=2, extract_backend="rules"), backend=None, store=None, max_jobs=0)
    assert dead_jobs(location) == [] and not (locks / "j_held.lock").exists()
