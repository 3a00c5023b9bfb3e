"""Forgetting: `forget`, the one place that deletes a memory, and the tombstones it leaves behind.

Forgetting removes: `forget` deletes a memory everywhere the store keeps it (the record and its vector, Chroma's
log and free pages, the recall index, log lines, spool copies; see `automem.core.erase`), and leaves a tombstone in
the collection `forgotten`: the id and a hash of the text, no words. Automatic sources consult it
(`forgotten_among`), so an old transcript cannot bring the memory back; an explicit add clears it.

`Forgetting` is mixed into `automem.core.store.Store`: it runs under the store's write lock and uses its client,
records and recall index.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from ..config import Config
from ..errors import AutomemError
from ..text import MIN_CHARS
from .memory import Memory, change_stamp
from .visibility import OWNER

TOMBSTONES = "forgotten"  # one record per forgotten memory: its id, `text_sha`, profile, wing, forgotten_at, changed_at
_TOMBSTONE_VECTOR = [1.0]  # Chroma wants a vector; a tombstone is found by id or metadata, never by similarity
_PAGE = 1000  # tombstones read per call


class Forgetting:
    """`Store.forget` and the tombstones (see the module docstring); a part of `Store`, never used alone."""

    def forget(self, ids: Sequence[str], now: int | None = None) -> list[str]:
        """Forget memories for good. Returns the ids forgotten now (an id already forgotten is not among them).

        This is the one method that deletes a memory. Everywhere the store keeps it: the record (text, vector,
        metadata) and the records kept as its copies (`_copies_of`), Chroma's log rows and free pages (embedded),
        the recall index; then the words go from the
        log, the spool and the caches (`automem.core.erase`). A tombstone without the words stays (`forgotten_among`).
        """
        now = int(now if now is not None else time.time())
        with self.lock():
            gone = [m for m in self.get(ids)]
            gone += self._copies_of(gone)
            gone += [m for m in self._legacy_forgotten() if m.id not in {g.id for g in gone}]
            if not gone:
                return []
            try:
                self._tombstone_collection(create=True).upsert(
                    ids=[m.id for m in gone], embeddings=[list(_TOMBSTONE_VECTOR) for _ in gone],
                    metadatas=[tombstone_metadata(m, now) for m in gone])
                self._index(drop=[m.id for m in gone])
                self._collection.delete(ids=[m.id for m in gone])
            except AutomemError:
                raise
            except Exception as exc:
                raise self._failure("forget failed", exc) from None
            self._wrote()
            self._erase_copies(gone)
        from ..log import log_event

        log_event(self.location, "forget", ids=[m.id for m in gone],
                  text_sha=[tombstone_key(m.profile, m.text, m.scope) for m in gone])
        return [m.id for m in gone if m.id in set(ids)]

    def _copies_of(self, memories: Sequence[Memory]) -> list[Memory]:
        """The records kept as copies of `memories`, however many links back: the restatements merged into one (a
        judge's duplicate, kept as a merged record) and its earlier wordings (an edit). Forgetting a memory forgets
        them too; the values it replaced (an update) are other facts and stay."""
        found: dict[str, Memory] = {}
        frontier = [m.id for m in memories]
        while frontier:
            where = {"$and": [{"superseded_by": {"$in": frontier}}, {"superseded_how": {"$in": ["merge", "edit"]}}]}
            fresh = [m for m in self.iter_records(where=where) if m.id not in found]
            found.update((m.id, m) for m in fresh)
            frontier = [m.id for m in fresh]
        return [m for i, m in found.items() if i not in {g.id for g in memories}]

    def _legacy_forgotten(self) -> list[Memory]:
        """Records an older automem kept with status `forgotten` (and their words): forgotten properly now."""
        return list(self.iter_records(where={"status": "forgotten"}))

    def _erase_copies(self, gone: Sequence[Memory]) -> None:
        """Everything but the record itself (called by `forget`, under the write lock). Its evidence and history
        were on the record; their excerpts, like its text, leave the log, the spool and the caches."""
        from . import erase, index

        if self.backend == "embedded":
            self._close_client()  # VACUUM needs this process's connections closed
            erase.purge_chroma(self.location.chroma_dir, [m.id for m in gone])
        index.purge(self.location)  # no page of the keyword index keeps the words
        texts = [m.text for m in gone]
        if erase.job_files(self.location):  # jobs queued before the forget must not bring it back
            vectors = self.embed(texts)
            forgotten = [erase.Forgotten(m.text, list(v), m.profile, m.scope) for m, v in zip(gone, vectors)]
            with erase.jobs_lock(self.location):
                erase.scrub_jobs(self.location, forgotten, self.embed, self.config.dedup_related_distance)
            erase.guard(self.location, forgotten, time.time())
        # Excerpts as short as the shortest memory are scrubbed too (a shorter one would take common words along).
        excerpts = [w for m in gone for w in (m.source_excerpt, m.restated_first_excerpt, m.restated_last_excerpt)]
        erase.scrub_files(self.location, texts + [w for w in excerpts if w and len(w) >= MIN_CHARS])

    def _tombstone_collection(self, create: bool = False) -> Any:
        """The tombstones' collection; None when nothing was ever forgotten here (and `create` is false)."""
        with self._thread_lock:
            self.refresh()  # another process's forget bumps the generation: the reopen forgets "absent" too
            if self._tombstones is None or (create and self._tombstones is _ABSENT):
                try:
                    if create:
                        self._tombstones = self._client.get_or_create_collection(
                            TOMBSTONES, embedding_function=_embedding_function(self.config),
                            configuration={"hnsw": {"space": "cosine"}})
                    else:
                        self._tombstones = self._client.get_collection(
                            TOMBSTONES, embedding_function=_embedding_function(self.config))
                except Exception as exc:
                    if create or not _is_not_found(exc):
                        raise self._failure(f"cannot open collection `{TOMBSTONES}`", exc) from None
                    # Absent. Embedded: known until the generation moves. A server has no generation: ask again.
                    self._tombstones = _ABSENT if self.backend == "embedded" else None
                    return None
            return None if self._tombstones is _ABSENT else self._tombstones

    def forgotten_among(self, items: Sequence[tuple[str, str, str, str]]) -> set[str]:
        """Of (id, profile, scope, normalised text) items, the ids their owner forgot: by id, or by the same text
        of the same profile and scope in any wing. One or two reads; none when nothing was ever forgotten."""
        if not items:
            return set()
        tomb = self._tombstone_collection()
        if tomb is None:
            return set()
        keys = {tombstone_key(profile, text, scope): mid for mid, profile, scope, text in items}
        try:
            by_id = set(tomb.get(ids=[item[0] for item in items], include=[])["ids"])
            res = tomb.get(where={"text_sha": {"$in": sorted(keys)}}, include=["metadatas"])
        except Exception as exc:
            raise self._failure("read failed", exc) from None
        by_text = {keys[m["text_sha"]] for m in res["metadatas"] if m and m.get("text_sha") in keys}
        return by_id | by_text

    def _clear_tombstones(self, memories: Sequence[Memory]) -> None:
        tomb = self._tombstone_collection()
        if tomb is None or not memories:
            return
        ids = set(tomb.get(ids=[m.id for m in memories], include=[])["ids"])
        keys = sorted({tombstone_key(m.profile, m.text, m.scope) for m in memories})
        ids |= set(tomb.get(where={"text_sha": {"$in": keys}}, include=[])["ids"])
        if ids:
            tomb.delete(ids=sorted(ids))

    def tombstones(self) -> list[dict]:
        """Every tombstone: {"id", "text_sha", "profile", "wing", "room", "forgotten_at"}, oldest first."""
        tomb = self._tombstone_collection()
        if tomb is None:
            return []
        out, offset = [], 0
        while True:
            res = self._read("read", lambda: tomb.get(limit=_PAGE, offset=offset, include=["metadatas"]))
            out += [{"id": i, **(m or {})} for i, m in zip(res["ids"], res["metadatas"])]
            if len(res["ids"]) < _PAGE:
                break
            offset += _PAGE
        out.sort(key=lambda t: (t.get("forgotten_at", 0), t["id"]))
        return out

    def tombstones_of(self, ids: Sequence[str]) -> list[dict]:
        """The tombstones of these ids (each {"id", ...metadata}); [] when none."""
        tomb = self._tombstone_collection()
        if tomb is None or not ids:
            return []
        res = self._read("read", lambda: tomb.get(ids=list(ids), include=["metadatas"]))
        return [{"id": i, **(m or {})} for i, m in zip(res["ids"], res["metadatas"])]

    def add_tombstones(self, tombstones: Sequence[dict]) -> int:
        """Store tombstones as given (import, migrate): no words, nothing deleted. Returns how many."""
        if not tombstones:
            return 0
        with self.lock():
            return self.write_tombstones(tombstones)

    def write_tombstones(self, tombstones: Sequence[dict]) -> int:
        """`add_tombstones` for a caller that already holds what it needs (`migrate` locks the embedded sides)."""
        if not tombstones:
            return 0
        try:
            self._tombstone_collection(create=True).upsert(
                ids=[t["id"] for t in tombstones], embeddings=[list(_TOMBSTONE_VECTOR) for _ in tombstones],
                metadatas=[{"changed_at": change_stamp(),  # unless it carries one (migrate copies records raw)
                            **{k: v for k, v in t.items() if k != "id" and isinstance(v, (str, int, float, bool))}}
                           for t in tombstones])
        except AutomemError:
            raise
        except Exception as exc:
            raise self._failure("write failed", exc) from None
        self._wrote()
        return len(tombstones)


def tombstone_key(profile: str, text: str, scope: str = OWNER) -> str:
    """The hash a tombstone keeps of a forgotten memory's words (per profile and scope, any wing)."""
    import hashlib

    from ..text import normalise

    return hashlib.sha256(f"{profile}\x1f{scope}\x1f{normalise(text)}".encode("utf-8")).hexdigest()[:32]


def tombstone_metadata(memory: Memory, now: int) -> dict[str, Any]:
    return {"text_sha": tombstone_key(memory.profile, memory.text, memory.scope), "profile": memory.profile,
            "scope": memory.scope, "wing": memory.wing,
            "room": memory.room, "task_id": memory.task_id, "created_at": int(memory.created_at or 0),
            "forgotten_at": int(now), "status": "forgotten", "changed_at": change_stamp()}


_ABSENT = object()  # the tombstones' collection does not exist (yet)


def _is_not_found(exc: BaseException) -> bool:
    return exc.__class__.__name__ in ("NotFoundError", "InvalidCollectionException") or "does not exist" in str(exc)


def _embedding_function(config: Config) -> Any:
    from .embeddings import make_embedding_function

    return make_embedding_function(config)
