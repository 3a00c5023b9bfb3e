"""A memory: its text, its metadata, and its deterministic id."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

WINGS = ("user", "episodic", "instruction")
CATEGORY_OF_WING = {"user": "persona", "episodic": "episodic", "instruction": "instruction"}
WING_OF_CATEGORY = {v: k for k, v in CATEGORY_OF_WING.items()}
ROOMS = ("auto-extract", "kanban", "tool", "builtin-mirror", "import", "cli")
STATUSES = ("active", "superseded", "forgotten", "held")
# `held`: an injection-shaped candidate from a conversation (extraction, the built-in memory's mirror, the agent's
# tool, a kanban record), kept for the owner's review instead of dropped (automem.core.review). No reader shows it
# (every reader reads status "active" only: automem.core.visibility, the recall index), and it never counts for dedup.
HELD = "held"
# A held memory's metadata beside the usual keys: why it was held (the classifier's features, never words) and
# whether it was the user's own words (automem.core.write_path.Candidate.in_user_words: "yes" / "no" / "").
HELD_FEATURES = "held_features"
HELD_IN_USER_WORDS = "held_in_user_words"
HELD_KEYS = (HELD_FEATURES, HELD_IN_USER_WORDS)
# A "new" memory close to another that nobody (no judge) compared it with carries that one's id here, so the next
# judge (automem.core.waiting) or `automem compact --judge` can put the pair to it later.
RELATED_TO = "related_to"
# A memory stored without a judge whose only stored neighbours were far off (beyond the related distance, no slot in
# sight; automem.core.dedup: `Verdict.far`) names the nearest here: the next judge is asked whether it is a new value
# of that one (only "update" counts). Not a link: an update's cluster and recall never follow it.
MAYBE_UPDATES = "maybe_updates"
# A memory kept apart from an older one that says the same words moved names it here, beside `related_to`: recall
# shows only the newer of the two until a judge decides. Both here, not in candidate.py, because the recall index
# and recall read them on Hermes' start path, which must not import the write path's modules.
SAME_WORDS_AS = "same_words_as"

# Every metadata key a stored memory carries. Chroma cannot store None, so absent values are "" (or 0).
METADATA_KEYS = (
    "wing", "category", "room", "profile", "scope", "added_by", "session_id", "task_id",
    "created_at", "updated_at", "status", "superseded_by", "job", "pinned", "restated", "audience",
    "source_excerpt", "source_speaker", "source_role", "source_turn", "origin", "extractor",
    "restated_first_at", "restated_first_session", "restated_first_excerpt",
    "restated_last_at", "restated_last_session", "restated_last_excerpt",
    "superseded_at", "superseded_reason", "superseded_how", "pinned_at", "unpinned_at",
    "changed_at", "replaces",
)
INT_KEYS = ("created_at", "updated_at", "pinned", "restated", "source_turn", "restated_first_at", "restated_last_at",
            "superseded_at", "pinned_at", "unpinned_at", "changed_at")
# Evidence (automem.core.provenance): the words it was learned from and how it entered.
EVIDENCE_KEYS = ("source_excerpt", "source_speaker", "source_role", "source_turn", "origin", "extractor")
# History (automem.core.history), kept on the record itself, written in the call that makes the change: the first and
# the latest restatement (when, which session, its excerpt; `restated` counts them all), how and why it was
# superseded, when it was last pinned and unpinned.
HISTORY_KEYS = ("restated_first_at", "restated_first_session", "restated_first_excerpt", "restated_last_at",
                "restated_last_session", "restated_last_excerpt", "superseded_at", "superseded_reason",
                "superseded_how", "pinned_at", "unpinned_at")
# Both are written only when not empty (Chroma keeps a row per key); a record written before them reads "" / 0.
OPTIONAL_KEYS = EVIDENCE_KEYS + HISTORY_KEYS
# Free text in these keys is stored escaped to ASCII (as JSON escapes it: "\u6211"). Chroma 1.5's embedded store
# spends CPU superlinear in the non-ASCII characters of a metadata string (measured by 150 adds and updates on a
# 10,000-memory store: an 80-character Chinese excerpt +4 ms a write, 300 characters +22 ms; escaped +0.8 ms).
# `metadata()` is the stored form, `to_json()` and the fields the text.
ESCAPED_KEYS = ("source_excerpt", "restated_first_excerpt", "restated_last_excerpt", "superseded_reason")
_KNOWN, _INTS, _ESCAPED = frozenset(METADATA_KEYS), frozenset(INT_KEYS), frozenset(ESCAPED_KEYS)  # (every read)
# `pinned` (0/1): `automem pin` put it in the system-prompt block ahead of everything else (within the budget).
# `restated` (count): how often the write path found it said again (a duplicate); one of the block's ranking signals
# (automem.core.recall.block_score). Records written before these keys existed read as 0.
# `audience`: who besides the owner's own profiles reads an owner instruction. "" (or absent, in stores written
# before the key existed) = the owner's profiles only; AUDIENCE_EVERYONE = the owner confirmed it for everyone (gateway
# users too), through `automem.core.sharing.share`. Only the owner's instructions carry anything but "".
AUDIENCE_EVERYONE = "everyone"
# `changed_at` (milliseconds, the writer's wall clock): stamped by the store on every write of the record, whatever
# changed (text, status, pin, a restatement). A machine's recall index follows a Chroma server by asking for what
# changed since its last sync (automem.core.sync). Records written before the key existed carry none (read as 0).
# `replaces`: the id of the memory this one superseded when it was written (an update), written only when set. Two
# active memories replacing the same one are a race between machines (automem.core.convergence).

# What a stored number may be. A time is seconds since 1970 up to the last second of year 9999 (what `datetime` can
# show); a count at most a billion. A record holding more (an edited export, an older automem) is read clamped
# (`clamp`), so one impossible number cannot stop recall (SQLite's integers end at 2^63), and `import` refuses it.
MAX_TIMESTAMP = 253_402_300_799
MAX_TIMESTAMP_MS = MAX_TIMESTAMP * 1000 + 999  # `changed_at` is in milliseconds
MAX_COUNT = 10 ** 9
COUNT_KEYS = ("restated", "source_turn")
STRING_KEYS = ("wing", "category", "room", "profile", "scope", "added_by", "session_id", "task_id", "status",
               "superseded_by", "job", "audience", "source_speaker", "source_role", "origin", "extractor",
               "restated_first_session", "restated_last_session", "superseded_how", "replaces")
MAX_STRING_CHARS = 1024  # a metadata string automem owns (ids, scopes, rooms)
# The free text of ESCAPED_KEYS (excerpts of what was said, why a memory was superseded) is bounded as text is: at
# most this many characters (as text; the stored escapes are longer), secrets redacted (automem.core.provenance).
MAX_EXCERPT_CHARS = 300


def escape(text: str) -> str:
    """`text` as ESCAPED_KEYS store it: JSON's escapes, ASCII only."""
    return json.dumps(text)[1:-1]


