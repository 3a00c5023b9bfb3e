"""The store's side of the recall index (`automem.core.index`): every write updates it in the same write under the
lock (`_index`), and a reader makes it reflect the store before reading it (`ensure_index`): rebuilt on the embedded
store when another generation or a gap in what it accounts for shows (`index_gap`, checked on every open too),
synced by change on a Chroma server (`automem.core.sync`).

`Indexing` is mixed into `automem.core.store.Store` and uses its client, generation and write lock.
"""

from __future__ import annotations

from typing import Sequence

from .memory import Memory


class Indexing:
    """The recall index kept in step with the store; a part of `Store`, never used alone."""

    def _check_index(self) -> None:
        """On every open: an index that misses records Chroma holds (or holds rows it lost) is marked stale, so its
        next reader rebuilds it, even a fresh process that reads the index alone."""
        from . import index

        try:
            gap = self.index_gap()
            if gap is not None:
                from ..log import log_event

                log_event(self.location, "index_gap", indexed=gap[0], stored=gap[1], generation=self.generation())
                index.mark_stale(self.location)
        except Exception:  # noqa: BLE001 - a check: the index is derived, the next reader tries again
            pass

    def _index(self, put: Sequence[Memory] = (), drop: Sequence[str] = ()) -> None:
        """The index's half of a write (under the write lock, before Chroma's half)."""
        from . import index

        embedded = self.backend == "embedded"
        try:
            # in a write group after a write that landed, the index is pending on this generation by this very hold
            # of the lock: it stays so (another writer's pending index is stale)
            index.apply(self.location, put, drop, generation=self.generation() if embedded else None,
                        continuing=embedded and self._bump_owed)
            self._index_unconfirmed = embedded
        except Exception as exc:  # noqa: BLE001 - the index is derived: its next reader rebuilds it
            from ..log import log_event

            log_event(self.location, "index_write_failed", error=f"{exc.__class__.__name__}: {exc}")
            try:
                index.mark_stale(self.location)
            except Exception:  # noqa: BLE001
                pass

    def ensure_index(self) -> bool:
        """Make the recall index reflect the store: on the embedded store rebuild it when it does not (another
        generation, or not every record counted: `index_gap`); on a server sync it (`automem.core.sync`: what changed
        since the last sync) when its last sync is older than `server_sync_s`. Returns whether it changed anything."""
        from . import index

        if self.backend == "server":
            from . import sync

            report = sync.sync(self.location, self.config, reconcile=True)
            return bool(report.full or report.applied)
        self.refresh()  # opening (after another process wrote) checks what the index covers: `_check_index`
        gen = self.generation()
        if index.is_fresh(self.location, gen) and self.index_gap() is None:
            return False
        with self.lock():
            gen = self.generation()
            if index.is_fresh(self.location, gen) and self.index_gap() is None:
                return False
            self.rebuild_index()
        return True

    def rebuild_index(self) -> int:
        """Rebuild the recall index from every record of the store, under the write lock. Returns the memories
        indexed."""
        from . import index

        if self.backend == "server":  # every record read again from the server (`automem.core.sync`)
            from . import sync

            sync.sync(self.location, self.config, force=True, full=True)
            return len(index.items(self.location))
        with self.lock():
            return index.rebuild(self.location, self.iter_records(), str(self.generation()))

    def index_gap(self) -> tuple[int, int] | None:
        """(ids the index accounts for, records in the store) when an index that calls itself current for this
        generation does not account for every record (a batch it never saw, rows lost behind its back); None when
        it does, or cannot be compared (not current: it is rebuilt anyway; a server: other machines write). One
        count of Chroma's and two reads of the index, once per generation (recall asks on every call)."""
        from . import index

        if self.backend != "embedded" or self._index_whole == self.generation():
            return None
        gen = str(self.generation())
        seen = index.covered(self.location)
        if seen is None or seen[0] != gen:
            return None
        with self._thread_lock:
            if self._collection is None:
                self.refresh()
            try:
                total = int(self._collection.count())
            except Exception:  # noqa: BLE001 - a store that cannot count is reported by the read that follows
                return None
        again = index.covered(self.location)
        if again is None or again[0] != gen or str(self.generation()) != gen:
            return None  # a writer moved on meanwhile: no verdict
        if again[1] != total:
            return again[1], total
        self._index_whole = int(gen)
        return None
