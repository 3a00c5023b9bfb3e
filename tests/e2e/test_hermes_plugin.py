"""automem inside the real Hermes Agent 0.19.0 CLI (issue 4), against a scripted model on 127.0.0.1 (SSE).

One Hermes root (HOME and HERMES_HOME in a temporary folder) with the default profile and `blog-writer`, both
installed by `automem install`. The extraction LLM is the `openai` backend pointed at the same fake server, whose
rules answer extraction requests (the seed's system prompt) with the JSON a model would give.

The tests run in file order and build on one store: install + doctor, the seed's checks 1-3 through `hermes chat
-Q -q`, profile isolation, the agent tools, the general-hook fallback beside another memory provider.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from automem.config import Config
from automem.extract.spool import is_done
from automem.log import read_events
from automem.paths import Location
from automem.text import RECALL_MARKER, normalise
from tests.support.fake_llm import FakeLLM, content_text
from tests.support.hermes import HermesRoot, find_hermes, poll, request_texts

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(find_hermes() is None, reason="hermes-agent is not installed")]

REPO = Path(__file__).resolve().parents[2]
EXTRACTOR = "你是一个记忆提取助手"  # the seed's extraction system prompt starts so
JUDGE = "你是一个记忆去重助手"
SEED_TURN = "我习惯用vim编辑器，不要给我推荐nano。我的项目统一用Python 3.11。代码风格遵循PEP8，docstring用Google风格。"
VIM = normalise("用户习惯使用vim编辑器，不要推荐nano")  # as stored: NFKC turns the full-width comma into ","
PY311 = "项目统一使用Python 3.11"
PEP8 = normalise("代码风格遵循PEP8，docstring用Google风格")
QUESTION = "你知道我用什么编辑器吗？"
FALLBACK_TURN = "FALLBACK: 以后写文章都用Markdown格式"
MARKDOWN = "文章一律使用Markdown格式"
DB_FACT = "用户最喜欢的数据库是SQLite"

RULES = [
    # the extraction LLM (automem's openai backend): the seed session, the fallback session, anything else
    {"match": {"system": EXTRACTOR, "user": "我习惯用vim编辑器"},
     "json": {"persona": [VIM], "episodic": [], "instruction": [PY311, PEP8]}},
    {"match": {"system": EXTRACTOR, "user": "FALLBACK"},
     "json": {"persona": [], "episodic": [], "instruction": [MARKDOWN]}},
    {"match": {"system": EXTRACTOR}, "json": {"persona": [], "episodic": [], "instruction": []}},
    {"match": {"system": JUDGE}, "text": json.dumps(["duplicate"] * 8)},
    # the agent's model (Hermes)
    {"match": {"user": QUESTION, "system": "用户习惯使用vim编辑器"}, "text": "你习惯用 vim 编辑器（不要 nano）。"},
    {"match": {"user": "TOOLTEST", "after_tool": False},
     "tool_calls": [{"name": "automem_remember", "arguments": {"text": DB_FACT, "category": "persona"}}]},
    {"match": {"user": "TOOLTEST", "after_tool": "automem_remember"},
     "tool_calls": [{"name": "automem_search", "arguments": {"query": "用户喜欢用哪个数据库？", "k": 3}}]},
    {"match": {"user": "TOOLTEST", "after_tool": "automem_search"},
     "tool_calls": [{"name": "automem_forget",
                     "arguments": {"ids": [f'$RE:"id": "(m_[0-9a-f]+)", "text": "{DB_FACT}":RE$']}}]},
    {"match": {"user": "TOOLTEST", "after_tool": "automem_forget"}, "text": "TOOLS-DONE"},
    {"match": {"user": "FALLBACK", "after_tool": False},
     "tool_calls": [{"name": "automem_search", "arguments": {"query": "Python版本"}}]},
    {"match": {"user": "FALLBACK", "after_tool": "automem_search"}, "text": "FALLBACK-DONE"},
    {"match": {"no_tools": True}, "text": "title"},  # Hermes' auxiliary calls
]


class Env:
    def __init__(self, hermes: HermesRoot, llm: FakeLLM):
        self.h, self.llm = hermes, llm

    def loc(self, profile: str = "default") -> Location:
        return Location(self.h.root, profile)

    def memories(self, profile: str | None = None, include_hidden: bool = False):
        from automem.core.store import Store

        store = Store(self.loc(), Config())
        try:
            return store.list(profile=None, include_hidden=include_hidden) if profile is None else \
                [m for m in store.list(profile=None, include_hidden=include_hidden) if m.profile == profile]
        finally:
            store.close()

    def job_of(self, session_id: str, profile: str = "default") -> str | None:
        for ev in read_events(self.loc(profile), "job_enqueued"):
            if ev.get("session_id") == session_id:
                return ev["job"]
        return None

    def wait_job(self, session_id: str, profile: str = "default", deadline_s: float = 120) -> str:
        job = poll(lambda: self.job_of(session_id, profile), deadline_s=10, what=f"job of session {session_id}")
        poll(lambda: is_done(self.loc(profile), job), deadline_s=deadline_s, what=f"job {job} drained")
        return job

    def agent_requests(self) -> list[dict]:
        """The chat requests Hermes sent (with tools), not automem's extraction calls."""
        return [r for r in self.llm.chat_requests() if (r["body"] or {}).get("tools")]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    llm = FakeLLM(RULES).start()
    umask = os.umask(0o022)  # permissive, as on many machines: automem's files must be owner-only anyway
    base = tmp_path_factory.mktemp("hermes-e2e")
    extraction = (f"automem:\n  extract_backend: openai\n  extract_base_url: {llm.url}\n"
                  f"  extract_api_key: fake-extract-key\n  extract_model: glm-4-flash\n")
    h = HermesRoot.create(base, llm.url, extra_config=extraction)
    try:
        yield Env(h, llm)
    finally:
        os.umask(umask)
        llm.stop()


