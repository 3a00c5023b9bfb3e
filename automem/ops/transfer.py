"""`automem export` and `automem import`: every memory as JSON lines, and back.

An export holds every memory of every profile (ids, text, metadata, status, evidence and history: automem.core.history),
its text and excerpts redacted on the way out, and
with `forgotten` the tombstones of forgotten memories (ids and hashes, never words). An import stores the lines
exactly as exported (ids and metadata kept, text re-embedded), each text checked as `add` checks it; by default one
invalid line imports nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..errors import UsageError

ID_PATTERN = r"^[A-Za-z0-9_.:\-]{1,128}$"
# Bounds of one export line, beyond those of `add` (text) and of the metadata automem owns
# (automem.core.memory.value_problem). A real line is a few hundred bytes.
MAX_LINE_BYTES = 64 * 1024
MAX_EXTRA_KEYS = 32  # metadata keys automem does not own (related_to, judged_new, another tool's), per line
MAX_EXTRA_CHARS = 4096
EXTRA_KEY = r"^[A-Za-z_][A-Za-z0-9_.:\-]{0,63}$"
MAX_EXTRA_NUMBER = 2 ** 53  # beyond, a float no longer holds every whole number (and Chroma's ints end at 2^63)
TEXT_SHA = r"^[0-9a-f]{16,64}$"


def tombstone_json(t: dict) -> dict:
    """A forgotten memory as `list --all` and `export --forgotten` show it: no text."""
    return {"id": t["id"], "text": None, "status": "forgotten", "tombstone": True,
            **{k: t[k] for k in ("wing", "profile", "scope", "room", "task_id", "created_at", "forgotten_at",
                                 "text_sha") if k in t}}


def export_lines(store: Any, forgotten: bool = False) -> list[str]:
    """The export of `store`, one JSON line per memory (oldest first), then with `forgotten` its tombstones."""
    from ..core.history import export_json

    # Redacted on the way out too (text and excerpts): a memory stored before a pattern existed must not leave in a
    # file. Its evidence and history ride on the line (automem.core.history).
    lines = [json.dumps(export_json(m), ensure_ascii=False)
             for m in sorted(store.iter_records(), key=lambda m: (m.created_at, m.id)) if m.status != "forgotten"]
    if forgotten:  # ids and hashes only: on import they keep automatic sources from bringing them back
        lines += [json.dumps(tombstone_json(t), ensure_ascii=False) for t in store.tombstones()]
    return lines


def check_export_target(path: str) -> None:
    """UsageError when `path` cannot be an export file (before anything is read)."""
    import os

    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write {path}: no folder {folder} (create the folder first)")


def export_to_file(store: Any, path: str, forgotten: bool = False) -> int:
    """Write the export of `store` to `path`, owner-only (it holds every memory of every profile). Returns the
    number of lines; UsageError when the file cannot be written (checked before the store is read)."""
    check_export_target(path)
    lines = export_lines(store, forgotten)
    with open_export_file(path) as out:
        out.write("".join(line + "\n" for line in lines))
    return len(lines)


def open_export_file(path: str):
    """`path` opened for writing, owner-only, never through a symbolic link and never a file that has another
    name (a hard link): either would let the export land in, and chmod, a file the user did not name. UsageError
    (one line) otherwise."""
    import errno
    import os
    import stat

    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(f"cannot write {path}: it is a symbolic link, and an export never writes through one; "
                             f"give the file's own name or a new one") from None
        raise UsageError(f"cannot write {path}: {exc.strerror}"
                         + (" (create the folder first)" if isinstance(exc, FileNotFoundError) else "")) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"cannot write {path}: not a regular file")
        if st.st_nlink > 1:
            raise UsageError(f"cannot write {path}: the file has another name too (a hard link); give a new file name")
        os.fchmod(fd, 0o600)  # 0600 whatever the umask, an existing file too: an export holds every memory
        os.ftruncate(fd, 0)
        return os.fdopen(fd, "w", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def _field(where: str, key: str, problem: str) -> UsageError:
    return UsageError(f"{where}: field {json.dumps(key[:64])} {problem}")


def check_metadata(meta: dict, where: str) -> None:
    """UsageError naming the first field of an export line's metadata that is out of bounds: a number automem owns
    outside its range (a time past year 9999, NaN, a negative count), an oversized string, too many unknown keys,
    an unknown key's odd name or value."""
    from ..core.memory import METADATA_KEYS, value_problem

    extra = [k for k in meta if k not in METADATA_KEYS and k not in ("forgotten_at", "text_sha")]
    if len(extra) > MAX_EXTRA_KEYS:
        raise UsageError(f"{where}: metadata holds {len(extra)} keys automem does not know (at most {MAX_EXTRA_KEYS})")
    for key, value in meta.items():
        if key in extra:
            if not re.match(EXTRA_KEY, key):
                raise _field(where, key, "is not a metadata key name (letters, digits, _ . : -; at most 64)")
            if isinstance(value, str) and len(value) > MAX_EXTRA_CHARS:
                raise _field(where, key, f"holds {len(value)} characters (at most {MAX_EXTRA_CHARS})")
            if isinstance(value, float) and (value != value or abs(value) > MAX_EXTRA_NUMBER):
                raise _field(where, key, "must be a finite number of at most 2^53")
            if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_EXTRA_NUMBER:
                raise _field(where, key, "must be a number of at most 2^53")
            continue
        problem = value_problem(key, value)
        if problem:
            raise _field(where, key, problem)