def unescape(stored: str) -> str:
    try:
        return json.loads(f'"{stored}"')
    except ValueError:  # not written escaped (a store edited by hand): as it is
        return stored


def upper_bound(key: str) -> int:
    """The largest value the number `key` (one of INT_KEYS, or a tombstone's forgotten_at) may hold."""
    return (1 if key == "pinned" else MAX_COUNT if key in COUNT_KEYS else MAX_TIMESTAMP_MS if key == "changed_at"
            else MAX_TIMESTAMP)


def value_problem(key: str, value: Any) -> str | None:
    """Why `value` cannot be the metadata field `key` automem owns (None: it can). Plain, so `import` refuses
    what `automem doctor` reports."""
    if key in INT_KEYS or key == "forgotten_at":
        if key == "pinned" and isinstance(value, bool):
            return None
        hi = upper_bound(key)
        what = ("a time in whole seconds" if hi == MAX_TIMESTAMP else "a time in milliseconds" if key == "changed_at"
                else "a count" if key in COUNT_KEYS else "0 or 1")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"must be {what} from 0 to {hi}, not {type(value).__name__}"
        if value != value or not 0 <= value <= hi:  # NaN compares unequal to itself
            return f"must be {what} from 0 to {hi}"
        return None
    if key in STRING_KEYS or key in ESCAPED_KEYS:
        if not isinstance(value, str):
            return f"must be a string, not {type(value).__name__}"
        most = MAX_EXCERPT_CHARS if key in ESCAPED_KEYS else MAX_STRING_CHARS
        if len(value) > most:
            return f"holds {len(value)} characters (at most {most})"
    return None


def clamp(key: str, value: Any) -> int:
    """The number `key` holds, read as an int within its bounds (0 for what is not a number)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return 0
    if not isinstance(value, (int, float)) or value != value:
        return 0
    hi = upper_bound(key)
    if key == "pinned":
        return 1 if value else 0
    return int(min(max(value, 0), hi))


# Whose memory it is, beside the profile. "" is the owner (CLI sessions, kanban workers, `automem add`, the
# gateway ids configured as the owner): profile-wide memory, and the only source of shared instructions. Anyone
# else gets a scope of their own: "user:<platform>:<id>" for a person, "chat:<platform>:<chat>[:<thread>]" for what
# concerns a group chat or a thread, "session:<platform>:<key>" when the gateway said nothing about who it is.
OWNER = ""


_stamp_lock = threading.Lock()
_last_stamp = 0


def change_stamp() -> int:
    """The `changed_at` of a write: this machine's wall clock in milliseconds, strictly increasing within the
    process (two writes in one millisecond still differ). Machines' clocks differ: a server sync reads back a margin
    (`server_sync_margin_s`) for that."""
    global _last_stamp
    with _stamp_lock:
        _last_stamp = max(_last_stamp + 1, int(time.time() * 1000))
        return _last_stamp


def memory_id(profile: str, wing: str, normalised_text: str, scope: str = OWNER) -> str:
    """Deterministic id from (profile, wing, normalised text, scope): re-running a job cannot create copies, and
    two people saying the same sentence have two memories. The owner's ids are what they always were."""
    key = f"{profile}\x1f{wing}\x1f{normalised_text}" + (f"\x1f{scope}" if scope else "")
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
    return f"m_{digest[:24]}"