def test_install_into_a_fresh_root_and_profile_then_doctor_is_green(env):
    h = env.h
    res = h.automem("install", "--hermes-home", str(h.root), "--profile", "default", "--profile", "blog-writer",
                    "--no-pip").check()
    assert "created with `hermes profile create --clone --no-alias`" in res.stdout
    assert "imports automem" in res.stdout  # Hermes' interpreter (PYTHONPATH here) can import it
    for profile in ("default", "blog-writer"):
        home = h.profile_home(profile)
        assert (home / "plugins" / "automem" / "__init__.py").is_file()
        assert (home / "skills" / "automem" / "SKILL.md").is_file()
    assert "Blog Writer Agent" in (h.profile_home("blog-writer") / "SOUL.md").read_text(encoding="utf-8")
    # Hermes itself sees the plugin enabled and the provider available, in both profiles
    for profile in ("default", "blog-writer"):
        listed = h.hermes_cmd("plugins", "list", "--plain", "--no-bundled", profile=profile).check().stdout
        assert any("automem" in line and "enabled" in line for line in listed.splitlines()), listed
    res = h.automem("doctor", "--hermes-home", str(h.root), "--profile", "default", "--profile", "blog-writer",
                    "--check-llm", "--json")
    checks = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    bad = [c for c in checks if c["status"] not in ("ok",)]
    assert res.returncode == 0 and not bad, bad
    names = {c["name"] for c in checks}
    assert {"hermes interpreter", "default: hermes memory status", "blog-writer: hermes memory status", "store",
            "embedding", "spool", "llm endpoint"} <= names


def test_seed_checks_1_2_3_through_hermes(env):
    h = env.h
    # check 1: one chat in which the user says the three lines; the detached drainer extracts after Hermes exits
    t0 = time.monotonic()
    res = h.chat(SEED_TURN).check()
    sid = res.session_id
    assert sid and res.stdout.strip()
    env.wait_job(sid)
    mems = {m.text: m for m in env.memories()}
    assert set(mems) == {VIM, PY311, PEP8}, list(mems)
    assert mems[VIM].category == "persona" and mems[VIM].wing == "user"
    assert mems[PY311].category == "instruction" and mems[PEP8].category == "instruction"
    assert {m.profile for m in mems.values()} == {"default"}
    assert {m.room for m in mems.values()} == {"auto-extract"} and {m.session_id for m in mems.values()} == {sid}
    extraction = [r for r in env.llm.chat_requests() if EXTRACTOR in content_text(r["body"]["messages"][0]["content"])]
    assert extraction and extraction[0]["body"]["model"] == "glm-4-flash"
    assert "vim" in content_text(extraction[0]["body"]["messages"][-1]["content"])
    print(f"check 1: memories stored {time.monotonic() - t0:.1f} s after the chat started")

    # check 2: the same session again adds nothing
    before = {m.id for m in env.memories(include_hidden=True)}
    res = h.chat(SEED_TURN).check()
    env.wait_job(res.session_id)
    after = env.memories(include_hidden=True)
    assert {m.id for m in after} == before and all(m.status == "active" for m in after)

    # check 3: a new session asks which editor; the model's request carries the vim memory
    env.llm.clear()
    res = h.chat(QUESTION).check()
    [first, *_] = env.agent_requests()
    system = content_text(first["body"]["messages"][0]["content"])
    assert RECALL_MARKER in system and f"- [persona, owner] {VIM}" in system
    assert QUESTION in content_text(first["body"]["messages"][-1]["content"])
    assert request_texts([first])[0].count(VIM) == 1  # once: the general role's pre_llm_call stays quiet
    assert "vim" in res.stdout
    env.wait_job(res.session_id)  # its own extraction adds nothing either (recalled context is not re-extracted)
    assert {m.id for m in env.memories(include_hidden=True)} == before


