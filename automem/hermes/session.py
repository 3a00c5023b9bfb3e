"""What automem does inside one Hermes agent: recall, extraction triggers, the built-in-memory mirror, the tools
(their schemas and handlers are automem.hermes.tools), and the general-hook fallback when no provider runs.

The Hermes plugin (`hooks/automem/__init__.py`) only translates Hermes' calls into these methods; this module
imports no Hermes code and runs without Hermes. Hermes calls `initialize`, `system_prompt_block` and the first
`prefetch` on the start path of every `hermes chat`, so nothing here imports chromadb or loads the embedding model
until a tool call, a mirror write or a warm-up needs the store (see `automem.core.recall` for how recall avoids it).

Costs on the start path (measured by scripts/bench_hermes_overhead.py): config read, a few reads of the recall
index (SQLite), one question to the resident recall process (or, when none answers, a keyword match in the
index). Session end writes one spool file and starts a detached drainer process.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from ..config import Config, load_config
from ..core.identity import OWNER_IDENTITY, Identity
from ..log import log_event
from ..paths import Location, sqlite_ro_uri

# The plugin (hooks/automem) imports the tools' schemas from here, as plugins copied by older automem do.
from .tools import TOOL_NAMES, TOOL_SCHEMAS, mirror_write, run_tool  # noqa: F401

# Contexts whose transcripts are not the user's conversation (Hermes' own docs: skip writes there).
NON_PRIMARY_CONTEXTS = ("cron", "flush", "subagent")
WARMUP_DELAY_S = 2.0  # after a turn; a one-shot `hermes chat -q` has exited by then
MIRROR_JOIN_S = 20.0  # shutdown waits this long for mirror writes (Hermes' exit watchdog is 30 s)


# -- the state.db transcript (general-hook fallback) ---------------------------------------------------------------
def read_state_transcript(profile_home: Path, session_id: str) -> list[dict]:
    """A session's user/assistant messages from the profile's `state.db` (read only), oldest first."""
    path = Path(profile_home) / "state.db"
    if not session_id or not path.is_file():
        return []
    conn = sqlite3.connect(sqlite_ro_uri(path), uri=True, timeout=5)
    try:
        cols = {row[1] for row in conn.execute("PRAGMA table_info(messages)")}
        active = " AND active = 1" if "active" in cols else ""
        rows = conn.execute(
            f"SELECT role, content FROM messages WHERE session_id = ? AND role IN ('user', 'assistant'){active} "
            f"ORDER BY id", (session_id,)).fetchall()
    finally:
        conn.close()
    return [{"role": role, "content": content} for role, content in rows if content]


# -- extraction triggers ------------------------------------------------------------------------------------------
def enqueue_and_drain(location: Location, config: Config, messages: Sequence[dict], *, session_id: str,
                      source: str, detached: bool = True, identity: Identity = OWNER_IDENTITY) -> list[str]:
    """Put the extraction jobs of `messages` (one per window) in the spool and make sure a drainer runs.
    Returns the job ids ([]: nothing to do)."""
    from ..extract import pipeline

    if not config.auto_extract:
        return []
    task_id = os.environ.get("HERMES_KANBAN_TASK", "")  # a kanban worker's session belongs to its task
    jobs = pipeline.enqueue_windows(location, list(messages), session_id=session_id, task_id=task_id, source=source,
                                    config=config, identity=identity)
    if not jobs:
        return []
    if detached:
        pipeline.spawn_detached_drainer(location)
    else:
        pipeline.start_background_drainer(location, config).kick()
    return jobs


def extract_new(location: Location, config: Config, session_id: str, messages: Sequence[dict], *, source: str,
                identity: Identity, detached: bool, only_if_due: bool = False) -> list[str]:
    """Enqueue what of `messages` this session has not extracted yet (all of it, or only a full window when
    `only_if_due`), and record it in the session's progress. Returns the job ids."""
    from ..extract import progress as P

    if not config.auto_extract or not session_id:
        return []
    with P.locked(location, session_id) as prog:
        if identity != OWNER_IDENTITY:
            prog.identity = identity.to_json()
        new = P.unseen(messages, prog.seen)
        if not new or (only_if_due and not P.window_due(new, config.extract_every_turns, config.extract_every_chars)):
            return []
        jobs = enqueue_and_drain(location, config, new, session_id=session_id, source=source, detached=detached,
                                 identity=identity)
        if jobs:
            P.mark(prog, new, jobs)
        return jobs


