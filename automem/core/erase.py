"""What `Store.forget` does besides deleting the record: take the words out of every other file that may hold them.

What Chroma 1.5.9 leaves in an embedded store after `collection.delete` (measured; tests/test_forget.py checks it):
- `chroma.sqlite3`, table `embeddings_queue` (its write-ahead log): the record's add / upsert rows, with the
  document text, the metadata and the vector, stay until the vector index persists and the log is pruned, which
  happens only after `hnsw:sync_threshold` (1000) records; a small store keeps every record it ever received.
- `chroma.sqlite3`, freed space: the deleted rows of `embedding_metadata` (the document is stored there as
  `chroma:document`) and of the full-text index's content table stay readable in free pages and page slack.
- the full-text index (FTS5, trigram tokenizer) keeps the deleted row's trigrams in its segments until a merge.
- the HNSW files (`<segment>/data_level0.bin`): the vector stays as an element marked deleted (unreachable by
  queries) until Chroma reuses or rebuilds the index; `index_metadata.pickle` holds ids only. No text there.

So `purge_chroma` removes the forgotten ids' log rows (their delete rows stay, so an index that has not persisted
yet still applies the delete when it replays the log), merges the full-text index, and VACUUMs, which rewrites
the file without free pages. It runs under the write lock with this process's client closed; another process's
reader waits for it (busy timeout) and reopens on the next generation. A Chroma server's files are the server's:
there the record is deleted through the API and the server's operator vacuums (`chroma utils vacuum`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Iterable, Sequence

from ..log import purge_lines, text_forms
from ..paths import Location, make_private, write_private

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
    make_private(chroma_dir)


def scrub_files(location: Location, texts: Iterable[str]) -> dict[str, int]:
    """Words of forgotten memories out of automem's other files: log lines holding them are removed; in the JSON
    files of the spool, dead/ and cache/ (pending transcripts, failed jobs, snapshots) every occurrence becomes
    `[forgotten]`. Returns how many log lines and files changed."""
    texts = [t for t in texts if t]
    lines = purge_lines(location, texts)
    forms = text_forms(texts)
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
            new = raw
            for form in forms:
                new = new.replace(form, PLACEHOLDER)
            if new != raw:
                try:
                    write_private(path, new)
                    changed += 1
                except OSError:
                    pass
    return {"log_lines": lines, "files": changed}
