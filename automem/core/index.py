"""The recall index: what recall reads without Chroma or the embedding model.

`<root>/automem/index/recall.sqlite3` (stdlib sqlite3) holds one row per active memory (its text and the metadata
recall ranks and filters by) and an FTS5 keyword index over its words. FTS5 splits text on spaces and punctuation,
which Chinese does not have, so text is segmented first (`segment`): every CJK run becomes its characters and
their bigrams, Latin words stay words (Porter-stemmed by FTS5).

The store keeps the index current in the same write, under the write lock (`apply`): no write ever reads the
whole store back, so a write costs the same at 100,000 memories as at 100. Rows are written before Chroma's and
stamped with the generation the write is about to have; a write that dies half-way leaves the stamp and the
store's generation file apart, and the next reader rebuilds the index once (`rebuild`), as it does for a store
that has no index yet.

On a Chroma server (no generation file; other machines write too) the index follows the server by change
(`automem.core.sync`): every write stamps the record's `changed_at`, and a sync asks for what changed since the last
one (`sync_apply`), so it costs what changed, not the store's size. `known` holds every id the index has seen and
its state (active, superseded, forgotten, raced), with when this machine last wrote it, so a sync that read the
server before a local write never puts back what that write replaced, and what the index covers can be counted
against the store's count (`covered`: Chroma's own on the embedded store, on every open; the server's on a
background sync): a gap the generation stamp or the change stamps cannot show makes it rebuild or compare ids. Two
active memories replacing the same one (a race between machines) show only the later one
(`automem.core.convergence`).

How often a memory was recalled is kept here only (`recalled`), in a table a rebuild keeps. Whether a persona
memory is about the user themself (`about_user`) is worked out once, when the row is written. A memory the write
path kept apart from a close one for lack of a judge names it (`related_to`): such pairs wait for the next judge
(`waiting`, `count_waiting`).
"""

from __future__ import annotations

import math
import os
import re
import sqlite3
import time
import unicodedata
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

from ..paths import Location, ensure_private_dir, make_private, sqlite_ro_uri
from .memory import CATEGORY_OF_WING

INDEX_VERSION = "7"  # 2: task_id; 3: about_user; 4: audience; 5: others; 6: changed_at, replaces, known;
# 7: related_to
INDEX_NAME = "recall.sqlite3"
_COLUMNS = ("id", "text", "wing", "profile", "scope", "room", "status", "created_at", "updated_at", "pinned",
            "restated", "task_id", "about_user", "audience", "changed_at", "replaces", "related_to")
_INT_COLUMNS = frozenset({"created_at", "updated_at", "pinned", "restated", "recalled", "about_user", "changed_at"})
STATES = ("active", "superseded", "forgotten", "raced")  # `known.state`; raced: a race's loser, not shown


@dataclass
class RecallItem:
    """One active memory as recall sees it (a row of the index)."""

    id: str
    text: str
    wing: str
    profile: str
    updated_at: int = 0
    created_at: int = 0
    room: str = ""
    scope: str = ""  # automem.core.memory.OWNER, or a person's or a chat's scope
    pinned: int = 0
    restated: int = 0
    recalled: int = 0
    about_user: int = 0  # 1: a persona memory about the user themself, not about someone else (`_about_user`)
    audience: str = ""  # automem.core.memory: "" the owner's profiles, "everyone" confirmed for everyone

    @property
    def category(self) -> str:
        return CATEGORY_OF_WING.get(self.wing, self.wing)


def newest_first(item: Any) -> tuple:
    return (-(item.updated_at or item.created_at), -item.created_at, item.id)


# -- segmentation (plain functions) -----------------------------------------------------------------------------
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_LATIN = re.compile(r"[^\W_]+")
# Words that carry no topic in a question: kept in the index, left out of keyword queries (BM25 would weigh them
# little anyway, but an OR of only such words matches everything).
STOP_LATIN = frozenset("""a an the i me my mine you your yours we our us he him his she her hers it its they them their
is am are was were be been being do does did done have has had having what which who whom whose how why when where
to of in on at for from by with about into over and or not no nor so if than then that this these those there here
can could would should will shall may might must please tell know use uses used using any some all also just
very really more most much many""".split())
STOP_CJK = frozenset("""你知 知道 道我 我用 用什 什么 么样 是什 怎么 我们 你们 他们 一个 这个 那个 可以
就是 还是 的是 了吗 我的 用户 现在 以后 不要 告诉 记得 记住
吗 呢 的 了 是 我 你 他 她 它 么 什 在 有 和 吧 啊 哪 谁""".split())


def _units(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text).lower()
    out: list[str] = []
    pos = 0
    for m in _CJK.finditer(text):
        out += _LATIN.findall(text[pos:m.start()])
        run = m.group()
        out += list(run)
        out += [run[i:i + 2] for i in range(len(run) - 1)]
        pos = m.end()
    out += _LATIN.findall(text[pos:])
    return out


def segment(text: str) -> str:
    """What FTS5 indexes for `text`: Latin words, CJK characters and CJK bigrams, separated by spaces."""
    return " ".join(_units(text))


# A question longer than this is cut before it is embedded, segmented or ranked: a pasted 1 MB log would otherwise
# cost seconds and gigabytes on Hermes' path. Its start and its end are kept (where a question about a paste is).
MAX_QUERY_CHARS = 2000
_CUT = " … "


def bound_query(query: str) -> str:
    """`query` within MAX_QUERY_CHARS: as is when short enough, else its start and its end."""
    if len(query) <= MAX_QUERY_CHARS:
        return query
    half = (MAX_QUERY_CHARS - len(_CUT)) // 2
    return query[:half] + _CUT + query[len(query) - half:]