def test_profile_isolation(env):
    from automem.core.store import Store
    from automem.core.write_path import Candidate, remember

    store = Store(env.loc(), Config())
    try:
        remember(store, [Candidate("用户的猫叫Mochi", "user", "default", room="cli"),
                         Candidate("发布博客前必须运行hugo --minify", "instruction", "default", room="cli")])
    finally:
        store.close()  # refreshes the recall snapshot the next Hermes start reads
    env.llm.clear()
    h = env.h
    h.chat("今天写点什么？", profile="blog-writer").check()
    [first, *_] = env.agent_requests()
    text = request_texts([first])[0]
    assert "Mochi" not in text and VIM not in text  # persona memories of default: never in blog-writer
    assert "[instruction, owner via default] 发布博客前必须运行hugo --minify" in text  # shared wing: yes
    assert f"[instruction, owner via default] {PY311}" in text
    assert "Blog Writer Agent" in text  # and it really was the blog-writer profile


def test_agent_tools_through_hermes(env):
    env.llm.clear()
    res = env.h.chat("TOOLTEST please remember my database").check()
    assert "TOOLS-DONE" in res.stdout
    reqs = env.agent_requests()
    tools = {t["function"]["name"] for t in reqs[0]["body"]["tools"]}
    assert {"automem_search", "automem_remember", "automem_forget"} <= tools

    def tool_result(req):
        return json.loads(content_text(req["body"]["messages"][-1]["content"]))

    remembered = tool_result(reqs[1])
    assert remembered["decision"] == "new" and remembered["category"] == "persona"
    found = tool_result(reqs[2])["results"]
    assert found[0]["id"] == remembered["id"] and found[0]["text"] == DB_FACT and found[0]["profile"] == "default"
    forgotten = tool_result(reqs[3])
    assert forgotten["forgotten"] == [remembered["id"]]
    assert [m for m in env.memories(include_hidden=True) if m.id == remembered["id"]] == []  # deleted
    # the words are gone from every file automem keeps (Hermes' own state.db still has the conversation)
    automem = env.h.root / "automem"
    assert [p for p in automem.rglob("*") if p.is_file() and DB_FACT.encode() in p.read_bytes()] == []


def test_general_hook_fallback_beside_another_memory_provider(env):
    h = env.h
    from automem.hermes import yaml_edit as Y

    h.create_profile("editor")  # --clone: the root's config, automem's keys included, but no plugins/ folder
    cfg = h.config_path("editor")
    text, _ = Y.edit_config(cfg.read_text(encoding="utf-8"), [Y.set_value("memory", "provider", value="holographic")])
    cfg.write_text(text, encoding="utf-8")
    refused = h.automem("install", "--hermes-home", str(h.root), "--profile", "editor", "--no-pip")
    assert refused.returncode == 2 and "holographic" in refused.stderr and "--keep-provider" in refused.stderr
    h.automem("install", "--hermes-home", str(h.root), "--profile", "editor", "--keep-provider", "--no-pip").check()
    env.llm.clear()
    res = h.chat(FALLBACK_TURN, profile="editor").check()
    assert "FALLBACK-DONE" in res.stdout
    reqs = env.agent_requests()
    # recall without the provider: pre_llm_call put the block into the first user message
    user = content_text(reqs[0]["body"]["messages"][-1]["content"])
    assert FALLBACK_TURN in user and f"[instruction, owner via default] {PY311}" in user and RECALL_MARKER in user
    assert VIM not in user  # default's persona stays default's
    # the registry tool (general role) answered: shared instructions of other profiles are visible
    result = json.loads(content_text(reqs[1]["body"]["messages"][-1]["content"]))
    assert any(r["text"] == PY311 for r in result["results"])
    # extraction came from on_session_finalize + state.db, not from a provider
    env.wait_job(res.session_id, profile="editor")
    sources = [e["source"] for e in read_events(env.loc("editor"), "session_enqueued")
               if e.get("session_id") == res.session_id]
    assert sources == ["on_session_finalize"]
    [mem] = [m for m in env.memories("editor")]
    assert mem.text == MARKDOWN and mem.category == "instruction"