def import_record(obj: dict, where: str, profile: str):
    """(Memory or None, tombstone or None) for one export line, checked as `add` checks text and within the
    bounds of `check_metadata`; UsageError if not."""
    from ..core.forgetting import tombstone_key
    from ..core.history import check_imported
    from ..core.memory import STATUSES, WINGS, Memory
    from ..paths import profile_name_problem
    from ..text import validate

    mid, text = obj.get("id"), obj.get("text")
    if not isinstance(mid, str) or not re.match(ID_PATTERN, mid):
        raise UsageError(f"{where}: needs a string field \"id\" (letters, digits, _ . : -; at most 128)")
    meta = {k: v for k, v in obj.items() if k not in ("id", "text", "tombstone")}
    if any(isinstance(v, (dict, list)) or v is None for v in meta.values()):
        raise UsageError(f"{where}: metadata values must be strings, numbers or booleans")
    if meta.get("wing") not in WINGS or meta.get("status", "active") not in STATUSES:
        raise UsageError(f"{where}: wing must be one of {', '.join(WINGS)} and status one of {', '.join(STATUSES)}")
    check_metadata(meta, where)
    owner = meta.get("profile", profile)
    problem = profile_name_problem(owner)
    if problem:
        raise UsageError(f"{where}: {problem}")
    if obj.get("tombstone") or meta.get("status") == "forgotten":
        # A forgotten memory stays forgotten, and its words are not stored again (an older export may hold them).
        scope = meta.get("scope", "")
        sha = meta.get("text_sha") or (tombstone_key(owner, text, scope) if isinstance(text, str) else "")
        if not isinstance(sha, str) or not sha:
            raise UsageError(f"{where}: a forgotten memory needs \"text_sha\" (or its text)")
        if not re.match(TEXT_SHA, sha):
            raise _field(where, "text_sha", "must be the hex digest `export --forgotten` wrote")
        keep = ("wing", "scope", "room", "task_id", "created_at", "forgotten_at")
        return None, {"id": mid, "text_sha": sha, "profile": owner, "status": "forgotten",
                      **{k: int(meta[k]) if k in ("created_at", "forgotten_at") else meta[k]
                         for k in keep if k in meta}}
    if not isinstance(text, str):
        raise UsageError(f"{where}: needs a string field \"text\"")
    norm, reason = validate(text)
    if norm is None:
        raise UsageError(f"{where}: {reason}")
    meta.setdefault("room", "import")
    meta["profile"] = owner
    mem = Memory.from_record(mid, norm, meta, stored=False)  # an export line holds text, not the stored escapes
    check_imported(mem, meta, where)  # its evidence and history, cleaned as written ones are
    return mem, None


@dataclass
class ImportPlan:
    """What an import file holds, checked line by line before the store is opened."""

    memories: list = field(default_factory=list)
    tombstones: list = field(default_factory=list)
    skipped: list = field(default_factory=list)  # one line per invalid line left out (with skip_invalid)


@dataclass
class ImportReport:
    imported: int = 0
    forgotten: int = 0  # tombstones stored (ids only)
    skipped: list = field(default_factory=list)
    skipped_forgotten: int = 0  # lines of memories forgotten here, left out (restore_forgotten imports them)

    def to_json(self) -> dict:
        return {"imported": self.imported, "forgotten": self.forgotten, "skipped": len(self.skipped),
                "skipped_forgotten": self.skipped_forgotten}


def plan_import(objects: Iterable[tuple[str, dict]], profile: str, skip_invalid: bool = False) -> ImportPlan:
    """Check (where, object) pairs of an export. An invalid line raises UsageError (nothing is to be imported),
    unless `skip_invalid`: then it is listed in `skipped` and the others go in."""
    plan, seen = ImportPlan(), set()
    for where, obj in objects:
        try:
            mem, tomb = import_record(obj, where, profile)
            if obj.get("id") in seen:
                raise UsageError(f"{where}: id {obj['id']} appears twice")
        except UsageError as exc:
            if not skip_invalid:
                raise UsageError(f"{exc}; nothing was imported (--skip-invalid imports the other lines)") from None
            plan.skipped.append(str(exc))
            continue
        seen.add(obj["id"])
        (plan.memories if mem is not None else plan.tombstones).append(mem if mem is not None else tomb)
    return plan


def run_import(store: Any, plan: ImportPlan, restore_forgotten: bool = False) -> ImportReport:
    """Store what `plan_import` accepted. A memory forgotten in this store (its tombstone: the same id, or the
    same words of the same profile and person) stays forgotten, unless `restore_forgotten`: an export made before
    a forget must not bring it back without a word."""
    report = ImportReport(skipped=list(plan.skipped))
    report.forgotten = store.add_tombstones(plan.tombstones)
    memories = list(plan.memories)
    if not restore_forgotten and memories:
        forgotten: set[str] = set()
        for start in range(0, len(memories), 500):
            forgotten |= store.forgotten_among([(m.id, m.profile, m.scope, m.text)
                                                for m in memories[start:start + 500]])
        report.skipped_forgotten = sum(1 for m in memories if m.id in forgotten)
        memories = [m for m in memories if m.id not in forgotten]
    report.imported = store.import_memories(memories)
    return report
