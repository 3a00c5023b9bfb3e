"""What `Store.forget` does besides deleting the record: take the words out of every other file that may hold them.

What Chroma 1.5.9 leaves in an embedded store after `collection.delete` (measured; tests/test_forget.py checks it):
- `chroma.sqlite3`, table `embeddings_queue` (its write-ahead log): the record's add / upsert rows, with the
  document text, the metadata and the vector, stay until the vector index persists and the log is pruned, which
  happens only after `hnsw:sync_threshold` (1000) records; a small store keeps every record it ever received.
- `chroma.sqlite3`, freed space: the deleted rows of `embedding_metadata` (the document is stored there as
  `chroma:document`) and of the full-text index's content table stay readable in free pages and page slack.
- the full-text index (FTS5, trigram tokenizer) keeps the deleted row's trigrams in its segments until a merge.
- the HNSW files (`<segment>/data_level0.bin`): the vector stays as an element marked deleted (unreachable by
  queries) until Chroma reuses or rebuilds the index; `index_metadata.pickle` holds ids only. And the index's
  unused capacity is written from uninitialised memory: `data_level0.bin` (and `length.bin`) are created with room
  for 100 elements, and rewritten only when the index persists (every 1000 records), so until then the whole file
  is whatever the creating process had on its heap; seen holding other records' serialised metadata and document
  text (in 4 of 12 fresh stores). `zero_unused_hnsw` writes zeros over the capacity past the elements in use.
  Reads rewrite it too: the first query after a client reopens loads the index and may persist it, its capacity
  again from the reading process's heap (in the process that just forgot, that heap still holds the words), so
  the store tidies after a read that changed the files as well as after every write.

So `purge_chroma` removes the forgotten ids' log rows (their delete rows stay, so an index that has not persisted
yet still applies the delete when it replays the log), merges the full-text index, and VACUUMs, which rewrites
the file without free pages. It runs under the write lock with this process's client closed; another process's
reader waits for it (busy timeout) and reopens on the next generation. A Chroma server's files are the server's:
there the record is deleted through the API and the server's operator vacuums (`chroma utils vacuum`).
"""

from __future__ import annotations

import json
import sqlite3
import struct
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..log import mentions, purge_lines, text_forms
from ..paths import Location, make_private, write_private
from ..text import normalise

CHROMA_DB = "chroma.sqlite3"
DELETE_OPERATION = 3  # embeddings_queue.operation of a delete (0 add, 1 update, 2 upsert)
PLACEHOLDER = "[forgotten]"
BUSY_TIMEOUT_MS = 60_000


def purge_chroma(chroma_dir: Path, ids: Sequence[str]) -> None:
    """Take the deleted records `ids` out of Chroma's log and free pages (see the module docstring)."""
    path = chroma_dir / CHROMA_DB
    if not ids or not path.is_file():
        return
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("DELETE FROM embeddings_queue WHERE id = ? AND operation != ?",
                         [(i, DELETE_OPERATION) for i in ids])
        conn.execute("COMMIT")
        try:
            conn.execute("INSERT INTO embedding_fulltext_search(embedding_fulltext_search) VALUES('optimize')")
        except sqlite3.OperationalError:  # no full-text table in this Chroma version
            pass
        conn.execute("VACUUM")
    finally:
        conn.close()
    zero_unused_hnsw(chroma_dir)
    make_private(chroma_dir)


def _hnsw_layout(header: bytes) -> tuple[int, int, int] | None:
    """(max_elements, elements in use, bytes per element) from an hnswlib header.bin (Chroma's, with or without
    its leading format version); None when the header does not look like one."""
    for start in (4, 0):
        if len(header) < start + 48:
            continue
        off0, max_elements, current, per_element, label_off, data_off = struct.unpack_from("<6Q", header, start)
        if off0 == 0 and 0 < per_element < 1 << 24 and current <= max_elements < 1 << 32 \
                and data_off < label_off < per_element:
            return max_elements, current, per_element
    return None


def zero_unused_hnsw(chroma_dir: Path) -> int:
    """Zeros over the unused capacity of every HNSW segment (see the module docstring). Returns the bytes zeroed.
    Only bytes past the elements in use are written, and only when they are not zero already; a file whose size
    does not match its header is left alone."""
    zeroed = 0
    for header in sorted(chroma_dir.glob("*/header.bin")):
        try:
            layout = _hnsw_layout(header.read_bytes())
        except OSError:
            continue
        if layout is None:
            continue
        max_elements, current, per_element = layout
        for name, size in (("data_level0.bin", per_element), ("length.bin", 4)):
            path = header.parent / name
            try:
                if path.stat().st_size != max_elements * size:
                    continue
                with open(path, "r+b") as fh:
                    fh.seek(current * size)
                    tail = fh.read()
                    if tail.count(0) != len(tail):
                        fh.seek(current * size)
                        fh.write(bytes(len(tail)))
                        zeroed += len(tail)
            except OSError:
                continue
    return zeroed


def scrub_files(location: Location, texts: Iterable[str]) -> dict[str, int]:
    """Words of forgotten memories out of automem's other files: log lines holding them are removed; in the JSON
    files of the spool, dead/ and cache/ (pending transcripts, failed jobs, snapshots) every string that holds
    them (once normalised, as memories are) has them replaced by `[forgotten]`. Returns what changed."""
    norms = [normalise(t) for t in texts if t]
    lines = purge_lines(location, norms)
    changed = 0
    for folder in (location.spool_dir, location.dead_dir, location.cache_dir):
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if not path.is_file() or path.is_symlink() or not path.name.endswith((".json", ".unreadable")):
                continue
            try:
                raw = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            try:
                data = json.loads(raw)
            except ValueError:  # not JSON (a quarantined file): plain replacement of every form
                new = raw
                for form in text_forms(norms):
                    new = new.replace(form, PLACEHOLDER)
                new = new if new != raw else (PLACEHOLDER if mentions(raw, norms) else raw)
            else:
                if not mentions(data, norms):
                    continue
                new = json.dumps(_replace(data, norms), ensure_ascii=False, indent=1)
            if new != raw:
                try:
                    write_private(path, new)
                    changed += 1
                except OSError:
                    pass
    return {"log_lines": lines, "files": changed}


def _replace(value: Any, norms: list[str]) -> Any:
    if isinstance(value, str):
        if not mentions(value, norms):
            return value
        folded = normalise(value)
        for n in norms:
            folded = folded.replace(n, PLACEHOLDER)
        return folded
    if isinstance(value, dict):
        return {k: _replace(v, norms) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, norms) for v in value]
    return value