class HermesSession:
    """automem's state for one Hermes agent (one provider instance)."""

    def __init__(self, location: Location, config: Config, *, session_id: str = "", platform: str = "cli",
                 agent_context: str = "primary", open_store: Callable[[], Any] | None = None,
                 identity: Identity = OWNER_IDENTITY):
        self.location = location
        self.config = config
        self.session_id = session_id
        self.platform = platform or "cli"
        self.agent_context = agent_context or "primary"
        self.identity = identity
        self._open_store = open_store
        self._store = None
        self._store_lock = threading.Lock()
        self._shown: set[str] = set()
        self._mirrors: list[threading.Thread] = []
        self._warmup: threading.Timer | None = None
        self._idle: threading.Timer | None = None
        self._last_messages: list[dict] = []
        self._user_words: list[str] = []  # what the user said in this session (bounded): agent writes are checked
        self._closing = False

    @classmethod
    def start(cls, hermes_home: str | None, *, session_id: str = "", platform: str = "cli",
              agent_context: str = "primary", profile: str | None = None,
              gateway: dict | None = None) -> "HermesSession":
        """The session of one agent; `gateway` holds the identity kwargs Hermes passed (user_id, chat_id, ...)."""
        from .gateway import OWNER_PLATFORMS, identify

        location = Location.resolve(hermes_home, profile)
        config = load_config(location)
        identity = identify({**(gateway or {}), "platform": platform, "session_id": session_id}, config,
                            legacy_before=scope_rule_since(location) if platform not in OWNER_PLATFORMS else None)
        sess = cls(location, config, session_id=session_id, platform=platform, agent_context=agent_context,
                   identity=identity)
        if identity != OWNER_IDENTITY and session_id and sess.writes_allowed:
            sess._remember_identity()
        return sess

    def _remember_identity(self) -> None:
        """Keep whose session this is beside its progress, for deliveries that come without the kwargs."""
        from ..extract import progress as P

        try:
            with P.locked(self.location, self.session_id) as prog:
                prog.identity = self.identity.to_json()
        except Exception as exc:  # noqa: BLE001 - a later delivery with the kwargs records it again
            log_event(self.location, "progress_failed", session_id=self.session_id,
                      error=f"{exc.__class__.__name__}: {exc}")

    # -- the store, opened only when needed -------------------------------------------------------------------
    def store(self):
        with self._store_lock:
            if self._store is None:
                if self._open_store is not None:
                    self._store = self._open_store()
                else:
                    from ..core.store import open_store

                    self._store = open_store(self.location, self.config)
            return self._store

    @property
    def warm(self) -> bool:
        return self._store is not None and getattr(self._store, "_collection", None) is not None

    @property
    def writes_allowed(self) -> bool:
        return self.agent_context not in NON_PRIMARY_CONTEXTS

    @property
    def detached_drainer(self) -> bool:
        """A CLI run (and a kanban worker) exits right after session end: the drainer must outlive it. A gateway
        lives on and drains in a thread."""
        return self.platform in ("cli", "")

    # -- recall -----------------------------------------------------------------------------------------------
    def system_prompt_block(self) -> str:
        from ..core.recall import system_prompt_block

        text, ids = system_prompt_block(self.location, self.config, open_store=self.store,
                                        scopes=self.identity.reads)
        self._shown.update(ids)
        return text

    USER_WORDS_KEPT = 200  # user messages
    USER_WORD_CHARS = 2000  # of each

    def note_user_words(self, texts: Sequence[str]) -> None:
        """Remember what the user said (each message once, the newest USER_WORDS_KEPT, cut): the words agent-written
        instructions are checked against."""
        for text in texts:
            text = (text or "")[:self.USER_WORD_CHARS]
            if text.strip() and text not in self._user_words[-self.USER_WORDS_KEPT:]:
                self._user_words.append(text)
        del self._user_words[:-self.USER_WORDS_KEPT]

    def user_words(self) -> list[str]:
        return list(self._user_words)

    def prefetch(self, query: str) -> str:
        from ..core.recall import prefetch_block

        self.note_user_words([query])
        store = self._store if self.warm else None
        text, ids = prefetch_block(self.location, self.config, query, store=store, exclude=self._shown,
                                   scopes=self.identity.reads)
        self._shown.update(ids)
        return text

    def queue_prefetch(self, query: str) -> None:
        """After a turn: warm the store and the model in the background for the next turns (long-lived sessions)."""
        if self.warm or self._closing or self._warmup is not None:
            return
        self._warmup = threading.Timer(WARMUP_DELAY_S, self._warm)
        self._warmup.daemon = True
        self._warmup.start()

    def _warm(self) -> None:
        if self._closing:
            return
        try:
            store = self.store()
            store.count()
            store.embed(["warm-up"])
        except Exception as exc:  # noqa: BLE001 - recall falls back to the lexical match
            log_event(self.location, "warmup_failed", error=f"{exc.__class__.__name__}: {exc}")

    # -- extraction -------------------------------------------------------------------------------------------
    def _extract(self, messages: Sequence[dict], source: str, only_if_due: bool = False) -> list[str]:
        if not self.writes_allowed or not messages:
            return []
        jobs = extract_new(self.location, self.config, self.session_id, messages, source=source,
                           identity=self.identity, detached=self.detached_drainer, only_if_due=only_if_due)
        if jobs:
            log_event(self.location, "session_enqueued", jobs=jobs, source=source, session_id=self.session_id,
                      messages=len(messages), scope=self.identity.why)
        return jobs

    def on_turn(self, messages: Sequence[dict]) -> list[str]:
        """After every turn (`sync_turn`): extract a window once enough is new; in a long-lived process, extract a
        smaller remainder after `extract_idle_seconds` of quiet. A gateway chat that never ends is extracted
        as it goes."""
        if not self.writes_allowed or self._closing or not messages:
            return []
        self._last_messages = list(messages)
        self.note_user_words(_user_texts(messages))
        jobs = self._extract(messages, "sync_turn", only_if_due=True)
        if not self.detached_drainer:
            self._arm_idle_flush()
        return jobs

    def _arm_idle_flush(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        self._idle = threading.Timer(self.config.extract_idle_seconds, self._flush_idle)
        self._idle.daemon = True
        self._idle.start()

    def _flush_idle(self) -> None:
        try:
            if not self._closing:
                self._extract(self._last_messages, "idle")
        except Exception as exc:  # noqa: BLE001 - the next delivery picks the messages up
            log_event(self.location, "idle_flush_failed", error=f"{exc.__class__.__name__}: {exc}")

    def on_session_end(self, messages: Sequence[dict], source: str = "on_session_end") -> list[str]:
        """Extract whatever of the session is left. Re-delivered messages (the old session's messages again at
        exit after `/new`, the history again after a restart) are in the session's progress already."""
        return self._extract(messages, source)

    def on_pre_compress(self, messages: Sequence[dict]) -> str:
        """Before context compression: what is about to be summarised away is extracted first."""
        self._extract(messages, "pre_compress")
        return ""

    def on_session_switch(self, new_session_id: str, reset: bool = False, parent_session_id: str = "") -> None:
        old = self.session_id
        if new_session_id:
            self.session_id = new_session_id
        if reset:
            self._shown.clear()
            self._last_messages = []
        if new_session_id and old and new_session_id != old:
            from ..extract import progress as P

            # Compression continues the session under a new id with messages the old id already extracted; after
            # `/new` Hermes delivers the old session's messages once more, under the new id. Either way, what the
            # old id extracted counts as extracted for the new one.
            try:
                P.carry_over(self.location, parent_session_id or old, new_session_id)
            except Exception as exc:  # noqa: BLE001 - worst case a window is extracted twice (the write path dedups)
                log_event(self.location, "progress_failed", session_id=new_session_id,
                          error=f"{exc.__class__.__name__}: {exc}")
        if self.identity != OWNER_IDENTITY and new_session_id and new_session_id != old and self.writes_allowed:
            self._remember_identity()
        _note_active(self, old, self.session_id)

    # -- the built-in memory mirror ---------------------------------------------------------------------------
    def on_memory_write(self, action: str, target: str, content: str, metadata: dict | None = None) -> None:
        """Mirror in a thread (the store costs seconds to open); shutdown waits for it."""
        if not self.writes_allowed or action not in ("add", "replace", "remove"):
            return
        meta = dict(metadata or {})
        meta.setdefault("session_id", self.session_id)

        def run() -> None:
            try:
                out = mirror_write(self.store(), self.location.profile, action, target, content or "", meta,
                                   self.identity, self.user_words())
                log_event(self.location, "mirror", **out)
            except Exception as exc:  # noqa: BLE001
                log_event(self.location, "mirror_failed", action=action, target=target, content=content,
                          error=f"{exc.__class__.__name__}: {exc}")

        thread = threading.Thread(target=run, name="automem-mirror", daemon=True)
        self._mirrors.append(thread)
        thread.start()

    # -- tools ------------------------------------------------------------------------------------------------
    def handle_tool(self, name: str, args: Any) -> str:
        judge = self.judge() if name == "automem_remember" else None
        return run_tool(self.store(), self.location.profile, name, args, self.session_id, self.identity, judge=judge,
                        user_words=self.user_words())

    def judge(self):
        """The write path's judge for this session's tool writes: the backend extraction would use here (the
        host's model inside Hermes), or None offline."""
        try:
            from ..extract.pipeline import judge_for

            return judge_for(self.location, self.config, origin="hermes")
        except Exception as exc:  # noqa: BLE001 - the rules decide alone
            log_event(self.location, "judge_unavailable", error=f"{exc.__class__.__name__}: {exc}")
            return None

    # -- shutdown ---------------------------------------------------------------------------------------------
    def shutdown(self, join_s: float = MIRROR_JOIN_S) -> None:
        self._closing = True
        for timer in (self._warmup, self._idle):
            if timer is not None:
                timer.cancel()
        deadline = time.monotonic() + join_s
        for thread in self._mirrors:
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                log_event(self.location, "mirror_unfinished", note="process exiting before a mirror write ended")
        self._mirrors = [t for t in self._mirrors if t.is_alive()]
        with self._store_lock:
            store, self._store = self._store, None
        if store is not None:
            store.close()


# -- the process-wide registry both plugin roles share (automem's modules are imported once per process) ---------
_ACTIVE: dict[int, tuple[str, str]] = {}  # provider sessions alive in this process -> (profile home, session id)
_STORES: dict[tuple[str, str], Any] = {}
_STORES_LOCK = threading.Lock()
_FALLBACK_SESSIONS: dict[tuple[str, str], "HermesSession"] = {}  # recall state of sessions without the provider
_FALLBACK_LOCK = threading.Lock()


def mark_active(session: "HermesSession", active: bool) -> None:
    """The provider role says it runs in this process for this session (the general role's fallback then leaves
    that session's extraction to it)."""
    if active:
        _ACTIVE[id(session)] = (str(session.location.profile_home), session.session_id)
    else:
        _ACTIVE.pop(id(session), None)


def _note_active(session: "HermesSession", old: str, new: str) -> None:
    if id(session) in _ACTIVE:
        _ACTIVE[id(session)] = (str(session.location.profile_home), new)


def provider_active() -> bool:
    """Some automem provider runs in this process (its recall covers every agent of the process)."""
    return bool(_ACTIVE)


def provider_handles(profile_home: str, session_id: str) -> bool:
    """A live provider of this process holds this very session: it extracts it in its own on_session_end. An agent
    the gateway evicted (idle, restarted) has none, and its `/new` reaches only the general hook."""
    return (str(profile_home), session_id) in set(_ACTIVE.values())


def _close_stores() -> None:
    with _STORES_LOCK:
        stores = list(_STORES.values())
        _STORES.clear()
    for store in stores:
        try:
            store.close()
        except Exception:  # noqa: BLE001 - exiting anyway
            pass


def store_for(location: Location, config: Config):
    """One store per (root, profile) for the general role's tool calls, closed at process exit."""
    key = (str(location.root), location.profile)
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None:
            from ..core.store import open_store

            if not _STORES:
                import atexit

                atexit.register(_close_stores)
            store = _STORES[key] = open_store(location, config)
        return store


def identity_of_session(location: Location, config: Config, session_id: str, platform: str = "") -> Identity:
    """Whose session this is, when Hermes calls without the gateway's kwargs (general hooks): what the provider
    recorded beside the session's progress, else the session's row in the profile's state.db, else the platform
    the hook named. A session nothing is known of is its own scope inside a gateway process, never the owner's."""
    from ..extract import progress as P
    from .gateway import OWNER_PLATFORMS, identify

    saved = P.load(location, session_id).identity if session_id else {}
    if saved:
        return Identity.from_json(saved)
    row = read_state_session(location.profile_home, session_id)
    if row:
        return identify({"platform": row.get("source"), "user_id": row.get("user_id"),
                         "chat_id": row.get("chat_id"), "chat_type": row.get("chat_type"),
                         "thread_id": row.get("thread_id"), "gateway_session_key": row.get("session_key"),
                         "session_id": session_id}, config, legacy_before=scope_rule_since(location))
    if platform not in OWNER_PLATFORMS or os.environ.get("_HERMES_GATEWAY"):
        return identify({"platform": platform or "gateway", "session_id": session_id}, config,
                        legacy_before=scope_rule_since(location))
    return OWNER_IDENTITY


SCOPE_RULE_FILE = "scope-rule-since"


def scope_rule_since(location: Location) -> int:
    """When this root first mapped gateway ids with `automem.hermes.gateway.scope_part` (unix seconds, recorded by
    the first process that needed it): what the old rule wrote under a scope string before then is still its id's;
    what that string gets afterwards belongs to whoever owns the string now."""
    path = location.automem_dir / SCOPE_RULE_FILE
    try:
        return int(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        pass
    now = int(time.time())
    try:
        from ..paths import ensure_private_dir

        ensure_private_dir(location.automem_dir)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # the first process's time wins
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(str(now))
    except FileExistsError:
        try:
            return int(path.read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            return now
    except OSError:
        pass
    return now


def read_state_session(profile_home: Path, session_id: str) -> dict | None:
    """A session's row in the profile's state.db (read only): its platform (`source`), user, chat, session key."""
    path = Path(profile_home) / "state.db"
    if not session_id or not path.is_file():
        return None
    try:
        conn = sqlite3.connect(sqlite_ro_uri(path), uri=True, timeout=5)
        try:
            conn.row_factory = sqlite3.Row
            row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return dict(row) if row is not None else None


def run_tool_in_home(hermes_home: str | None, name: str, args: Any, session_id: str = "") -> str:
    """A tool call from the general role (another memory provider is active, or the provider role is not)."""
    location = Location.resolve(hermes_home)
    config = load_config(location)
    identity = identity_of_session(location, config, session_id)
    with _FALLBACK_LOCK:  # this session's recall state holds the user's message of this turn
        sess = _FALLBACK_SESSIONS.get((str(location.profile_home), session_id or ""))
    judge = None
    if name == "automem_remember":
        from ..extract.pipeline import judge_for

        judge = judge_for(location, config, origin="hermes")
    user_words = _user_texts(read_state_transcript(location.profile_home, session_id)) if session_id else []
    if sess is not None:  # this turn's message (prefetch got it) may not be in state.db yet
        user_words += [t for t in sess.user_words() if t not in user_words]
    return run_tool(store_for(location, config), location.profile, name, args, session_id, identity, judge=judge,
                    user_words=user_words)


def _user_texts(messages: Sequence[dict]) -> list[str]:
    """The text of the user's messages (recalled context removed: automem's own blocks are not the user's words)."""
    from ..extract.transcript import content_text, strip_injected

    return [strip_injected(content_text(m.get("content"))) for m in messages or ()
            if isinstance(m, dict) and m.get("role") == "user"]


def finalize_fallback(hermes_home: str | None, session_id: str, *, reason: str = "", platform: str = "") -> list[str]:
    """The general-hook path: extract what is left of a session from state.db, when no provider of this process
    holds it (another memory provider is active, or the gateway evicted this session's agent)."""
    location = Location.resolve(hermes_home)
    with _FALLBACK_LOCK:  # the recall state of this session (see fallback_recall) is done with
        sess = _FALLBACK_SESSIONS.pop((str(location.profile_home), session_id or ""), None)
    if sess is not None:
        sess.shutdown(join_s=0)
    if not session_id or provider_handles(str(location.profile_home), session_id):
        return []
    config = load_config(location)
    messages = read_state_transcript(location.profile_home, session_id)
    if not messages:
        return []
    identity = identity_of_session(location, config, session_id, platform)
    jobs = extract_new(location, config, session_id, messages, source=f"on_session_finalize:{reason}",
                       identity=identity, detached=not os.environ.get("_HERMES_GATEWAY"))
    if jobs:
        log_event(location, "session_enqueued", jobs=jobs, source="on_session_finalize", session_id=session_id,
                  messages=len(messages), reason=reason, scope=identity.why)
    return jobs


def fallback_recall(hermes_home: str | None, session_id: str, user_message: str, first_turn: bool) -> str:
    """Recall for the general-hook path (`pre_llm_call`), when no automem provider runs in this process: the
    system-prompt block on the first turn, then what is relevant to each message. Hermes appends it to the user
    message (the system prompt is not a plugin hook's to change)."""
    location = Location.resolve(hermes_home)
    key = (str(location.profile_home), session_id or "")
    with _FALLBACK_LOCK:
        sess = _FALLBACK_SESSIONS.get(key)
        if sess is None:
            config = load_config(location)
            sess = _FALLBACK_SESSIONS[key] = HermesSession(
                location, config, session_id=session_id,
                identity=identity_of_session(location, config, session_id))
    parts = [sess.system_prompt_block()] if first_turn else []
    parts.append(sess.prefetch(user_message or ""))
    return "\n\n".join(p for p in parts if p)
