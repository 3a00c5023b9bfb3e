"""The recall index's server side: applying a sync from a Chroma server, and what `known` says.

On a Chroma server (no generation file; other machines write too) the index follows the server by change
(`automem.core.sync`): every write stamps the record's `changed_at`, and a sync asks for what changed since the last
one (`sync_apply`), so it costs what changed, not the store's size. `known` holds every id the index has seen and
its state (active, superseded, forgotten, raced), with when this machine last wrote it, so a sync that read the
server before a local write never puts back what that write replaced. Two active memories replacing the same one (a
race between machines) show only the later one (`raced`; `automem.core.convergence`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..paths import Location
from .index_file import (
    INDEX_VERSION,
    connect_rw,
    drop_rows,
    ensure_tally,
    index_path,
    note_known,
    put_rows,
    reading,
    settle_races,
    transaction,
)

SERVER_STAMP = "server"  # the `generation` of an index that follows a Chroma server (automem.core.sync)
SYNC_AGE_S = 10.0  # the default of `server_sync_s`: how old a server index may be before a reader syncs it


def meta_of(location: Location) -> dict[str, str]:
    """Every meta key of the index ({} without a readable index of this version)."""
    with reading(location) as conn:
        if conn is not None:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            return meta if meta.get("version") == INDEX_VERSION else {}
    return {}


def synced_at(meta: dict[str, str]) -> float:
    """When (this machine's wall clock) the server index last reflected the server; 0 never."""
    try:
        return float(meta.get("synced_at") or 0)
    except ValueError:
        return 0.0


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
    with transaction(connect_rw(location)) as conn:
        have = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if have.get("version") != INDEX_VERSION or any(have.get(k) != v for k, v in (expect or {}).items()):
            return None
        ensure_tally(conn)

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
        put_rows(conn, put)
        out.put = len(put)
        out.dropped += drop_rows(conn, [m.id for m in drop])
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
            out.dropped += drop_rows(conn, gone)
            if out.forgotten_texts:
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('purge', '1')")  # `purge` clears it
        note_known(conn, states, 0.0)
        out.dropped += len(settle_races(conn, [m.replaces for m in put if getattr(m, "replaces", "")]))
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
    conn = connect_rw(location)
    try:
        conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(values.items()))
    finally:
        conn.close()


def known_ids(location: Location) -> set[str] | None:
    """The ids of the store's records the index accounts for (`covered`'s ids); None without an index."""
    with reading(location) as conn:
        if conn is not None:
            return {r[0] for r in conn.execute("SELECT id FROM memories UNION SELECT id FROM known WHERE state NOT IN "
                                               "('active', 'forgotten')")}
    return None


def raced(location: Location, ids: Sequence[str]) -> set[str]:
    """Which of `ids` the index holds as the losers of a race (not to be shown); empty without an index."""
    if not ids:
        return set()
    with reading(location) as conn:
        if conn is not None:
            out: set[str] = set()
            for start in range(0, len(ids), 500):
                chunk = list(ids[start:start + 500])
                out.update(r[0] for r in conn.execute(
                    f"SELECT id FROM known WHERE state = 'raced' AND id IN ({','.join('?' * len(chunk))})", chunk))
            return out
    return set()
