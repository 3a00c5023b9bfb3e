"""The memory store: one Chroma collection `memories` (cosine space) under the Hermes root, or on a Chroma server.

Two facts shape this module:
- A long-lived embedded Chroma client does not see other processes' writes in vector search (its HNSW index is
  cached per path and per process). Every write bumps a generation file under the write lock; before a read or a
  write decision the store compares generations and reopens its client when another process has written.
- Writers serialise on one inter-process file lock (`<root>/automem/write.lock`), and the neighbour lookup that
  decides duplicate / update / new runs under that same lock.

This module opens, locks, reads and writes the memories. Three parts of `Store` are mixins of their own modules:
searching and recall (`automem.core.searching`), keeping the recall index in step (`automem.core.indexing`), and
forgetting (`Store.forget`, the tombstones: `automem.core.forgetting`).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from ..config import Config, load_config
from ..errors import AutomemError, StoreError
from ..paths import Location, make_private, write_private
from .candidate import RELATED_TO
from .forgetting import Forgetting
from .indexing import Indexing
from .memory import HELD, METADATA_KEYS, OPTIONAL_KEYS, Memory, change_stamp
from .searching import Searching
from .visibility import OWNER, matches, visible_where

COLLECTION = "memories"
_STATUS_RANK = {"active": 0, "superseded": 1, "forgotten": 2}  # update_metadata never moves a status down
LOCK_TIMEOUT_S = 120.0
_PAGE = 1000
SCHEMA_VERSION = 2  # 2: every memory has a `scope` (automem.core.memory.OWNER for the owner's)


class Store(Searching, Indexing, Forgetting):
    """Memories of every profile under one root. Thread-safe; safe across processes (see module docstring)."""

    def __init__(self, location: Location, config: Config | None = None):
        self.location = location
        self.config = config if config is not None else load_config(location)
        self.backend = "server" if self.config.chroma_url else "embedded"
        self._client: Any = None
        self._collection: Any = None
        self._tombstones: Any = None
        self._tidied: list = []  # (path, size, mtime) of the index files last tidied
        self._seen_generation: int | None = None
        self._index_whole: int | None = None  # the generation at which the index was found to cover the store
        self._thread_lock = threading.RLock()
        self._file_lock: Any = None
        self._lock_depth = 0
        self._grouped = 0  # depth of `write_group`
        self._bump_owed = False  # a write in the group landed: the group's end bumps the generation
        self._index_unconfirmed = False  # the index took a write whose store half has not landed (yet)
        if self.backend == "embedded":
            location.ensure_dirs()

    # -- opening -----------------------------------------------------------------------------------------------
    @property
    def _generation_file(self) -> str:
        return str(self.location.automem_dir / "generation")

    def generation(self) -> int:
        """A number that grows with every write from any process on this machine (0 before the first)."""
        return read_generation(self.location)

    def _bump_generation(self) -> None:
        # Called under the write lock. Atomic replace: readers without the lock never see a torn number.
        old = self.generation()
        write_private(Path(self._generation_file), str(old + 1))
        self._seen_generation = old + 1
        from . import index

        index.advance(self.location, old, old + 1)

    def _make_client(self) -> Any:
        try:
            import chromadb
            from chromadb.config import Settings
        except ImportError as exc:  # pragma: no cover - a broken install
            raise StoreError(f"chromadb is not importable ({exc}); reinstall automem") from None
        settings = Settings(anonymized_telemetry=False, allow_reset=False)
        if self.backend == "server":
            from .server import make_http_client

            return make_http_client(self.config, settings)
        try:
            return chromadb.PersistentClient(path=str(self.location.chroma_dir), settings=settings)
        except Exception as exc:  # chromadb raises many types for a damaged folder
            raise StoreError(f"cannot open the store at {self.location.chroma_dir}: {exc}") from None

    def _open(self) -> None:
        from .embeddings import make_embedding_function

        ef = make_embedding_function(self.config)
        with self._first_open_lock():
            client = self._make_client()
            try:
                collection = client.get_or_create_collection(
                    COLLECTION, embedding_function=ef, configuration={"hnsw": {"space": "cosine"}})
            except ValueError as exc:
                raise StoreError(
                    f"the store's collection `{COLLECTION}` does not fit this config ({exc}); the store was built "
                    f"with another `embedding:` setting: set it back, or `automem export` and import into a new "
                    f"root") from None
            except Exception as exc:
                raise StoreError(f"cannot open collection `{COLLECTION}`: {exc}") from None
        self._client, self._collection = client, collection
        self._ensure_schema()
        if self.backend == "embedded":
            self._tidy_files()
            self._index_an_empty_store()
            self._check_index()

    @contextmanager
    def _first_open_lock(self) -> Iterator[None]:
        """The write lock around making an embedded store's files. Chroma's first set-up (its SQLite migrations) is
        not safe across processes: three processes opening a new root at once failed in 2 of 20 rounds ("table
        collections already exists"; "database is locked" too). Once the files exist, opening needs no lock."""
        from filelock import Timeout

        if self.backend != "embedded" or (self.location.chroma_dir / "chroma.sqlite3").exists():
            yield
            return
        lock = self._write_file_lock()  # re-entrant; not lock(), which refreshes, i.e. opens again
        try:
            lock.acquire(timeout=LOCK_TIMEOUT_S)
        except Timeout:
            raise self._held_too_long(LOCK_TIMEOUT_S) from None
        try:
            yield
        finally:
            lock.release()

    def _index_an_empty_store(self) -> None:
        """A store just made (the first session's drainer opens it, and may store nothing) gets its empty recall
        index at once: else the next Hermes start, finding Chroma's files but no index, would load Chroma to
        rebuild an index of nothing (1.5 s of CPU on the start path)."""
        from . import index

        if index.index_path(self.location).exists() or self._collection.count():
            return
        lock = self._write_file_lock()  # re-entrant; not lock(), which refreshes, i.e. opens again
        try:
            lock.acquire(timeout=LOCK_TIMEOUT_S)
            if not index.index_path(self.location).exists() and not self._collection.count():
                index.rebuild(self.location, [], str(self.generation()))
        except Exception:  # noqa: BLE001 - an optimisation: the next reader builds it as before
            pass
        finally:
            if lock.is_locked:
                lock.release()

    def _ensure_schema(self) -> None:
        """Memories written before scopes existed carry no `scope` key, and Chroma's filters never match a missing
        key: give them the owner's scope once (they were all the owner's), then record the schema version."""
        meta = dict(self._collection.metadata or {})
        if int(meta.get("automem_schema") or 0) >= SCHEMA_VERSION:
            return
        lock = self._write_file_lock() if self.backend == "embedded" else None  # re-entrant: open may run inside lock()
        try:
            if lock is not None:
                lock.acquire(timeout=LOCK_TIMEOUT_S)
            offset, fixed = 0, 0
            while True:
                res = self._collection.get(limit=_PAGE, offset=offset, include=["metadatas"])
                ids = [i for i, m in zip(res["ids"], res["metadatas"]) if "scope" not in (m or {})]
                if ids:
                    self._collection.update(ids=ids, metadatas=[{"scope": OWNER} for _ in ids])
                    fixed += len(ids)
                if len(res["ids"]) < _PAGE:
                    break
                offset += _PAGE
            meta["automem_schema"] = SCHEMA_VERSION
            self._collection.modify(metadata=meta)
            if fixed:
                from ..log import log_event

                log_event(self.location, "schema_migrated", to=SCHEMA_VERSION, memories=fixed)
        except Exception as exc:  # an old store stays readable for the owner's paths that do not filter on scope
            raise self._failure(f"cannot upgrade the store to schema {SCHEMA_VERSION}", exc) from None
        finally:
            if lock is not None and lock.is_locked:
                lock.release()

    def _close_client(self) -> None:
        client, self._client, self._collection = self._client, None, None
        self._tombstones = None
        if client is not None:
            try:
                client.close()  # stops this path's cached Chroma system, so the next client reads fresh state
            except Exception:
                pass

    def refresh(self) -> None:
        """Make sure the next read sees every write made so far by any process."""
        with self._thread_lock:
            if self.backend == "server":
                if self._collection is None:
                    self._open()
                return
            gen = self.generation()
            if self._collection is None or gen != self._seen_generation:
                self._close_client()
                self._open()
                self._seen_generation = gen

    @property
    def collection(self) -> Any:
        self.refresh()
        return self._collection

    def close(self) -> None:
        with self._thread_lock:
            self._close_client()
            self._tidy_after_read(wait=1.0)

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- locking -----------------------------------------------------------------------------------------------
    @contextmanager
    def lock(self, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
        """The inter-process write lock (re-entrant within this Store). Writes and their decisions run inside it."""
        from filelock import Timeout

        with self._thread_lock:
            if self._lock_depth == 0:
                try:
                    self._write_file_lock().acquire(timeout=timeout)
                except Timeout:
                    raise self._held_too_long(timeout) from None
            self._lock_depth += 1
            try:
                self.refresh()
                yield
            finally:
                self._lock_depth -= 1
                if self._lock_depth == 0:
                    self._file_lock.release()

    def _held_too_long(self, timeout: float) -> StoreError:
        return StoreError(f"another automem process has held {self.location.write_lock} for {timeout:.0f} s; if none "
                          f"is running, delete the file")

    def _write_file_lock(self):
        """This store's handle on `<root>/automem/write.lock` (one per Store: filelock counts re-entries per handle,
        while a second handle in the same process would wait for the first)."""
        if self._file_lock is None:
            from filelock import FileLock

            self.location.automem_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._file_lock = FileLock(str(self.location.write_lock), mode=0o600)
        return self._file_lock

    @contextmanager
    def write_group(self) -> Iterator[None]:
        """Several writes under one hold of the lock that end in one generation bump and one tidy of Chroma's files
        (each costs about a millisecond: a file replaced, an index commit, a walk of the folder). Other processes
        see the group's writes together, when it ends. When a write in the group fails after the index took its
        half, the index is marked stale (its next reader rebuilds it) before the generation moves on."""
        with self.lock():
            if self._grouped == 0:
                self._bump_owed = self._index_unconfirmed = False
            self._grouped += 1
            try:
                yield
            finally:
                self._grouped -= 1
                if self._grouped == 0 and self._bump_owed:
                    self._bump_owed = False
                    if self._index_unconfirmed:
                        from . import index

                        index.mark_stale(self.location)
                    self._index_unconfirmed = False
                    self._bump_generation()
                    self._tidy_files()

    def _wrote(self) -> None:
        self._index_unconfirmed = False
        if self.backend == "embedded":
            if self._grouped:
                self._bump_owed = True
                return
            self._bump_generation()
            self._tidy_files()

    def _tidy_files(self) -> None:
        """After Chroma created or rewrote files: owner-only modes (Chroma uses the umask's), and zeros over the
        vector index's unused capacity, which Chroma writes from uninitialised memory (`automem.core.erase`).
        Skipped while the index files are the ones this process last tidied."""
        from .erase import zero_unused_hnsw

        make_private(self.location.chroma_dir)
        stamp = self._hnsw_stamp()
        if stamp != self._tidied:
            zero_unused_hnsw(self.location.chroma_dir)
            self._tidied = stamp

    def _hnsw_stamp(self) -> list:
        stamp = []
        for path in sorted(self.location.chroma_dir.glob("*/data_level0.bin")):
            try:
                st = path.stat()
                stamp.append((str(path), st.st_size, st.st_mtime_ns))
            except OSError:
                pass
        return stamp

    def _tidy_after_read(self, wait: float = 0.0) -> None:
        """`_tidy_files` when a read made Chroma rewrite the vector index. Chroma loads the index on the first query
        after a reopen and may persist it then, its unused capacity again from this process's heap; in the process
        that just forgot a memory, that heap can still hold the forgotten words. The zeros are written under the
        write lock (no writer may be extending the index meanwhile); when another process holds it, the next read
        or `close` tries again. A few stat calls when nothing changed."""
        from filelock import Timeout

        if self.backend != "embedded" or self._hnsw_stamp() == self._tidied:
            return
        with self._thread_lock:
            held = self._lock_depth > 0
            try:
                if not held:
                    self._write_file_lock().acquire(timeout=wait)  # not lock(): that would reopen the client
            except Timeout:
                return
            try:
                self._tidy_files()
            except OSError:
                pass
            finally:
                if not held:
                    self._file_lock.release()

    # -- embeddings --------------------------------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        from .embeddings import embed

        return embed(list(texts), self.config)

    # -- reads -------------------------------------------------------------------------------------------------
    def where(self, profile: str | None = None, wing: str | None = None, wings: Iterable[str] | None = None,
              extra: dict | None = None, include_hidden: bool = False, scopes: Sequence[str] | None = (OWNER,),
              inherit: bool = True) -> dict:
        """Visibility filter for `profile` (None: every profile) and `scopes` (None: every scope; default: the
        owner) with this store's shared wings (see automem.core.visibility)."""
        return visible_where(profile, self.config.shared_wings, wing=wing, wings=wings, extra=extra,
                             include_hidden=include_hidden, scopes=scopes, inherit=inherit)

    def get(self, ids: Sequence[str]) -> list[Memory]:
        """Memories by id, whatever their status, in the order asked (missing ids are left out)."""
        if not ids:
            return []
        with self._thread_lock:
            res = self._read("read", lambda: self.collection.get(ids=list(ids), include=["documents", "metadatas"]))
        found = {i: Memory.read(i, d, m) for i, d, m in zip(res["ids"], res["documents"], res["metadatas"])}
        return [found[i] for i in ids if i in found]

    def iter_records(self, where: dict | None = None, page: int = _PAGE) -> Iterator[Memory]:
        """Every stored memory matching `where` (all statuses, all profiles unless filtered), in pages."""
        offset = 0
        while True:
            with self._thread_lock:
                res = self._read("read", lambda: self.collection.get(where=where or None, limit=page, offset=offset,
                                                                     include=["documents", "metadatas"]))
            if not res["ids"]:
                return
            for i, d, m in zip(res["ids"], res["documents"], res["metadatas"]):
                yield Memory.read(i, d, m)
            if len(res["ids"]) < page:
                return
            offset += page

    def iter_metadata(self, page: int = _PAGE) -> Iterator[tuple[str, dict]]:
        """(id, metadata as stored, unclamped) of every record, in pages (what `automem doctor` checks)."""
        offset = 0
        while True:
            with self._thread_lock:
                res = self._read("read", lambda: self.collection.get(limit=page, offset=offset,
                                                                     include=["metadatas"]))
            yield from zip(res["ids"], res["metadatas"])
            if len(res["ids"]) < page:
                return
            offset += page

    def list(self, profile: str | None = None, wing: str | None = None, wings: Iterable[str] | None = None,
             include_hidden: bool = False, limit: int | None = None, where: dict | None = None,
             scopes: Sequence[str] | None = (OWNER,), inherit: bool = True) -> list[Memory]:
        """Visible memories (with include_hidden: superseded and forgotten too), newest first."""
        flt = self.where(profile, wing=wing, wings=wings, extra=where, include_hidden=include_hidden, scopes=scopes,
                         inherit=inherit)
        items = list(self.iter_records(flt))
        items.sort(key=lambda m: (m.updated_at or m.created_at, m.created_at, m.id), reverse=True)
        return items[:limit] if limit is not None else items

    def count(self) -> int:
        return int(self._read("count", lambda: self.collection.count()))

    def _read(self, what: str, call):
        """Run one Chroma read; a failure becomes a one-line StoreError (on a server: why it cannot answer)."""
        try:
            return call()
        except AutomemError:  # already one line (a config or store problem found while opening)
            raise
        except Exception as exc:
            raise self._failure(f"{what} failed", exc) from None

    # -- writes (callers hold `lock()`; the write path is the only caller for new memories) -----------------
    def write_records(self, memories: Sequence[Memory], embeddings: Sequence[Sequence[float]]) -> None:
        """Write records exactly as given: no duplicate / update decision, no secret check, no screening. Internal:
        its callers are the write path (after deciding) and import (after checking each line). To add a memory,
        use `automem.Memories.remember` (or `automem.core.write_path.remember`)."""
        if not memories:
            return
        with self.lock():
            try:
                # Ids not stored yet go through `add`, which Chroma ignores for an id that exists by then: when
                # writers on two machines (where the file lock does not reach) store the same fact at once, the
                # record that landed first stays as it was (its created_at, job, session) instead of being
                # rewritten by the later copy. Stored ids are replaced on purpose (restoring a forgotten memory,
                # import), so they are upserted.
                present = set(self._collection.get(ids=[m.id for m in memories], include=[])["ids"])
                stamp = change_stamp()
                for m in memories:
                    m.changed_at = stamp
                self._index(put=memories)
                fresh = [i for i, m in enumerate(memories) if m.id not in present]
                stored = [i for i, m in enumerate(memories) if m.id in present]
                for rows, write, meta in ((fresh, self._collection.add, Memory.metadata),
                                          (stored, self._collection.upsert, _rewritten)):
                    if rows:
                        write(ids=[memories[i].id for i in rows], documents=[memories[i].text for i in rows],
                              metadatas=[meta(memories[i]) for i in rows],
                              embeddings=[list(embeddings[i]) for i in rows])
                # Written again on purpose (automatic sources never get here with a forgotten memory): restored.
                # A memory held for review restores nothing (the write path never holds a forgotten one).
                self._clear_tombstones([m for m in memories if m.status != HELD])
            except AutomemError:
                raise
            except Exception as exc:
                raise self._failure("write failed", exc) from None
            for m in memories:
                m.stored = m.metadata()
            self._wrote()

    def update_metadata(self, memories: Sequence[Memory]) -> list[tuple[Memory, Memory]]:
        """Write back changed metadata (status, superseded_by, updated_at, pinned, restated...) of existing memories:
        only the keys that changed since they were read (`Memory.changes`; Chroma merges them into the stored
        record), so a copy read before another machine's change never writes back what that machine changed (a pin
        stays when another machine restates the memory at the same moment).

        A memory whose stored status has meanwhile become forgotten (or superseded) is not moved back to active
        (or from forgotten to superseded): only a stale copy read before another writer's change would do that,
        and on a Chroma server the file lock does not keep other machines' writers out. Restoring a memory on
        purpose goes through `add`. Nor is a memory that another writer superseded meanwhile superseded again by
        something else: such pairs are returned, (this write's copy, the stored record), for the caller to settle
        as a race (`automem.core.convergence`).
        """
        if not memories:
            return []
        with self.lock():
            try:
                stored = {m.id: m for m in self.get([m.id for m in memories])}
                keep, conflicts = [], []
                for m in memories:
                    now = stored.get(m.id)
                    if now is None or _STATUS_RANK.get(m.status, 0) < _STATUS_RANK.get(now.status, 0):
                        continue
                    if (m.status == "superseded" and now.status == "superseded" and now.superseded_by
                            and m.superseded_by != now.superseded_by):
                        conflicts.append((m, now))
                        continue
                    keep.append(m)
                stamp = change_stamp()
                writes, merged = [], []
                for m in keep:
                    m.changed_at = stamp
                    changes = m.changes()
                    if set(changes) <= {"changed_at"}:
                        continue  # nothing but the stamp: nothing to write
                    writes.append((m, changes))
                    base = stored[m.id].stored or {}
                    after = {k: v for k, v in {**base, **changes}.items() if v is not None}
                    merged.append(Memory.read(m.id, stored[m.id].text, after))
                if writes:
                    self._index(put=merged)  # what the store holds after this write, not this copy
                    self._collection.update(ids=[m.id for m, _ in writes], metadatas=[c for _, c in writes])
                    for (m, _), after in zip(writes, merged):
                        m.stored = dict(after.stored or {})
                skipped = sorted({m.id for m in memories} - {m.id for m in keep} - {m.id for m, _ in conflicts})
                if skipped or conflicts:
                    from ..log import log_event

                    log_event(self.location, "stale_update_skipped", ids=skipped,
                              superseded_elsewhere=[m.id for m, _ in conflicts],
                              reason="another writer changed their status first")
            except AutomemError:
                raise
            except Exception as exc:
                raise self._failure("write failed", exc) from None
            self._wrote()
        return conflicts

    def replacing(self, ids: Sequence[str]) -> list[Memory]:
        """The active memories that replaced any of `ids` when they were written (`replaces`): more than one for
        the same id is a race between machines (automem.core.convergence)."""
        if not ids:
            return []
        flt = {"$and": [{"replaces": {"$in": sorted(set(ids))}}, {"status": "active"}]}
        return list(self.iter_records(where=flt))

    def linked_to(self, ids: Sequence[str], where: dict | None = None) -> list[Memory]:
        """The memories whose `related_to` names one of `ids` (kept apart from it for lack of a judge) and that pass
        `where` (a visibility filter, applied here to the records read). On an embedded store the recall index says
        which they are when it reflects the store (most often none: no Chroma read at all); else Chroma is asked
        for the link alone (with the visibility filter too, Chroma takes 20 ms at 10,000 memories; alone, 1 ms)."""
        wanted = [i for i in dict.fromkeys(ids) if i]
        if not wanted:
            return []
        found: list[Memory] | None = None
        if self.backend == "embedded":
            from . import index

            if index.is_fresh(self.location, self.generation()):
                linking = index.linking_to(self.location, wanted)
                if linking is not None:
                    found = self.get(linking)
                    if len(found) != len(linking) or any(str(m.extra.get(RELATED_TO) or "") not in wanted
                                                         for m in found):
                        found = None  # the index and the store disagree (a write in flight): ask the store
        if found is None:
            link = {RELATED_TO: wanted[0]} if len(wanted) == 1 else {RELATED_TO: {"$in": wanted}}
            found = list(self.iter_records(where=link))
        return [m for m in found if matches(m.stored if m.stored is not None else m.metadata(), where)]

    def drop_held(self, ids: Sequence[str]) -> list[str]:
        """Take memories held for review out of the store once they are settled: accepted (`automem review
        --accept`) or stored meanwhile under their own id. Only records still held go; no tombstone is left (the
        words live on in the memory they became; `forget` is what rejects one). Returns the ids taken out."""
        if not ids:
            return []
        with self.lock():
            gone = [m.id for m in self.get(list(dict.fromkeys(ids))) if m.status == HELD]
            if gone:
                try:
                    self._collection.delete(ids=gone)
                except Exception as exc:
                    raise self._failure("write failed", exc) from None
                self._wrote()
        return gone

    def _explain(self, exc: BaseException) -> str:
        if self.backend == "server":
            from .server import explain

            return explain(exc, self.config)
        return str(exc)

    def _failure(self, what: str, exc: BaseException) -> StoreError:
        """A failed Chroma call as one line; on a server that does not answer, a StoreUnavailable (worth a retry)."""
        if self.backend == "server":
            from .server import failure

            return failure(what, exc, self.config)
        return StoreError(f"{what}: {exc}")

    def import_memories(self, memories: Sequence[Memory], batch: int = 256) -> int:
        """Store memories exactly as given (ids, text, every metadata field), re-embedding their text (a large
        import's next chunk is embedded by a worker process while this one is written: see embed_worker)."""
        from .embed_worker import embed_chunks

        chunks = [list(memories[start:start + batch]) for start in range(0, len(memories), batch)]
        total = 0
        for chunk, vectors in zip(chunks, embed_chunks([[m.text for m in c] for c in chunks], self.config)):
            self.write_records(chunk, vectors)
            total += len(chunk)
        return total

    # -- figures -----------------------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        per_profile: dict[str, dict[str, int]] = {}
        per_wing: dict[str, int] = {}
        per_status: dict[str, int] = {}
        total = 0
        for mem in self.iter_records():
            total += 1
            prof = per_profile.setdefault(mem.profile, {})
            prof[mem.status] = prof.get(mem.status, 0) + 1
            if mem.status == "active":
                per_wing[mem.wing] = per_wing.get(mem.wing, 0) + 1
            per_status[mem.status] = per_status.get(mem.status, 0) + 1
        return {"total": total, "by_profile": per_profile, "active_by_wing": per_wing, "by_status": per_status,
                "backend": self.backend}


def read_generation(location: Location) -> int:
    """The embedded store's write generation at `location` (0 before the first write); readable without Chroma."""
    try:
        with open(location.automem_dir / "generation", encoding="ascii") as fh:
            return int(fh.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def _rewritten(memory: Memory) -> dict[str, Any]:
    """The metadata of a record written over a stored one (Chroma merges metadata on upsert): the optional keys this
    memory does not have are deleted (None), so a restored memory carries no evidence or history of its old self."""
    meta: dict[str, Any] = memory.metadata()
    meta.update({k: None for k in OPTIONAL_KEYS + ("replaces",) if k not in meta})
    return meta


def open_store(location: Location | None = None, config: Config | None = None) -> Store:
    """The store of `location` (default: resolved from $HERMES_HOME). Opening Chroma happens on first use."""
    location = location or Location.resolve()
    return Store(location, config)


__all__ = ["Store", "open_store", "COLLECTION", "METADATA_KEYS"]
