"""automem's own log: one JSON object per line in `<root>/automem/logs/automem.log`.

Hermes never sees a traceback from automem; what went wrong is written here instead (and `automem doctor` and
`automem stats` read it back).

The log never holds the words of a memory or a conversation: fields that carry them (`text`, `*_text`, `content`,
`answer_preview`, `query`) are written as a hash (`sha256:<16 hex>`, the same digest as `automem.text.text_digest`);
a reason keeps only its kind and distance (`features`: "a different fact (distance 0.19)", never the words it
quotes), a note loses what it quotes (`unquoted`); every other string has its secrets redacted. It rotates at
LOG_MAX_BYTES (LOG_BACKUPS old files kept). `rewrite_lines` passes every line through a function: what `forget`
uses (`automem.core.erase.scrub_log`) to take out a line holding a forgotten memory's text (older than these rules)
and mask its words in the others.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from .paths import Location, ensure_private_dir
from .text import normalise, redact_secrets, text_digest

LOG_MAX_BYTES = 5 * 1024 * 1024
LOG_BACKUPS = 3  # automem.log.1 .. automem.log.3
TEXT_FIELDS = frozenset({"text", "content", "answer_preview", "query", "transcript", "excerpt"})


REASON_FIELDS = frozenset({"reason"})
NOTE_FIELDS = frozenset({"parse_notes", "note"})  # sentences of automem's own, quoting texts between quotes
_DISTANCE = re.compile(r"\(distance (\d+(?:\.\d+)?)\)\s*\)*\s*$")
# Where a reason's own words end: the detail in brackets, after a colon, or in quotes is taken from the texts.
_QUOTE = r"(?<![^\W\d_])['\"\u2018\u201c\u00ab\u2039`]"  # an opening quote: not an apostrophe inside a word
_DETAIL = re.compile(r"\(|: |" + _QUOTE)
_QUOTED = re.compile(_QUOTE + r"(?:[^\\'\"]|\\.)*.?")


def unquoted(note: str) -> str:
    """`note` with every quoted stretch (a text it cites, as repr() writes it) replaced by '…'."""
    return _QUOTED.sub("'…'", note)


def features(reason: str) -> str:
    """A decision's reason as the log keeps it: what kind of decision it was and the distance, without the words
    it quotes from the texts ("announced as a change of the same slot (name biscuit -> muffin) (distance 0.24)"
    -> "announced as a change of the same slot (distance 0.24)"; "judge: new (...)" -> "judge: new ...")."""
    judge = reason.startswith("judge: ")
    body = reason[len("judge: "):] if judge else reason
    head = _DETAIL.split(body, 1)[0].strip().rstrip(",;")
    if judge:
        head = "judge: " + head
    found = _DISTANCE.search(reason)
    return head + (f" (distance {found.group(1)})" if found else "")


def hashed(text: str) -> str:
    return f"sha256:{text_digest(text)}"


def _is_text_field(key: str) -> bool:
    return key in TEXT_FIELDS or key.endswith("_text")


def safe_fields(value: Any, key: str = "") -> Any:
    """`value` fit for the log: memory and conversation text hashed, secrets redacted, everything else as is."""
    if isinstance(value, dict):
        return {k: safe_fields(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [safe_fields(v, key) for v in value]
    if isinstance(value, str):
        if _is_text_field(key):
            return hashed(value) if value else value
        if key in REASON_FIELDS:
            return features(value)
        if key in NOTE_FIELDS:
            return redact_secrets(unquoted(value))
        return redact_secrets(value)
    return value


def log_files(location: Location) -> list[Path]:
    """The log and its rotated copies, oldest first."""
    base = location.log_file
    return [base.with_name(f"{base.name}.{n}") for n in range(LOG_BACKUPS, 0, -1)] + [base]


def log_event(location: Location, event: str, **fields) -> None:
    """Append one event. Never raises: logging must not be the thing that breaks a hook."""
    record = {"ts": round(time.time(), 3), "pid": os.getpid(), "event": event, "profile": location.profile}
    try:
        record.update(safe_fields(fields))
        ensure_private_dir(location.logs_dir)
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        # O_APPEND writes of one small line do not interleave between processes.
        fd = os.open(location.log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size >= LOG_MAX_BYTES:
            _rotate(location)
    except Exception:  # noqa: BLE001 - a full disk or a strange value: the hook goes on without its log line
        pass


def _lock(location: Location):
    from filelock import FileLock

    return FileLock(str(location.logs_dir / ".log.lock"), mode=0o600)


def _rotate(location: Location) -> None:
    """automem.log -> .1 -> .2 ...; one process rotates, the others skip (their next line starts the new file)."""
    from filelock import Timeout

    lock = _lock(location)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return
    try:
        base = location.log_file
        try:
            if base.stat().st_size < LOG_MAX_BYTES:
                return  # another process rotated meanwhile
        except FileNotFoundError:
            return
        files = log_files(location)  # oldest first: .3 .2 .1 base
        for older, newer in zip(files, files[1:]):
            try:
                os.replace(newer, older)
            except FileNotFoundError:
                pass
    finally:
        lock.release()


def read_events(location: Location, event: str | None = None) -> list[dict]:
    """All logged events (of one kind), oldest first, rotated files included; unreadable lines are skipped."""
    out: list[dict] = []
    for path in log_files(location):
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(rec, dict) and (event is None or rec.get("event") == event):
                        out.append(rec)
        except OSError:
            continue
    return out


def last_events(location: Location, event: str, n: int = 1, tail_bytes: int = 256 * 1024) -> list[dict]:
    """The newest `n` events of one kind, newest first, read from the end of the log files (newest file first, the
    last `tail_bytes` of each): what a status view needs without parsing megabytes of log."""
    out: list[dict] = []
    for path in reversed(log_files(location)):
        try:
            with open(path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - tail_bytes))
                lines = fh.read().splitlines()
        except OSError:
            continue
        if size > tail_bytes and lines:
            lines = lines[1:]  # the first line read is likely cut
        for line in reversed(lines):
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and rec.get("event") == event:
                out.append(rec)
                if len(out) >= n:
                    return out
    return out


def text_forms(texts: Iterable[str]) -> list[str]:
    """The ways a text can appear in automem's files: as written and normalised, each as is and escaped inside
    JSON (both escapings)."""
    forms: list[str] = []
    for text in texts:
        if not text:
            continue
        for variant in (text, normalise(text)):
            for form in (variant, json.dumps(variant, ensure_ascii=False)[1:-1], json.dumps(variant)[1:-1]):
                if form and form not in forms:
                    forms.append(form)
    return forms


def mentions(value: Any, norms: Iterable[str]) -> bool:
    """Whether a string (or any string inside a JSON value) holds one of the normalised texts once normalised:
    a transcript keeps the user's full-width commas and line breaks, a memory is stored normalised."""
    norms = [n for n in norms if n]
    if isinstance(value, str):
        folded = normalise(value)
        return any(n in folded for n in norms)
    if isinstance(value, dict):
        return any(mentions(v, norms) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(mentions(v, norms) for v in value)
    return False


def purge_lines(location: Location, texts: Iterable[str]) -> int:
    """Remove every line holding one of `texts` (in any form, see `mentions`) from the log folder's files (the
    log, its rotations, the drainer's stderr). Returns the number of lines removed."""
    norms = [normalise(t) for t in texts if t]
    if not norms:
        return 0
    return rewrite_lines(location, lambda line: None if line_mentions(line, norms) else line)[0]


def rewrite_lines(location: Location, rewrite: Callable[[bytes], bytes | None]) -> tuple[int, int]:
    """Pass every line of the log folder's files through `rewrite` (None: the line goes; other bytes replace it).
    Returns (lines removed, lines changed). Lines appended while a file is rewritten are carried over (rewritten
    too)."""
    if not location.logs_dir.is_dir():
        return 0, 0
    removed = changed = 0
    with _lock(location):
        for path in sorted(location.logs_dir.iterdir()):
            if path.is_file() and not path.is_symlink() and not path.name.startswith("."):
                gone, edited = _rewrite_file(path, rewrite)
                removed += gone
                changed += edited
    return removed, changed


def line_mentions(line: bytes, norms: list[str]) -> bool:
    text = line.decode("utf-8", "replace")
    try:
        return mentions(json.loads(text), norms)
    except ValueError:
        return mentions(text, norms)


def _rewrite_file(path: Path, rewrite: Callable[[bytes], bytes | None]) -> tuple[int, int]:
    try:
        fh = open(path, "rb")
    except OSError:
        return 0, 0
    with fh:
        data = fh.read()
        kept, removed, changed = _filter(data, rewrite)
        if not removed and not changed:
            return 0, 0
        tmp = path.with_name(f".{path.name}.{os.getpid()}.purge")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, kept)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        # Writers that opened the old file before the replace: copy what they appended.
        for _ in range(3):
            time.sleep(0.01)
            late = fh.read()
            if not late:
                break
            more, gone, edited = _filter(late, rewrite)
            removed += gone
            changed += edited
            with open(path, "ab") as out:
                out.write(more)
    return removed, changed


def _filter(data: bytes, rewrite: Callable[[bytes], bytes | None]) -> tuple[bytes, int, int]:
    kept: list[bytes] = []
    removed = changed = 0
    for line in data.splitlines(keepends=True):
        new = rewrite(line)
        if new is None:
            removed += 1
            continue
        if new != line:
            changed += 1
        kept.append(new)
    return b"".join(kept), removed, changed
