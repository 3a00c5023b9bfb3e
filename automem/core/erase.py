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
import os
import re
import sqlite3
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..log import mentions, text_forms
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
    texts = [t for t in texts if t]
    norms = [normalise(t) for t in texts]
    lines, masked = scrub_log(location, texts)
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
    return {"log_lines": lines, "log_masked": masked, "files": changed}


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


# -- the words, anywhere else: log fields, jobs queued before the forget ----------------------------------------------
# A sentence of a queued transcript within this cosine distance of a forgotten memory says it again (measured with
# the offline encoder: restatements, translations included, 0.09-0.35 apart; another fact on the same topic 0.40-0.58,
# "dog called Biscuit" / "dog is a beagle" 0.44). The same bound stops a candidate extracted, from a job queued before
# the forget, while the forget ran (`forgotten_since`).
FORGOTTEN_DISTANCE = 0.35
GUARD_NAME = "forgotten-recently.json"  # vectors of memories forgotten while older jobs wait: no words
# Log fields that carry free text (errors may echo a model's answer or the request); structural fields (ids,
# events, statuses) are left as they are.
FREE_TEXT_FIELDS = frozenset({"error", "errors", "last_error", "judge_error", "reason", "parse_notes", "note",
                              "detail", "dead_last_errors"})
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'’\-]*[A-Za-z0-9]|[A-Za-z]{2}")
_CJK_TEXT = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_SENTENCE_END = re.compile(r"([。！？!?；;\n]+|\.(?:\s+|$))")


def names_in(text: str) -> set[str]:
    """The words of `text` that name something (lower case): a Latin word of 3+ letters inside Chinese text
    ("Biscuit", "vim"), or one written with a capital away from the start of a sentence ("... called Biscuit").
    A sentence holding one of them is about what the memory named."""
    from .index import STOP_LATIN

    cjk = bool(_CJK_TEXT.search(text))
    out: set[str] = set()
    for sentence in sentences(text):
        words = list(_LATIN_WORD.finditer(sentence))
        for i, m in enumerate(words):
            word = m.group()
            if len(word) < 3 or word.lower() in STOP_LATIN:
                continue
            if cjk or (i > 0 and word[0].isupper()):
                out.add(word.lower())
    return out


def words_of(text: str) -> set[str]:
    """Every word of `text` that is not a function word, lower case: Latin words and numbers of 3+ characters,
    Chinese character pairs (what the log's free text is masked by)."""
    from .index import query_terms

    return {t for t in query_terms(text) if len(t) >= 3 or (len(t) == 2 and _CJK_TEXT.match(t))} | names_in(text)


def sentences(text: str) -> list[str]:
    """`text` cut after each sentence's end (。！？!?；; a line break, a full stop before a space); joined, they give
    `text` back."""
    parts = _SENTENCE_END.split(text)
    out = ["".join(parts[i:i + 2]) for i in range(0, len(parts), 2)]
    return [s for s in out if s]