def test_overhead_bench_script_runs(env):
    """The overhead figure comes from the bench script (printed, not asserted); here: it runs and reports."""
    out = env.h.run([sys.executable, "-m", "scripts.bench_hermes_overhead", "--runs", "1", "--warmup", "0",
                     "--memories", "20", "--samples", "2", "--json"], timeout=300).check()
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["plain_s"]["median"] > 0 and result["automem_s"]["median"] > 0
    assert result["start_path"]["heavy_modules"] == []  # no chromadb / model on Hermes' start path
    in_hermes = result["start_path_in_hermes"]  # the same probe after Hermes' own imports
    assert in_hermes["heavy_modules"] == [] and in_hermes["block_chars"] > 0
    assert 0 < in_hermes["cpu_ms"] and 0 < result["own_cpu_in_hermes_ms"]
    print("overhead (1 run, smoke):", result["overhead_median_pct"], "%", result["start_path"])


def _interactive(h: HermesRoot, steps: list[tuple[str, bytes, float]]) -> bytes:
    """Drive interactive `hermes chat` in a pseudo-terminal: for each (text to type, output to wait for, timeout)."""
    import os
    import pty
    import select
    import signal

    pid, fd = pty.fork()
    if pid == 0:  # the child: Hermes in the fake home
        os.chdir(str(h.home))
        os.execve(h.hermes, [h.hermes, "chat"], h.env(TERM="xterm", COLUMNS="120", LINES="40"))
    out = b""

    def until(marker: bytes, timeout: float) -> None:
        nonlocal out
        start = len(out)
        end = time.monotonic() + timeout
        while time.monotonic() < end and marker not in out[start:]:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    return
                if not data:
                    return
                out += data
        assert marker in out[start:], f"no {marker!r} within {timeout} s; output ends {out[-300:]!r}"

    try:
        for text, marker, timeout in steps:
            if text:
                os.write(fd, text.encode("utf-8"))
            until(marker, timeout)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                pid = 0
                break
            try:  # keep draining its output, or a full pty would block its exit
                if select.select([fd], [], [], 0.2)[0]:
                    out += os.read(fd, 65536)
            except OSError:  # the terminal closed: Hermes is exiting
                time.sleep(0.2)
        else:
            raise AssertionError("hermes did not exit after /exit")
    finally:
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        os.close(fd)
    return out


def test_new_then_exit_delivers_the_old_session_twice_and_it_is_one_job(env):
    """Interactive /new, then /exit: Hermes 0.19 calls the provider's on_session_end for the old session at /new and
    again, with the same messages, at exit. automem enqueues it once."""
    h = env.h
    line = "INTERACTIVE: 今天天气不错，我们聊聊"
    before = {e["job"] for e in read_events(env.loc(), "job_enqueued")}
    ended_before = len(read_events(env.loc(), "session_enqueued"))
    _interactive(h, [("", "❯".encode(), 60),  # the prompt is up
                     (line + "\r", b"FAKE-ANSWER", 60),
                     ("/new\r", b"1/2/3", 30),  # Hermes asks how to start the new session
                     ("1\r", "❯".encode(), 30),
                     ("/exit\r", b"", 1)])
    events = read_events(env.loc(), "session_enqueued")[ended_before:]
    # the second delivery found nothing the session had not extracted already (its progress)
    assert len(events) == 1 and len(events[0]["jobs"]) == 1, events
    new_jobs = [e for e in read_events(env.loc(), "job_enqueued") if e["job"] not in before]
    assert len(new_jobs) == 1


def test_the_automem_folder_is_owner_only_after_the_sessions(env):
    """Every `hermes chat` above ran under umask 0o022: still no file or folder readable by group or others."""
    automem = env.h.root / "automem"
    assert (automem / "chroma" / "chroma.sqlite3").is_file() and (automem / "index" / "recall.sqlite3").is_file()
    loose = [f"{p.relative_to(env.h.root)} {oct(stat.S_IMODE(p.lstat().st_mode))}"
             for p in [automem, *automem.rglob("*")] if not p.is_symlink() and stat.S_IMODE(p.lstat().st_mode) & 0o077]
    assert loose == []