def query_terms(text: str) -> list[str]:
    """The distinct topic-bearing terms of a question, in order."""
    seen: dict[str, None] = {}
    for unit in _units(text):
        if unit in STOP_LATIN or unit in STOP_CJK:
            continue
        if len(unit) == 1 and not _CJK.match(unit) and not unit.isdigit():
            continue
        seen.setdefault(unit, None)
    return list(seen)


def match_expression(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression: any of the terms (each quoted, so no term is read as an operator)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


# -- where filters -> SQL (plain functions) ----------------------------------------------------------------------
_OPS = {"$eq": "=", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def where_sql(where: dict | None) -> tuple[str, list]:
    """A Chroma `where` filter (the operators automem.core.visibility builds) as an SQL condition on the index's
    columns. Raises ValueError for a key or operator the index does not hold."""
    if not where:
        return "1", []
    parts: list[str] = []
    params: list = []
    for key, cond in where.items():
        if key in ("$and", "$or"):
            subs = [where_sql(c) for c in cond]
            joiner = " AND " if key == "$and" else " OR "
            parts.append("(" + joiner.join(s for s, _ in subs) + ")" if subs else "1")
            for _, p in subs:
                params += p
            continue
        if key not in _COLUMNS:
            raise ValueError(f"the recall index has no column {key!r}")
        conds = cond if isinstance(cond, dict) else {"$eq": cond}
        for op, arg in conds.items():
            if op in _OPS:
                parts.append(f"m.{key} {_OPS[op]} ?")
                params.append(arg)
            elif op in ("$in", "$nin"):
                values = list(arg)
                if not values:
                    parts.append("0" if op == "$in" else "1")
                    continue
                marks = ",".join("?" * len(values))
                parts.append(f"m.{key} {'IN' if op == '$in' else 'NOT IN'} ({marks})")
                params += values
            else:
                raise ValueError(f"unsupported filter operator {op}")
    return "(" + " AND ".join(parts) + ")", params


# -- the file --------------------------------------------------------------------------------------------------
def index_path(location: Location):
    return location.automem_dir / "index" / INDEX_NAME


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memories(
    rowid INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, text TEXT NOT NULL, wing TEXT NOT NULL,
    profile TEXT NOT NULL, scope TEXT NOT NULL DEFAULT '', room TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'active', created_at INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL DEFAULT 0, pinned INTEGER NOT NULL DEFAULT 0, restated INTEGER NOT NULL DEFAULT 0,
    task_id TEXT NOT NULL DEFAULT '', about_user INTEGER NOT NULL DEFAULT 0, audience TEXT NOT NULL DEFAULT '',
    changed_at INTEGER NOT NULL DEFAULT 0, replaces TEXT NOT NULL DEFAULT '', related_to TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS memories_by_replaces ON memories(replaces) WHERE replaces != '';
CREATE TABLE IF NOT EXISTS known(id TEXT PRIMARY KEY, state TEXT NOT NULL, changed_at INTEGER NOT NULL DEFAULT 0,
    written_at REAL NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS memories_by_wing ON memories(wing, profile, scope);
CREATE INDEX IF NOT EXISTS memories_by_time ON memories(updated_at);
CREATE INDEX IF NOT EXISTS memories_by_restated ON memories(restated, updated_at);
CREATE INDEX IF NOT EXISTS memories_by_pinned ON memories(pinned, updated_at);
CREATE INDEX IF NOT EXISTS memories_by_about_user ON memories(about_user, updated_at);
CREATE INDEX IF NOT EXISTS memories_by_related ON memories(related_to) WHERE related_to != '';
CREATE VIRTUAL TABLE IF NOT EXISTS words USING fts5(body, tokenize='porter unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS recalls(id TEXT PRIMARY KEY, n INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS recalls_by_n ON recalls(n);
CREATE TABLE IF NOT EXISTS tally(profile TEXT NOT NULL, wing TEXT NOT NULL, scope TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active', n INTEGER NOT NULL, PRIMARY KEY(profile, wing, scope));
"""


def _connect_rw(location: Location) -> sqlite3.Connection:
    path = index_path(location)
    ensure_private_dir(path.parent)
    conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    try:
        conn.executescript(_SCHEMA)
    except sqlite3.OperationalError:
        try:
            relaid = _relayout(conn)
        except BaseException:
            conn.close()
            raise
        if not relaid:
            conn.close()
            raise
    make_private(path.parent)
    return conn


def _relayout(conn: sqlite3.Connection) -> bool:
    """After the schema failed on `conn`: an older automem's index (this schema indexes a column its tables lack)
    is made again in this layout, empty and stamped stale, and the next reader rebuilds it from the store (its
    tables are derived data); how often each memory was recalled, kept only here, stays. False, nothing changed,
    when the file is no automem index (no version): the schema's error stands."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        try:
            version = _meta(conn, "version")
        except sqlite3.Error:
            version = ""
        if not version:
            conn.execute("ROLLBACK")
            return False
        if version != INDEX_VERSION:  # still the older layout (another process may have relaid it out meanwhile)
            for table in ("memories", "words", "tally", "others", "known"):
                conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (INDEX_VERSION,))
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('generation', 'stale')")
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute("COMMIT")
        return True
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _connect_ro(location: Location) -> sqlite3.Connection | None:
    path = index_path(location)
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(sqlite_ro_uri(path), uri=True, timeout=10.0, isolation_level=None)
        conn.execute("SELECT 1 FROM meta LIMIT 1")
        return conn
    except sqlite3.Error:
        return None


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction on `conn` (taken at once, so two writers never interleave), closed after."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.close()


def _meta(conn: sqlite3.Connection, key: str, default: str = "") -> str:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else default


def _about_user(memory: Any) -> int:
    """1 for a persona memory about the user themself ("用户在西安教物理", "The user is left-handed"), 0 for one
    about someone or something else ("The user's wife ...", "Anna likes tea") and for the other wings. The write
    path's own text analysis decides (loaded only by writers; readers get the stored column)."""
    if memory.wing != "user":
        return 0
    try:
        from .analysis import is_about_user

        return int(is_about_user(memory.text))
    except Exception:  # noqa: BLE001 - a ranking hint never fails the write that carries the memory
        return 0


def _row_of(memory: Any, known: dict[str, tuple[str, int]] | None = None) -> tuple:
    """The row of `memory`; `known` (id -> (text, about_user)) spares a rebuild the text analysis of unchanged rows."""
    before = known.get(memory.id) if known else None
    unchanged = before is not None and before[0] == memory.text and memory.wing == "user"
    about = int(before[1]) if unchanged else _about_user(memory)
    return (memory.id, memory.text, memory.wing, memory.profile, getattr(memory, "scope", "") or "",
            getattr(memory, "room", "") or "", "active", int(memory.created_at or 0), int(memory.updated_at or 0),
            int(getattr(memory, "pinned", 0) or 0), int(getattr(memory, "restated", 0) or 0),
            getattr(memory, "task_id", "") or "", about, getattr(memory, "audience", "") or "",
            int(getattr(memory, "changed_at", 0) or 0), getattr(memory, "replaces", "") or "",
            str((getattr(memory, "extra", None) or {}).get("related_to") or ""))


def _count(conn: sqlite3.Connection, key: tuple[str, str, str], delta: int) -> None:
    """The tally: how many memories each (profile, wing, scope) holds, so a reader counts what it may see without
    reading every row (a 100k index: 20 ms and more a count, in every fresh process and after every write)."""
    conn.execute("INSERT INTO tally(profile, wing, scope, n) VALUES (?, ?, ?, ?) ON CONFLICT(profile, wing, scope) "
                 "DO UPDATE SET n = n + excluded.n", (*key, delta))


def _ensure_tally(conn: sqlite3.Connection) -> None:
    """An index written before the tally existed gets it filled once, by its next writer (readers count rows)."""
    if _meta(conn, "tally") != "1":
        conn.execute("DELETE FROM tally")
        conn.execute("INSERT INTO tally(profile, wing, scope, n) SELECT profile, wing, scope, COUNT(*) FROM memories "
                     "GROUP BY profile, wing, scope")
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('tally', '1')")


def _put(conn: sqlite3.Connection, memories: Iterable[Any],
         known: dict[str, tuple[str, int]] | None = None) -> None:
    for m in memories:
        row = conn.execute("SELECT rowid, text, profile, wing, scope FROM memories WHERE id = ?", (m.id,)).fetchone()
        values = _row_of(m, known)
        key = (values[3], values[2], values[4])  # profile, wing, scope
        if row is None:
            cur = conn.execute(f"INSERT INTO memories({','.join(_COLUMNS)}) VALUES ({','.join('?' * len(_COLUMNS))})",
                               values)
            conn.execute("INSERT INTO words(rowid, body) VALUES (?, ?)", (cur.lastrowid, segment(m.text)))
            _count(conn, key, 1)
        else:
            conn.execute(f"UPDATE memories SET {', '.join(c + ' = ?' for c in _COLUMNS[1:])} WHERE rowid = ?",
                         (*values[1:], row[0]))
            if row[1] != m.text:
                conn.execute("UPDATE words SET body = ? WHERE rowid = ?", (segment(m.text), row[0]))
            if tuple(row[2:]) != key:
                _count(conn, tuple(row[2:]), -1)
                _count(conn, key, 1)


def _drop(conn: sqlite3.Connection, ids: Iterable[str]) -> int:
    gone = 0
    for mid in ids:
        row = conn.execute("SELECT rowid, profile, wing, scope FROM memories WHERE id = ?", (mid,)).fetchone()
        if row is not None:
            conn.execute("DELETE FROM words WHERE rowid = ?", (row[0],))
            conn.execute("DELETE FROM memories WHERE rowid = ?", (row[0],))
            _count(conn, tuple(row[1:]), -1)
            gone += 1
        conn.execute("DELETE FROM recalls WHERE id = ?", (mid,))
    return gone


def stamp_of(location: Location) -> tuple[str, float]:
    """(generation, built_at) the index says it reflects; ("", 0) without an index."""
    conn = _connect_ro(location)
    if conn is None:
        return "", 0.0
    try:
        if _meta(conn, "version") != INDEX_VERSION:
            return "", 0.0
        return _meta(conn, "generation"), float(_meta(conn, "built_at", "0") or 0)
    except (sqlite3.Error, ValueError):
        return "", 0.0
    finally:
        conn.close()


SERVER_STAMP = "server"  # the `generation` of an index that follows a Chroma server (automem.core.sync)
SYNC_AGE_S = 10.0  # the default of `server_sync_s`: how old a server index may be before a reader syncs it


def meta_of(location: Location) -> dict[str, str]:
    """Every meta key of the index ({} without a readable index of this version)."""
    conn = _connect_ro(location)
    if conn is None:
        return {}
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        return meta if meta.get("version") == INDEX_VERSION else {}
    except sqlite3.Error:
        return {}
    finally:
        conn.close()


def synced_at(meta: dict[str, str]) -> float:
    """When (this machine's wall clock) the server index last reflected the server; 0 never."""
    try:
        return float(meta.get("synced_at") or 0)
    except ValueError:
        return 0.0


def is_fresh(location: Location, generation: int | None, now: float | None = None,
             max_age: float = SYNC_AGE_S) -> bool:
    """Whether the index reflects the store: the embedded store's `generation`, or (generation None: a server)
    a sync younger than `max_age` seconds."""
    if generation is None:
        meta = meta_of(location)
        now = time.time() if now is None else now
        return meta.get("generation") == SERVER_STAMP and now - synced_at(meta) < max_age
    stamp, _ = stamp_of(location)
    return stamp == str(generation)


def _know(conn: sqlite3.Connection, rows: Iterable[tuple[str, str, int]], written_at: float) -> None:
    """(id, state, changed_at) into `known`, with when this machine wrote them (0: read from the server)."""
    conn.executemany("INSERT INTO known(id, state, changed_at, written_at) VALUES (?, ?, ?, ?) ON CONFLICT(id) DO "
                     "UPDATE SET state = excluded.state, changed_at = excluded.changed_at, "
                     "written_at = MAX(known.written_at, excluded.written_at)",
                     [(i, st, int(ch or 0), written_at) for i, st, ch in rows])


def _settle_races(conn: sqlite3.Connection, targets: Iterable[str] | None = None) -> list[str]:
    """Two active memories that replaced the same one (machines that raced): only the later is shown; the others
    are dropped from the rows and known as `raced` until the store says otherwise. `targets`: the replaced ids to
    look at (None: all). Returns the losers' ids."""
    from .convergence import winner

    if targets is None:
        targets = [r[0] for r in conn.execute("SELECT replaces FROM memories WHERE replaces != '' GROUP BY replaces "
                                              "HAVING COUNT(*) > 1")]
    losers: list[str] = []
    for target in set(targets):
        if not target:
            continue
        rivals = conn.execute("SELECT id, created_at FROM memories WHERE replaces = ?", (target,)).fetchall()
        if len(rivals) < 2:
            continue
        win = winner(rivals)
        losers += [mid for mid, _ in rivals if mid != win]
    if losers:
        _drop(conn, losers)
        conn.executemany("UPDATE known SET state = 'raced' WHERE id = ?", [(i,) for i in losers])
    return losers


def apply(location: Location, put: Sequence[Any] = (), drop: Sequence[str] = (), *,
          generation: int | None) -> None:
    """The index's half of one store write, in one transaction, before the store's own: memories to (re)index
    (active ones; others are dropped) and ids to drop (forgotten). An index that reflected the embedded store's
    `generation` is marked pending until `advance` (after the store's write) moves it on; a write that dies in
    between leaves it pending, so its next reader rebuilds it. A stale index stays stale. The caller holds the
    store's write lock. Every id is noted in `known` with this machine's clock, so a server sync that read the
    server before this write does not undo it."""
    active = [m for m in put if getattr(m, "status", "active") == "active"]
    inactive = [m for m in put if getattr(m, "status", "active") != "active"]
    with _transaction(_connect_rw(location)) as conn:
        version = _meta(conn, "version")
        if version and version != INDEX_VERSION:  # another automem's layout: its next reader rebuilds it
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('generation', 'stale')")
            return
        if generation is not None:
            stamp = _meta(conn, "generation")
            fresh = (_meta(conn, "version") == INDEX_VERSION and stamp == str(generation)) or (
                stamp == "" and generation == 0)  # a new store: nothing was written before this
            if fresh and stamp == "":
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (INDEX_VERSION,))
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('built_at', ?)", (str(time.time()),))
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('generation', ?)",
                         (f"pending:{generation}" if fresh else "stale",))
        _ensure_tally(conn)
        _put(conn, active)
        _drop(conn, [m.id for m in inactive] + list(drop))
        now = time.time()
        _know(conn, [(m.id, getattr(m, "status", "active"), getattr(m, "changed_at", 0)) for m in put], now)
        _know(conn, [(i, "forgotten", 0) for i in drop], now)
        _settle_races(conn, [m.replaces for m in active if getattr(m, "replaces", "")])


def covered(location: Location) -> tuple[str, int] | None:
    """(generation stamp, ids the index accounts for: its rows and the other records it knows, superseded, held or
    a race's loser), read in one transaction; None without a readable index of this version. A row lost behind the
    index's back lowers it, as a record it never saw does."""
    conn = _connect_ro(location)
    if conn is None:
        return None
    try:
        conn.execute("BEGIN")
        if _meta(conn, "version") != INDEX_VERSION:
            return None
        n = conn.execute("SELECT (SELECT COUNT(*) FROM memories) + "
                         "(SELECT COUNT(*) FROM known WHERE state NOT IN ('active', 'forgotten'))").fetchone()[0]
        return _meta(conn, "generation"), int(n)
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def covered_ids(location: Location) -> tuple[set[str], set[str]] | None:
    """(ids of the indexed active memories, ids of the store's other records: superseded, held, a race's loser)
    as the index holds them."""
    conn = _connect_ro(location)
    if conn is None:
        return None
    try:
        conn.execute("BEGIN")
        return ({r[0] for r in conn.execute("SELECT id FROM memories")},
                {r[0] for r in conn.execute("SELECT id FROM known WHERE state NOT IN ('active', 'forgotten')")})
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def mark_stale(location: Location) -> None:
    """Make the next reader rebuild the index (after a failed index write)."""
    conn = _connect_rw(location)
    try:
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('generation', 'stale')")
    finally:
        conn.close()


def advance(location: Location, old: int, new: int) -> None:
    """The store's generation moved from `old` to `new` (its write went through): an index that reflected `old`,
    or was pending on it, now reflects `new`."""
    if not index_path(location).exists():
        return
    conn = _connect_rw(location)
    try:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'generation' AND value IN (?, ?)",
                     (str(new), str(old), f"pending:{old}"))
    finally:
        conn.close()


def rebuild(location: Location, memories: Iterable[Any], stamp: str, meta: dict[str, str] | None = None) -> int:
    """Replace the index with `memories` (the store's records, any status: the active ones are indexed, the others
    known) and stamp it, with `meta` (a server sync's cursor). Returns how many were indexed."""
    try:
        conn = _connect_rw(location)
    except sqlite3.DatabaseError:  # not a database (a torn or foreign file): it is derived, so start again
        for suffix in ("", "-journal", "-wal", "-shm"):
            try:
                os.unlink(str(index_path(location)) + suffix)
            except OSError:
                pass
        conn = _connect_rw(location)
    n = 0
    with _transaction(conn):
        try:  # what the text analysis found before (a server's index may be rebuilt again)
            known = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT id, text, about_user FROM memories")}
        except sqlite3.Error:  # no table yet, or an older layout without the column
            known = {}
        for table in ("memories", "words", "tally", "known", "others"):  # derived: rebuilt in this version's layout
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute("DELETE FROM meta WHERE key != 'purge'")  # a purge still owed stays owed
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        batch: list[Any] = []
        states: list[tuple[str, str, int]] = []
        for m in memories:
            states.append((m.id, getattr(m, "status", "active"), getattr(m, "changed_at", 0)))
            if getattr(m, "status", "active") != "active":
                continue
            batch.append(m)
            if len(batch) >= 500:
                _put(conn, batch, known)
                n += len(batch)
                batch = []
        _put(conn, batch, known)
        n += len(batch)
        _know(conn, states, 0.0)
        n -= len(_settle_races(conn))
        conn.execute("DELETE FROM recalls WHERE id NOT IN (SELECT id FROM memories)")
        for key, value in {"version": INDEX_VERSION, "generation": stamp, "built_at": str(time.time()),
                           "tally": "1", **(meta or {})}.items():
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
    return n


@dataclass
class SyncApplied:
    """What one server sync changed in the index."""

    put: int = 0  # active memories (re)indexed
    dropped: int = 0  # rows taken out (superseded, forgotten, raced)
    forgotten_texts: list = None  # the words of the memories dropped because they were forgotten (to scrub)
    skipped: int = 0  # records this machine wrote after the sync read them (the local write is newer)

    def __post_init__(self) -> None:
        self.forgotten_texts = self.forgotten_texts or []


def sync_apply(location: Location, memories: Sequence[Any], tombstones: Sequence[tuple[str, int]], *,
               started_at: float, meta: dict[str, str], expect: dict[str, str] | None = None) -> SyncApplied | None:
    """Apply one server sync: `memories` (records changed since the last sync, any status) and `tombstones` ((id,
    changed_at) of memories forgotten since), read from the server from `started_at` (this machine's clock) on. A
    record this machine wrote after that is left as its write put it; a tombstone older than the record read
    (the memory was restored since) is ignored. Then `meta` is stored (cursor, synced_at...), the cursor and
    synced_at only moving forward. None (nothing changed) when the index is not the one `expect` describes (meta
    values: rebuilt or moved meanwhile: the caller syncs again)."""
    out = SyncApplied()
    with _transaction(_connect_rw(location)) as conn:
        have = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if have.get("version") != INDEX_VERSION or any(have.get(k) != v for k, v in (expect or {}).items()):
            return None
        _ensure_tally(conn)

        def local_since(mid: str) -> tuple | None:
            return conn.execute("SELECT state, changed_at, written_at FROM known WHERE id = ?", (mid,)).fetchone()

        newest: dict[str, int] = {}
        put, drop, states = [], [], []
        for m in memories:
            row = local_since(m.id)
            if row is not None and row[2] >= started_at:
                out.skipped += 1
                continue
            newest[m.id] = int(getattr(m, "changed_at", 0) or 0)
            states.append((m.id, m.status, newest[m.id]))
            (put if m.status == "active" else drop).append(m)
        _put(conn, put)
        out.put = len(put)
        out.dropped += _drop(conn, [m.id for m in drop])
        gone = []
        for mid, changed in tombstones:
            row = local_since(mid)
            if row is not None and row[2] >= started_at:
                out.skipped += 1
                continue
            if newest.get(mid, -1) > int(changed or 0):
                continue  # the record read is newer: it was restored (an explicit add) after this forget
            gone.append(mid)
            states.append((mid, "forgotten", int(changed or 0)))
        if gone:
            marks = ",".join("?" * len(gone))
            out.forgotten_texts = [r[0] for r in conn.execute(f"SELECT text FROM memories WHERE id IN ({marks})",
                                                              gone)]
            out.dropped += _drop(conn, gone)
            if out.forgotten_texts:
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('purge', '1')")  # `purge` clears it
        _know(conn, states, 0.0)
        out.dropped += len(_settle_races(conn, [m.replaces for m in put if getattr(m, "replaces", "")]))
        for key, value in meta.items():
            if key in ("sync_cursor", "synced_at"):
                try:
                    value = str(max(float(value), float(have.get(key) or 0)))
                except ValueError:
                    pass
                if key == "sync_cursor":
                    value = str(int(float(value)))
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
    return out


def note_meta(location: Location, values: dict[str, str]) -> None:
    """Set meta keys of an existing index (a sync's failure, its gap flag); nothing without an index."""
    if not index_path(location).exists():
        return
    conn = _connect_rw(location)
    try:
        conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(values.items()))
    finally:
        conn.close()


def known_ids(location: Location) -> set[str] | None:
    """The ids of the store's records the index accounts for (`covered`'s ids); None without an index."""
    conn = _connect_ro(location)
    if conn is None:
        return None
    try:
        return {r[0] for r in conn.execute("SELECT id FROM memories UNION SELECT id FROM known WHERE state NOT IN "
                                           "('active', 'forgotten')")}
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def raced(location: Location, ids: Sequence[str]) -> set[str]:
    """Which of `ids` the index holds as the losers of a race (not to be shown); empty without an index."""
    conn = _connect_ro(location) if ids else None
    if conn is None:
        return set()
    try:
        out: set[str] = set()
        for start in range(0, len(ids), 500):
            chunk = list(ids[start:start + 500])
            out.update(r[0] for r in conn.execute(
                f"SELECT id FROM known WHERE state = 'raced' AND id IN ({','.join('?' * len(chunk))})", chunk))
        return out
    except sqlite3.Error:
        return set()
    finally:
        conn.close()


def purge(location: Location) -> None:
    """After a forget: rewrite the keyword index and the file so no page keeps a forgotten word (and clear the
    `purge` a server sync owes after dropping forgotten memories)."""
    path = index_path(location)
    if not path.exists():
        return
    conn = _connect_rw(location)
    try:
        conn.execute("INSERT INTO words(words) VALUES ('rebuild')")
        conn.execute("VACUUM")
        conn.execute("DELETE FROM meta WHERE key = 'purge'")
    finally:
        conn.close()
    for suffix in ("-journal", "-wal"):
        try:
            os.unlink(str(path) + suffix)
        except OSError:
            pass


# -- reads ---------------------------------------------------------------------------------------------------------
def _items(rows: Iterable[tuple]) -> list[RecallItem]:
    return [RecallItem(id=r[0], text=r[1], wing=r[2], profile=r[3], scope=r[4], room=r[5], created_at=r[6],
                       updated_at=r[7], pinned=r[8], restated=r[9], recalled=r[10] or 0, about_user=r[11],
                       audience=r[12] or "")
            for r in rows]


_FIELDS = ("m.id, m.text, m.wing, m.profile, m.scope, m.room, m.created_at, m.updated_at, m.pinned, m.restated, r.n, "
           "m.about_user, m.audience")
_SELECT = f"SELECT {_FIELDS} FROM memories m LEFT JOIN recalls r ON r.id = m.id"  # rows for _items
_SELECT_ROWID = f"SELECT m.rowid, {_FIELDS} FROM memories m LEFT JOIN recalls r ON r.id = m.id"


def items(location: Location, where: dict | None = None) -> list[RecallItem]:
    """The indexed memories passing `where` (a visibility filter)."""
    conn = _connect_ro(location)
    if conn is None:
        return []
    cond, params = where_sql(where)
    try:
        return _items(conn.execute(f"{_SELECT} WHERE {cond}", params).fetchall())
    except sqlite3.Error:
        return []
    finally:
        conn.close()


def visible_ids(location: Location, ids: Sequence[str], where: dict | None) -> set[str] | None:
    """Which of `ids` are active memories passing `where`, as the index holds them; None when it cannot say (no
    index, or a filter on a field it does not hold)."""
    try:
        cond, params = where_sql(where)
    except ValueError:
        return None
    conn = _connect_ro(location)
    if conn is None:
        return None
    try:
        out: set[str] = set()
        for start in range(0, len(ids), 500):
            chunk = list(ids[start:start + 500])
            out.update(r[0] for r in conn.execute(
                f"SELECT m.id FROM memories m WHERE m.id IN ({','.join('?' * len(chunk))}) AND {cond}",
                chunk + params))
        return out
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def block_candidates(location: Location, where: dict | None = None, per_signal: int = 300) -> list[RecallItem]:
    """What the system block may choose from, without reading every memory: the pinned ones, and for each other
    signal (restated, recalled, newest, the newest about the user) the `per_signal` memories that lead on it. A
    memory outside all of these cannot outrank the ones inside (automem.core.recall.block_score grows with each
    signal)."""
    conn = _connect_ro(location)
    if conn is None:
        return []
    cond, params = where_sql(where)
    out: dict[str, RecallItem] = {}
    try:
        # Each query walks one index in order and stops after `per_signal` visible rows: flat in the store's size.
        # (INDEXED BY: left to itself SQLite picks the wing index and sorts every visible row.)
        by = _SELECT.replace("FROM memories m", "FROM memories m INDEXED BY {}")
        queries = [by.format("memories_by_pinned") +
                   f" WHERE {cond} AND m.pinned > 0 ORDER BY m.pinned DESC, m.updated_at DESC LIMIT ?",
                   by.format("memories_by_restated") +
                   f" WHERE {cond} AND m.restated > 0 ORDER BY m.restated DESC, m.updated_at DESC LIMIT ?",
                   # CROSS JOIN: the recalls are walked in count order (left to itself SQLite scans every memory)
                   f"SELECT {_FIELDS} FROM recalls r INDEXED BY recalls_by_n CROSS JOIN memories m ON m.id = r.id "
                   f"WHERE {cond} ORDER BY r.n DESC LIMIT ?",
                   by.format("memories_by_time") + f" WHERE {cond} ORDER BY m.updated_at DESC LIMIT ?",
                   by.format("memories_by_about_user") +
                   f" WHERE {cond} AND m.about_user > 0 ORDER BY m.updated_at DESC LIMIT ?"]
        for sql in queries:
            for item in _items(conn.execute(sql, [*params, per_signal]).fetchall()):
                out.setdefault(item.id, item)
    except sqlite3.Error:
        return []
    finally:
        conn.close()
    return list(out.values())


# A term held by more than COMMON_DF memories is not searched on: scoring it reads every memory that holds it, so
# the cost would follow the store's size. It still counts in `coverage` for the candidates the rarer terms and the
# vector half bring. (A share of the store, the first rule, let a 100k store search terms in 10,000 memories:
# keyword search p95 80 ms there against 5 ms at 1k.)
COMMON_DF = 2000
# A term's frequency among the visible memories is counted exactly when at most DF_CAP memories hold it, else
# estimated from its share of the whole store and capped there (idf barely moves beyond; counting would read up to
# DF_CAP rows per term, and a Chinese question has a dozen terms).
DF_CAP = 1000
CANDIDATES_PER_HIT = 10  # keyword candidates read per hit wanted, before the visibility filter


def keyword_search(location: Location, query: str, where: dict | None = None, limit: int = 20
                   ) -> tuple[list[tuple[RecallItem, float]], dict[str, float]]:
    """(hits, weights): the memories passing `where` that share words with `query`, best BM25 first, as (item,
    score > 0); and each topic term of the question with its inverse document frequency (BM25's idf, over the
    memories the reader sees): a rare word ("pottery") weighs more than a common one ("going").

    The cost is bounded whatever the store's size: a term's visible frequency is counted only when it is rare
    (DF_CAP), else estimated; a term held by more than COMMON_DF memories is not searched on (the two rarest terms
    are, when every term is that common); and the best BM25 candidates are taken from the keyword index first, then
    filtered by visibility, with the full filtered query only when too few of them are visible."""
    terms = query_terms(bound_query(query))
    conn = _connect_ro(location) if terms else None
    if conn is None:
        return [], {}
    cond, params = where_sql(where)
    try:
        tallied = _meta(conn, "tally") == "1"
        total = conn.execute("SELECT COALESCE(SUM(n), 0) FROM tally" if tallied else
                             "SELECT COUNT(*) FROM memories").fetchone()[0]
        df = {t: conn.execute("SELECT COUNT(*) FROM words WHERE words MATCH ?", [match_expression([t])]).fetchone()[0]
              for t in terms}
        n = (_visible_count(conn, cond, params, tallied and _keys(where) <= _TALLIED) if where else total)

        def visible_df(t: str) -> int:
            """How many of the memories the reader sees hold `t`: counted when few hold it, else estimated."""
            if not where or not total:
                return df[t]
            if 0 < df[t] <= DF_CAP:
                return conn.execute(f"SELECT COUNT(*) FROM words JOIN memories m ON m.rowid = words.rowid "
                                    f"WHERE words MATCH ? AND {cond}", [match_expression([t]), *params]).fetchone()[0]
            return min(DF_CAP, math.ceil(df[t] * n / total))

        seen = {t: visible_df(t) for t in terms}
        weights = {t: math.log(1 + max(0.0, n - d + 0.5) / (d + 0.5)) for t, d in seen.items()}
        wanted = [t for t in terms if seen[t] and df[t] <= COMMON_DF]
        if not wanted:
            wanted = sorted((t for t in terms if seen[t]), key=lambda t: df[t])[:2]
        if not wanted:
            return [], weights
        expr = match_expression(wanted)
        pool = max(limit * CANDIDATES_PER_HIT, 100)
        found = conn.execute("SELECT rowid, -rank FROM words WHERE words MATCH ? ORDER BY rank LIMIT ?",
                             [expr, pool]).fetchall()
        score = dict(found)
        rows = []
        if found:
            marks = ",".join("?" * len(found))
            rows = conn.execute(f"{_SELECT_ROWID} WHERE m.rowid IN ({marks}) AND {cond}",
                                [r for r, _ in found] + params).fetchall()
        if len(rows) < limit and len(found) == pool:  # the visible ones are rarer: ask the filtered query
            ranked = conn.execute(f"SELECT words.rowid, -rank FROM words JOIN memories m ON m.rowid = words.rowid "
                                  f"WHERE words MATCH ? AND {cond} ORDER BY rank LIMIT ?",
                                  [expr, *params, int(limit)]).fetchall()
            score = dict(ranked)
            marks = ",".join("?" * len(ranked))
            rows = conn.execute(f"{_SELECT_ROWID} WHERE m.rowid IN ({marks})",
                                [r for r, _ in ranked]).fetchall() if ranked else []
    except sqlite3.Error:
        return [], {}
    finally:
        conn.close()
    rows.sort(key=lambda r: -score.get(r[0], 0.0))
    hits = [(item, float(score.get(row[0], 0.0))) for item, row in zip(_items([r[1:] for r in rows]), rows)]
    return hits[:limit], weights


_COUNTS: dict[tuple, int] = {}  # (index stamp, filter) -> visible memories: a long-lived reader counts once per write
_TALLIED = frozenset({"profile", "wing", "scope", "status"})  # the columns the tally holds (status: 'active')


def _keys(where: dict) -> set[str]:
    """The fields a Chroma `where` filter names."""
    out: set[str] = set()
    for key, cond in where.items():
        if key in ("$and", "$or"):
            for sub in cond:
                out |= _keys(sub)
        else:
            out.add(key)
    return out


def _visible_count(conn: sqlite3.Connection, cond: str, params: list, tallied: bool = False) -> int:
    if tallied:  # a sum over a few dozen (profile, wing, scope) rows, whatever the store's size
        return conn.execute(f"SELECT COALESCE(SUM(n), 0) FROM tally m WHERE {cond}", params).fetchone()[0]
    key = (_meta(conn, "generation"), _meta(conn, "built_at"), cond, tuple(params))
    if key[0].startswith(("pending", "stale")) or key not in _COUNTS:
        if len(_COUNTS) > 256:
            _COUNTS.clear()
        _COUNTS[key] = conn.execute(f"SELECT COUNT(*) FROM memories m WHERE {cond}", params).fetchone()[0]
    return _COUNTS[key]


def page(location: Location, where: dict | None = None, offset: int = 0, limit: int = 50
         ) -> tuple[list[RecallItem], int] | None:
    """One page of the indexed (active) memories passing `where`, newest first (`updated_at`, then `created_at`,
    then id, all descending: the order of `Store.list`), and how many pass in all. None when the index cannot
    answer (no index, or a filter on a field it does not hold): the caller reads the store instead.

    The rows are read by walking the time index and stopping after the page: flat in the store's size for the first
    pages (a deep page or a rare filter walks further, at most the whole index)."""
    try:
        cond, params = where_sql(where)
    except ValueError:
        return None
    conn = _connect_ro(location)
    if conn is None:
        return None
    try:
        tallied = _meta(conn, "tally") == "1" and _keys(where or {}) <= _TALLIED
        total = _visible_count(conn, cond, params, tallied)
        by_time = _SELECT.replace("FROM memories m", "FROM memories m INDEXED BY memories_by_time")
        rows = conn.execute(f"{by_time} WHERE {cond} ORDER BY m.updated_at DESC, m.created_at DESC, m.id DESC "
                            f"LIMIT ? OFFSET ?", [*params, max(0, int(limit)), max(0, int(offset))]).fetchall()
        return _items(rows), int(total)
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def scopes(location: Location, profile: str) -> dict[str, int] | None:
    """{scope: active memories} of one profile (the owner's scope is ""), from the tally; None without an index."""
    conn = _connect_ro(location)
    if conn is None:
        return None
    try:
        table = "tally" if _meta(conn, "tally") == "1" else "(SELECT profile, scope, 1 AS n FROM memories)"
        return {scope: int(n) for scope, n in conn.execute(
            f"SELECT scope, SUM(n) FROM {table} WHERE profile = ? GROUP BY scope HAVING SUM(n) > 0", [profile])}
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[:-len(suffix)]
    return word


def coverage(weights: dict[str, float], text: str) -> float:
    """The share (0..1) of the question's term weight that `text` holds: a memory matching the question's one
    rare word and nothing else scores below one that matches most of it."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    have = {_stem(u) for u in query_terms(text)}
    return sum(w for t, w in weights.items() if _stem(t) in have) / total


def counts(location: Location) -> dict:
    """{"owner": {profile: {wing: n}}, "others": {profile: {"memories": n, "scopes": k}}} of the active memories."""
    out: dict = {"owner": {}, "others": {}}
    conn = _connect_ro(location)
    if conn is None:
        return out
    try:
        for profile, wing, n in conn.execute(
                "SELECT profile, wing, COUNT(*) FROM memories WHERE scope = '' GROUP BY profile, wing"):
            out["owner"].setdefault(profile, {})[wing] = n
        for profile, n, k in conn.execute(
                "SELECT profile, COUNT(*), COUNT(DISTINCT scope) FROM memories WHERE scope != '' GROUP BY profile"):
            out["others"][profile] = {"memories": n, "scopes": k}
    except sqlite3.Error:
        pass
    finally:
        conn.close()
    return out


_WAITING = ("SELECT a.id, b.id, a.profile, b.profile, a.wing, a.scope FROM memories a JOIN memories b "
            "ON b.id = a.related_to WHERE a.related_to != '' AND b.wing = a.wing AND b.scope = a.scope")


def waiting(location: Location, scope: str | None = None, limit: int | None = None) -> list[tuple[str, ...]]:
    """Active pairs the write path kept apart for lack of a judge, oldest first: (newer id, older id, newer's
    profile, older's profile, wing, scope) where the newer memory's `related_to` names the older and both are
    active in one wing and scope. Which of them a writer may settle is the write path's business (visibility)."""
    conn = _connect_ro(location)
    if conn is None:
        return []
    try:
        sql, params = _WAITING, []
        if scope is not None:
            sql += " AND a.scope = ?"
            params.append(scope)
        sql += " ORDER BY a.rowid"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [tuple(r) for r in conn.execute(sql, params)]
    except sqlite3.Error:
        return []
    finally:
        conn.close()


def count_waiting(location: Location) -> dict[str, int]:
    """{profile: pairs waiting for a judge} (the newer memory's profile), from the index."""
    conn = _connect_ro(location)
    if conn is None:
        return {}
    try:
        return {p: n for p, n in conn.execute(
            "SELECT a.profile, COUNT(*) FROM memories a JOIN memories b ON b.id = a.related_to "
            "WHERE a.related_to != '' AND b.wing = a.wing AND b.scope = a.scope GROUP BY a.profile")}
    except sqlite3.Error:
        return {}
    finally:
        conn.close()


def note_recalled(location: Location, ids: Sequence[str]) -> None:
    """Count that these memories were shown (a ranking signal for the system block). Best effort: a busy or
    read-only index just skips the count."""
    if not ids or not index_path(location).exists():
        return
    try:
        conn = sqlite3.connect(str(index_path(location)), timeout=0.5, isolation_level=None)
        try:
            conn.execute("PRAGMA synchronous = OFF")  # a lost count costs nothing; an fsync on the start path does
            conn.executemany("INSERT INTO recalls(id, n) VALUES (?, 1) ON CONFLICT(id) DO UPDATE SET n = n + 1",
                             [(i,) for i in ids])
        finally:
            conn.close()
    except sqlite3.Error:
        pass


def recall_signal(n: int) -> float:
    """log-scaled count (0 for 0): the tenth recall matters less than the second."""
    return math.log1p(max(0, int(n or 0)))
