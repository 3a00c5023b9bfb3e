"""automem's own log: one JSON object per line in `<root>/automem/logs/automem.log`.

Hermes never sees a traceback from automem; what went wrong is written here instead (and `automem doctor` and
`automem stats` read it back).

The log never holds the words of a memory or a conversation: fields that carry them (`text`, `*_text`, `content`,
`answer_preview`, `query`) are written as a hash (`sha256:<16 hex>`, the same digest as `automem.text.text_digest`),
and every other string has its secrets redacted. It rotates at LOG_MAX_BYTES (LOG_BACKUPS old files kept), and
`purge_lines` takes every line that holds given words out (what `forget` calls, for lines older than these rules).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Iterable

from .paths import Location, ensure_private_dir
from .text import normalise, redact_secrets, text_digest

LOG_MAX_BYTES = 5 * 1024 * 1024
LOG_BACKUPS = 3  # automem.log.1 .. automem.log.3
TEXT_FIELDS = frozenset({"text", "content", "answer_preview", "query", "transcript"})


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
    log, its rotations, the drainer's stderr). Returns the number of lines removed. Lines appended while a file
    is rewritten are carried over."""
    norms = [normalise(t) for t in texts if t]
    if not norms or not location.logs_dir.is_dir():
        return 0
    removed = 0
    with _lock(location):
        for path in sorted(location.logs_dir.iterdir()):
            if path.is_file() and not path.name.startswith("."):
                removed += _purge_file(path, norms)
    return removed


def _line_mentions(line: bytes, norms: list[str]) -> bool:
    text = line.decode("utf-8", "replace")
    try:
        return mentions(json.loads(text), norms)
    except ValueError:
        return mentions(text, norms)


def _purge_file(path: Path, norms: list[str]) -> int:
    try:
        fh = open(path, "rb")
    except OSError:
        return 0
    with fh:
        data = fh.read()
        kept, removed = _filter(data, norms)
        if not removed:
            return 0
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
            more, gone = _filter(late, norms)
            removed += gone
            with open(path, "ab") as out:
                out.write(more)
    return removed


def _filter(data: bytes, norms: list[str]) -> tuple[bytes, int]:
    lines = data.splitlines(keepends=True)
    kept = [line for line in lines if not _line_mentions(line, norms)]
    return b"".join(kept), len(lines) - len(kept)