def held_id(stored_id: str) -> str:
    """The id a held memory is kept under: its own namespace ("h_"), so a held memory never takes the place of a
    stored one (an older superseded copy of the same words) and the memory it would become keeps its usual id."""
    return "h_" + (stored_id[2:] if stored_id.startswith("m_") else stored_id)


@dataclass
class Memory:
    id: str
    text: str
    wing: str
    profile: str
    room: str = "cli"
    scope: str = OWNER
    added_by: str = ""
    session_id: str = ""
    task_id: str = ""
    created_at: int = 0
    updated_at: int = 0
    status: str = "active"
    superseded_by: str = ""
    job: str = ""
    pinned: int = 0
    restated: int = 0
    audience: str = ""
    source_excerpt: str = ""
    source_speaker: str = ""
    source_role: str = ""
    source_turn: int = 0
    origin: str = ""
    extractor: str = ""
    restated_first_at: int = 0
    restated_first_session: str = ""
    restated_first_excerpt: str = ""
    restated_last_at: int = 0
    restated_last_session: str = ""
    restated_last_excerpt: str = ""
    superseded_at: int = 0
    superseded_reason: str = ""
    superseded_how: str = ""  # update | edit | merge
    pinned_at: int = 0
    unpinned_at: int = 0
    changed_at: int = 0
    replaces: str = ""
    extra: dict = field(default_factory=dict)  # metadata keys automem does not own (kept through export/import)
    # The metadata as read from the store (`from_record`), so a write sends only what changed (`changes`).
    stored: dict | None = field(default=None, repr=False, compare=False)

    @property
    def category(self) -> str:
        return CATEGORY_OF_WING.get(self.wing, self.wing)

    def metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = dict(self.extra)
        meta.update(
            wing=self.wing, category=self.category, room=self.room, profile=self.profile, scope=self.scope,
            added_by=self.added_by, session_id=self.session_id, task_id=self.task_id,
            created_at=int(self.created_at), updated_at=int(self.updated_at), status=self.status,
            superseded_by=self.superseded_by, job=self.job, pinned=1 if self.pinned else 0,
            restated=max(0, int(self.restated or 0)), audience=self.audience or "",
            changed_at=max(0, int(self.changed_at or 0)),
        )
        for key in OPTIONAL_KEYS:
            value = getattr(self, key)
            if value:
                meta[key] = escape(value) if key in ESCAPED_KEYS else value
        if self.replaces:
            meta["replaces"] = self.replaces
        else:
            meta.pop("replaces", None)
        return meta

    def changes(self) -> dict[str, Any]:
        """The metadata keys that differ from the record as read (`stored`), None for a key no longer there (Chroma
        deletes it); every key when the memory was not read from the store. A metadata write sends only these
        (Chroma merges them into the stored record), so a copy read before another machine's change (a pin, a
        restatement) never writes back what that machine changed."""
        meta = self.metadata()
        if self.stored is None:
            return meta
        before = Memory.from_record(self.id, self.text, self.stored).metadata()
        out: dict[str, Any] = {k: v for k, v in meta.items() if before.get(k) != v}
        out.update({k: None for k in before if k not in meta})
        return out

    @classmethod
    def from_record(cls, id: str, text: str, meta: dict | None, stored: bool = True) -> "Memory":
        """A memory from a record's metadata: as the store keeps it (`stored`: ESCAPED_KEYS escaped), or as
        `to_json` gives it (an export line)."""
        meta = dict(meta or {})
        known: dict[str, Any] = {}
        for k in [k for k in meta if k in _KNOWN]:
            v = meta.pop(k)
            if k in _INTS:
                v = clamp(k, v)
            elif not isinstance(v, str):
                v = "" if v is None else str(v)
            elif stored and k in _ESCAPED:
                v = unescape(v)
            known[k] = v
        known.pop("category", None)  # derived from the wing
        known.setdefault("wing", "user")
        known.setdefault("profile", "default")
        return cls(id=id, text=text or "", extra=meta, **known)

    @classmethod
    def read(cls, id: str, text: str, meta: dict | None) -> "Memory":
        """`from_record` for a record read from the store: it keeps the metadata as read, for `changes`."""
        mem = cls.from_record(id, text, meta)
        mem.stored = dict(meta or {})
        return mem

    def to_json(self) -> dict[str, Any]:
        """The memory as `automem list --json` and `export` show it: `changed_at` is the store's sync stamp, not part
        of the memory (an import is a write of its own, stamped then); free text unescaped."""
        out = {"id": self.id, "text": self.text, **self.metadata()}
        out.pop("changed_at", None)
        out.update({k: getattr(self, k) for k in ESCAPED_KEYS if k in out})
        return out
