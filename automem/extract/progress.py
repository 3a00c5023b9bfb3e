"""How far a session has been extracted: every message once, in windows, whatever delivers it.

Hermes hands a session's messages to automem many times: after every turn (`sync_turn`), before context
compression, at session end, again after `/new` (the old session's messages at exit), after a gateway restart (the
whole history, reloaded). A session's progress file remembers which messages already went into a job, by a
fingerprint of each message (role and text, hashed: no text is kept), counted so that a message said twice is
extracted twice. What a delivery adds is what the progress has not seen; windows of it become jobs.

`<root>/automem/sessions/<digest of profile and session id>.json`, 0600, written atomically under a file lock;
it also keeps the session's identity (whose memories its jobs write), so a later delivery without the gateway's
kwargs (the general-hook fallback reading state.db) still writes into the right scope.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..paths import Location, ensure_private_dir
from .transcript import ROLES, content_text

VERSION = 1
KEEP_SECONDS = 90 * 24 * 3600  # Hermes itself forgets a gateway session after 90 days without a message


def fingerprint(message: Any) -> str | None:
    """A short digest of a user/assistant message with text; None for anything extraction never reads."""
    if not isinstance(message, dict) or message.get("role") not in ROLES:
        return None
    text = content_text(message.get("content")).strip()
    if not text:
        return None
    return hashlib.sha256(f"{message['role']}\x1f{text}".encode("utf-8")).hexdigest()[:20]


def unseen(messages: Sequence[Any], seen: Counter) -> list[dict]:
    """The messages `seen` does not account for, in order: the n-th copy of a fingerprint is new once `seen`
    holds fewer than n."""
    counts: Counter = Counter()
    out = []
    for msg in messages or []:
        fp = fingerprint(msg)
        if fp is None:
            continue
        counts[fp] += 1
        if counts[fp] > seen.get(fp, 0):
            out.append(msg)
    return out


def user_turns(messages: Sequence[Any]) -> int:
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "user")


def text_chars(messages: Sequence[Any]) -> int:
    return sum(len(content_text(m.get("content"))) for m in messages if isinstance(m, dict))


def window_due(new: Sequence[Any], every_turns: int, every_chars: int) -> bool:
    """Whether the unextracted part of a session is worth a job now (the rest waits for more turns, the
    session's end, compression, or quiet)."""
    return bool(new) and (user_turns(new) >= every_turns or text_chars(new) >= every_chars)


@dataclass
class Progress:
    profile: str
    session_id: str
    seen: Counter = field(default_factory=Counter)
    identity: dict = field(default_factory=dict)
    jobs: list = field(default_factory=list)  # the latest job ids, for the log and `automem stats`
    updated_at: float = 0.0

    def to_json(self) -> dict:
        return {"version": VERSION, "profile": self.profile, "session_id": self.session_id, "seen": dict(self.seen),
                "identity": self.identity, "jobs": self.jobs[-20:], "updated_at": self.updated_at}


def progress_path(location: Location, session_id: str) -> Path:
    digest = hashlib.sha256(f"{location.profile}\x1f{session_id}".encode("utf-8")).hexdigest()[:24]
    return location.automem_dir / "sessions" / f"{digest}.json"


def load(location: Location, session_id: str) -> Progress:
    """The session's progress; a missing or unreadable file is a session not extracted yet (the spool's job ids
    still keep a re-delivered window from being extracted twice)."""
    blank = Progress(location.profile, session_id)
    try:
        with open(progress_path(location, session_id), encoding="utf-8") as fh:
            data = json.load(fh)
        seen = Counter({str(k): int(v) for k, v in (data.get("seen") or {}).items()})
        identity = data.get("identity") if isinstance(data.get("identity"), dict) else {}
        return Progress(location.profile, session_id, seen, identity, list(data.get("jobs") or []),
                        float(data.get("updated_at") or 0))
    except (OSError, ValueError, TypeError, AttributeError):
        return blank


def save(location: Location, progress: Progress) -> None:
    path = progress_path(location, progress.session_id)
    ensure_private_dir(path.parent)
    progress.updated_at = time.time()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, json.dumps(progress.to_json(), ensure_ascii=False).encode("utf-8"))
    finally:
        os.close(fd)
    os.replace(tmp, path)


@contextmanager
def locked(location: Location, session_id: str, timeout: float = 30.0) -> Iterator[Progress]:
    """The session's progress, read and written back under its lock (a provider thread, an idle flush and the
    fallback hook may deliver the same session at once)."""
    from filelock import FileLock

    path = progress_path(location, session_id)
    ensure_private_dir(path.parent)
    with FileLock(str(path) + ".lock", timeout=timeout, mode=0o600):
        progress = load(location, session_id)
        yield progress
        save(location, progress)


def mark(progress: Progress, messages: Sequence[Any], job_ids: Sequence[str] = ()) -> None:
    """Record `messages` as extracted (they went into jobs that are now in the spool)."""
    for msg in messages:
        fp = fingerprint(msg)
        if fp is not None:
            progress.seen[fp] += 1
    progress.jobs.extend(job_ids)


def carry_over(location: Location, old_session_id: str, new_session_id: str) -> None:
    """Context compression continues a session under a new id with messages already extracted: the new id
    starts with what the old one had seen."""
    if not old_session_id or old_session_id == new_session_id:
        return
    old = load(location, old_session_id)
    if not old.seen and not old.identity:
        return
    with locked(location, new_session_id) as new:
        new.seen.update(old.seen)
        new.identity = new.identity or old.identity


def prune(location: Location, now: float | None = None, keep_seconds: float = KEEP_SECONDS) -> int:
    """Delete progress files not written for `keep_seconds` (and their locks). Returns how many went."""
    folder = location.automem_dir / "sessions"
    now = time.time() if now is None else now
    gone = 0
    try:
        entries = list(folder.iterdir())
    except OSError:
        return 0
    for path in entries:
        try:
            if now - path.stat().st_mtime > keep_seconds:
                path.unlink()
                gone += path.suffix == ".json"
        except OSError:
            continue
    return gone