def mask_words(value: str, words: Iterable[str]) -> str:
    """`value` with every one of `words` (any case; Latin ones as whole words) replaced by the placeholder."""
    for word in sorted(set(words), key=len, reverse=True):
        if _CJK_TEXT.match(word):
            value = value.replace(word, PLACEHOLDER)
        else:
            value = re.sub(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", PLACEHOLDER, value, flags=re.I)
    return value


def _mask_fields(value: Any, words: set[str], key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _mask_fields(v, words, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_fields(v, words, key) for v in value]
    if isinstance(value, str) and (key in FREE_TEXT_FIELDS or key.endswith("_error")):
        return mask_words(value, words)
    return value


def scrub_log(location: Location, texts: Sequence[str]) -> tuple[int, int]:
    """One pass over the log folder's files: a line holding a forgotten memory's text goes (`mentions`); in the
    others the memory's words are masked in the free text (errors, reasons, notes), and anywhere in a line that is
    not JSON (the drainer's stderr). Returns (lines removed, lines masked)."""
    from ..log import line_mentions, rewrite_lines

    norms = [normalise(t) for t in texts if t]
    words: set[str] = set()
    for text in texts:
        words |= words_of(text)
    if not norms:
        return 0, 0

    def rewrite(line: bytes) -> bytes | None:
        if line_mentions(line, norms):
            return None
        raw = line.decode("utf-8", "replace")
        low = raw.lower()
        if not any(w in low for w in words):  # the common case: nothing to mask, no parse
            return line
        end = "\n" if raw.endswith("\n") else ""
        try:
            record = json.loads(raw)
        except ValueError:
            new = mask_words(raw, words)
        else:
            if not isinstance(record, dict):
                return line
            masked = _mask_fields(record, words)
            if masked == record:
                return line
            new = json.dumps(masked, ensure_ascii=False) + end
        return line if new == raw else new.encode("utf-8")

    return rewrite_lines(location, rewrite)


@dataclass
class Forgotten:
    """What the scrub of queued jobs knows of one forgotten memory while its words still exist."""

    text: str
    vector: list
    profile: str
    scope: str


def _distance(a: Sequence[float], b: Sequence[float]) -> float:
    import numpy as np

    va, vb = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    norm = float(np.linalg.norm(va) * np.linalg.norm(vb)) or 1.0
    return 1.0 - float(va @ vb) / norm


def says_forgotten(sentence: str, vector: Sequence[float], memory: Forgotten, related: float) -> bool:
    """Whether a transcript sentence says (part of) what `memory` said: by meaning (within FORGOTTEN_DISTANCE), by a
    name the memory gave, or by the write path's own text analysis (within the related distance, one of the two
    is a duplicate or an update of the other: a restatement, a part of it, its changed value)."""
    from .dedup import Thresholds, compare

    dist = _distance(vector, memory.vector)
    if dist <= FORGOTTEN_DISTANCE:
        return True
    if names_in(memory.text) & {w.lower() for w in _LATIN_WORD.findall(sentence)}:
        return True
    if dist > related:
        return False
    th = Thresholds(related)
    return any(compare(a, b, dist, th).action in ("duplicate", "update")
               for a, b in ((sentence, memory.text), (memory.text, sentence)))


def jobs_lock(location: Location):
    """Held while a job file is read and written back (a drainer's claim and its result; a forget's scrub), so
    neither writes back a copy read before the other's change."""
    from filelock import FileLock

    location.spool_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    return FileLock(str(location.spool_dir / ".jobs.lock"), mode=0o600)


def scrub_jobs(location: Location, gone: Sequence[Forgotten], embed, related: float) -> dict[str, int]:
    """Take what the forgotten memories said out of every job waiting in the spool or in dead/ (queued before the
    forget): each transcript sentence that says it (`says_forgotten`) goes, a message left empty goes; the words of
    the job's recorded errors are masked. Called under `jobs_lock`. Returns {"jobs": rewritten, "sentences":
    dropped}."""
    jobs: list[tuple[Path, dict]] = []
    for path in job_files(location):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("transcript"), list):
            jobs.append((path, data))
    if not jobs or not gone:
        return {"jobs": 0, "sentences": 0}
    pieces: list[str] = []
    for _, data in jobs:
        for msg in data["transcript"]:
            if isinstance(msg, list) and len(msg) == 2 and isinstance(msg[1], str):
                pieces += [s for s in sentences(msg[1]) if s.strip()]
    distinct = list(dict.fromkeys(pieces))
    vectors = dict(zip(distinct, embed(distinct))) if distinct else {}
    words: set[str] = set()
    for memory in gone:
        words |= words_of(memory.text)
    dropped = rewritten = 0
    for path, data in jobs:
        transcript = []
        for msg in data["transcript"]:
            if not (isinstance(msg, list) and len(msg) == 2 and isinstance(msg[1], str)):
                transcript.append(msg)
                continue
            kept = [s for s in sentences(msg[1]) if not s.strip() or not any(
                says_forgotten(s, vectors[s], m, related) for m in gone)]
            dropped += sum(1 for s in sentences(msg[1]) if s.strip()) - sum(1 for s in kept if s.strip())
            text = "".join(kept).strip()
            if text:
                transcript.append([msg[0], text])
        new = dict(data, transcript=transcript)
        new = _mask_fields(new, words)
        if new != data:
            write_private(path, json.dumps(new, ensure_ascii=False, indent=1))
            rewritten += 1
    return {"jobs": rewritten, "sentences": dropped}


def job_files(location: Location) -> list[Path]:
    """The job files waiting in the spool and in dead/."""
    out = []
    for folder in (location.spool_dir, location.dead_dir):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        out += [folder / n for n in names if n.endswith(".json") and not n.startswith(".")]
    return out


def oldest_job(location: Location) -> float | None:
    """When the oldest job still waiting (spool or dead/) was queued; None when none waits."""
    oldest = None
    for path in job_files(location):
        try:
            created = float(json.loads(path.read_text(encoding="utf-8")).get("created_at") or 0)
        except (OSError, ValueError, TypeError, AttributeError):
            created = 0.0  # unreadable: assume old
        oldest = created if oldest is None else min(oldest, created)
    return oldest


# -- the guard: vectors of memories forgotten while older jobs wait --------------------------------------------------
def guard_path(location: Location) -> Path:
    return location.automem_dir / GUARD_NAME


def _guard_lock(location: Location):
    from filelock import FileLock

    return FileLock(str(location.automem_dir / f".{GUARD_NAME}.lock"), mode=0o600)


def _read_guard(location: Location) -> list[dict]:
    try:
        data = json.loads(guard_path(location).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    entries = data.get("entries") if isinstance(data, dict) else None
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _write_guard(location: Location, entries: list[dict]) -> None:
    if entries:
        write_private(guard_path(location), json.dumps({"version": 1, "entries": entries}))
    else:
        try:
            os.unlink(guard_path(location))
        except FileNotFoundError:
            pass


def guard(location: Location, gone: Sequence[Forgotten], now: float) -> None:
    """Record the vectors of memories forgotten `now` while jobs queued before wait (a drainer may be working on one
    with the words in memory); nothing when none waits."""
    with _guard_lock(location):
        entries = _read_guard(location)
        if oldest_job(location) is not None:
            entries += [{"forgotten_at": now, "profile": m.profile, "scope": m.scope,
                         "vector": [round(float(x), 6) for x in m.vector]} for m in gone]
        _write_guard(location, _live(location, entries))


def _live(location: Location, entries: list[dict]) -> list[dict]:
    oldest = oldest_job(location)
    return [] if oldest is None else [e for e in entries if float(e.get("forgotten_at") or 0) > oldest]


def prune_guard(location: Location) -> None:
    """Drop the guard's entries no waiting job is older than (the file goes with the last). Cheap when there is none."""
    if not guard_path(location).exists():
        return
    with _guard_lock(location):
        entries = _read_guard(location)
        live = _live(location, entries)
        if live != entries:
            _write_guard(location, live)


def forgotten_since(location: Location, queued_at: float, scope: str, vector: Sequence[float]) -> bool:
    """Whether a candidate from words queued at `queued_at` says again, by meaning, a memory of the same person
    (`scope`; any of the owner's profiles: an instruction is shared) forgotten after that (the guard); False without
    a guard."""
    if not queued_at or not guard_path(location).exists():
        return False
    for e in _read_guard(location):
        if float(e.get("forgotten_at") or 0) > queued_at and e.get("scope", "") == scope \
                and isinstance(e.get("vector"), list):
            if _distance(vector, e["vector"]) <= FORGOTTEN_DISTANCE:
                return True
    return False
