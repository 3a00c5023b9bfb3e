"""What `automem.Memories` returns: frozen dataclasses, each with `to_json()` as the CLI's `--json` prints it.

`Decision` (what the write path did with one text), `Hit` (a search result), `MemoryView` (a memory as `list` and
`show` return it; from `show` with its events and its `Step`s, the chain of values), `HeldMemory` (held for review),
`Pinned`, `Recall`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, TypeVar

if TYPE_CHECKING:
    from ..core.history import Event, Shown
    from ..core.memory import Memory
    from ..core.provenance import Evidence

CATEGORIES = ("persona", "episodic", "instruction")
# The category names, and the wing names the CLI and the export use for them ("user" is persona).
WING_OF = {"persona": "user", "user": "user", "episodic": "episodic", "instruction": "instruction"}
_CATEGORY = {"user": "persona", "episodic": "episodic", "instruction": "instruction"}
# How a memory entered the store, by the room it was written in (the names issue 30's evidence `origin` uses).
_ORIGIN = {"auto-extract": "extraction", "builtin-mirror": "mirror", "kanban": "kanban", "tool": "tool", "cli": "cli",
           "import": "import"}
_View = TypeVar("_View", bound="MemoryView")


@dataclass(frozen=True)
class Decision:
    """What the write path did with one text.

    `action`: "new" (stored), "duplicate" (already known: `id` is the memory that holds it, now marked as said
    again), "update" (stored, and the older value `matched_id` superseded), "rejected" (not stored: `reason` says
    why; `remember` raises `automem.errors.Refused` instead of returning one) or "held" (an injection-shaped text
    from a conversation, kept for the owner's review; never from this API, whose writes are the owner's own).
    """

    action: str
    id: str | None
    matched_id: str | None
    reason: str
    text: str
    category: str
    profile: str
    scope: str  # whose memory: "" the owner's, "user:<platform>:<id>" a person's, "chat:..." a chat's

    @classmethod
    def _of(cls, d: Any) -> Decision:
        return cls(d.action, d.id, d.matched_id, d.reason, d.text, _CATEGORY.get(d.wing, d.wing), d.profile, d.scope)

    @property
    def stored(self) -> bool:
        """Whether the fact is in the store now (new, duplicate or update)."""
        return self.action in ("new", "duplicate", "update")

    def to_json(self) -> dict[str, Any]:
        """As `automem add --json` prints it."""
        return {"id": self.id, "matched_id": self.matched_id, "reason": self.reason, "text": self.text,
                "wing": WING_OF.get(self.category, self.category), "profile": self.profile, "scope": self.scope,
                "decision": self.action}


@dataclass(frozen=True)
class Hit:
    """One search result: a memory the reader may see, nearest first. `distance` is the cosine distance between
    the query and the memory (0 the same meaning, 1 unrelated); the order is the hybrid ranking's (meaning and
    shared words), the one Hermes' recall uses."""

    id: str
    text: str
    category: str
    profile: str
    scope: str
    distance: float
    updated_at: int  # unix seconds: when it was last stored or said again
    pinned: bool = False
    _json: dict = field(default_factory=dict, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        """As `automem search --json` prints it: the whole record, and the distance."""
        return dict(self._json)


@dataclass(frozen=True)
class Step:
    """One link of a memory's chain: a value it replaced, or what replaced it. `memory` is None (and `text` None)
    when that memory was forgotten since (`forgotten_at` says when; 0: never known here)."""

    id: str
    # a value this one replaced: "updated_from" (an update), "edited" (a correction), "merged" (a duplicate merged
    # into it); or "superseded_by" (what replaced this one)
    link: str
    at: int  # unix seconds: when the older value was superseded
    text: str | None
    reason: str = ""
    memory: MemoryView | None = None
    forgotten_at: int = 0

    @classmethod
    def _of(cls, s: Any) -> Step:
        """From a link of automem.core.history's chain."""
        m = s.memory
        return cls(s.id, s.link, int(s.at or 0), None if m is None else m.text, s.reason or "",
                   None if m is None else MemoryView._of(m), int(s.forgotten_at or 0))


@dataclass(frozen=True)
class MemoryView:
    """One memory as `list` and `show` return it, with where it came from.

    `status`: "active" (recalled), "superseded" (replaced by `superseded_by`; kept as history, never recalled) or
    "forgotten" (words deleted: `text` is None, only the id and where it was remain). `origin` is how it entered the
    store: "extraction" (from a conversation), "tool" (the agent's memory tool), "mirror" (Hermes' built-in memory),
    "kanban" (a task run), "cli" (typed by the owner: the CLI and this API), "import". `evidence` is what it was
    learned from: the words (`excerpt`), who said them (`speaker`, `role`), the `turn`, how it entered (`origin`,
    `extractor`); None for a memory an older automem stored without. `extra`: metadata keys automem does not own.

    `show` also fills `source` (the evidence on one line), `events` (its history, oldest first: created, restated,
    updated_from / edited / merged, pinned, unpinned, superseded_by), `replaced` (the values it replaced, nearest
    first) and `replaced_by` (what replaced it, to the active memory). `private`: a person's view of the owner's
    shared instruction, without where it came from (no evidence, session, events or chain).
    """

    id: str
    text: str | None
    category: str
    profile: str
    scope: str
    status: str
    pinned: bool = False
    shared: bool = False  # an owner's instruction confirmed for everyone (`share`)
    created_at: int = 0
    updated_at: int = 0
    superseded_by: str | None = None
    origin: str = ""
    added_by: str = ""  # "cli", "api", "agent", "extract" ...
    session_id: str | None = None
    task_id: str | None = None
    job: str | None = None
    restated: int = 0  # how often it was said again after it was first stored
    evidence: Evidence | None = field(default=None, compare=False)
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    source: str = ""
    events: tuple[Event, ...] = field(default=(), compare=False)
    replaced: tuple[Step, ...] = ()
    replaced_by: tuple[Step, ...] = ()
    private: bool = False
    _json: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def _of(cls: type[_View], m: Memory, **more: Any) -> _View:
        from ..core.memory import AUDIENCE_EVERYONE
        from ..core.provenance import Evidence

        ev = Evidence.of(m)
        fields: dict[str, Any] = dict(
            id=m.id, text=m.text, category=m.category, profile=m.profile, scope=m.scope, status=m.status,
            pinned=bool(m.pinned), shared=(m.audience or "") == AUDIENCE_EVERYONE, created_at=int(m.created_at or 0),
            updated_at=int(m.updated_at or 0), superseded_by=m.superseded_by or None,
            origin=_ORIGIN.get(m.room, m.room or ""), added_by=m.added_by or "", session_id=m.session_id or None,
            task_id=m.task_id or None, job=m.job or None, restated=int(m.restated or 0),
            evidence=ev if ev.recorded else None, extra=dict(m.extra), _json=m.to_json())
        fields.update(more)
        return cls(**fields)

    @classmethod
    def _of_shown(cls, shown: Shown) -> MemoryView:
        """`show`'s view, from automem.core.history.show's answer: `to_json()` is what `automem show --json`
        prints."""
        out = shown.to_json()
        if shown.private:  # the owner's words and whereabouts stay the owner's
            return cls._of(shown.memory, added_by="", session_id=None, task_id=None, job=None, evidence=None,
                           source=out["source"], private=True, _json=out)
        return cls._of(shown.memory, source=out["source"], events=tuple(shown.events),
                       replaced=tuple(Step._of(s) for s in shown.replaced),
                       replaced_by=tuple(Step._of(s) for s in shown.replaced_by), _json=out)

    @classmethod
    def _of_tombstone(cls, t: Mapping[str, Any]) -> MemoryView:
        from ..ops.transfer import tombstone_json

        wing = str(t.get("wing") or "")
        return cls(str(t["id"]), None, _CATEGORY.get(wing, wing), str(t.get("profile") or ""),
                   str(t.get("scope") or ""), "forgotten", created_at=int(t.get("created_at") or 0),
                   updated_at=int(t.get("forgotten_at") or 0), origin=_ORIGIN.get(str(t.get("room") or ""), ""),
                   task_id=t.get("task_id") or None, _json=tombstone_json(dict(t)))

    def to_json(self) -> dict[str, Any]:
        """As `automem list --json` prints it (a forgotten one: its tombstone, no text); from `show`, as `automem
        show --json` prints it (with `evidence`, `source`, `events`, `replaced`, `replaced_by`)."""
        return dict(self._json)


@dataclass(frozen=True)
class HeldMemory(MemoryView):
    """A memory the write path held back for the owner's review (an injection-shaped text from a conversation):
    `reason` names what it looked like (never its words). `accept_held` stores it, `reject_held` forgets it."""

    reason: str = ""


@dataclass(frozen=True)
class Pinned:
    """One memory `pin` / `unpin` acted on, and whether its mark changed (False: it was already so)."""

    memory: MemoryView
    changed: bool


@dataclass(frozen=True)
class Recall:
    """What Hermes puts in the agent's prompt for this profile and person: `block`, the system-prompt block
    (pinned memories first, then the most useful persona and instructions, within the budget), and `prefetch`,
    the memories relevant to the query (none that are already in the block). `ids` are every memory shown."""

    block: str
    prefetch: str
    ids: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n\n".join(part for part in (self.block, self.prefetch) if part)

    def __str__(self) -> str:
        return self.text
