"""What a write takes and gives back: `Candidate` (a memory to be, where it came from) and `Decision` (what the
write did with it); the judge's signature; the rooms and wings with rules of their own and the links a write
leaves (`related_to`, `judged_new`); which stored memories a write may decide against. The write path
(automem.core.write_path) and what reads its links (automem.core.waiting, automem.ops.compact) import them here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable

from .memory import MAYBE_UPDATES, OWNER, RELATED_TO, SAME_WORDS_AS, Memory
from .provenance import Evidence
from .visibility import is_visible

# A judge settles the pairs the rules cannot, in one batched call: (candidate, existing, wing) -> "duplicate" |
# "update" | "new" for each.
Judge = Callable[[list[tuple[str, str, str]]], list[str]]

# Sources whose writes do not bring back a memory the user forgot (an old transcript may say it again).
AUTOMATIC_ROOMS = frozenset({"auto-extract", "kanban", "builtin-mirror"})
# Records of events (one kanban task run each) are identified by the event, not by their wording: one is a duplicate
# only of the same event, never of a similar text, and other memories are never judged duplicates or updates of one
# (two tasks with similar summaries are two tasks; an extracted fact must not supersede a board record).
EVENT_ROOMS = frozenset({"kanban"})
# What the owner typed on purpose (`automem add`, `automem import`). Everything else came through a conversation,
# so injection-shaped text in it is held for the owner's review (automem.core.instructions.screen).
EXPLICIT_ROOMS = frozenset({"cli", "import"})
# Memories of this wing are events: never superseded by another event (see automem.core.dedup).
EVENT_WING = "episodic"
# A "new" memory close to another that nobody (no judge) compared it with carries that one's id in RELATED_TO, and
# when the two say the same words moved (automem.core.dedup: `same_words`) in SAME_WORDS_AS too (both defined in
# automem.core.memory): recall shows only the newer of the two until a judge decides.
# A memory the judge compared with its neighbours and kept as new carries their ids here, so a later replay of the
# rules (`automem compact`) never merges what the judge kept apart.
JUDGED_NEW = "judged_new"


def waits_for(m: Memory) -> list[tuple[str, bool]]:
    """The memories `m` waits for a judge with, as (id, far): the close one (`related_to`: any answer applies) first,
    then the far one (`maybe_updates`: the judge is asked only whether `m` updates it). A memory may wait for both:
    near a restatement and far from the old value of an attribute it fills."""
    close, far = str(m.extra.get(RELATED_TO) or ""), str(m.extra.get(MAYBE_UPDATES) or "")
    return [(i, f) for i, f in ((close, False), (far, True)) if i]


def unlink(newer: Memory, far: bool | None = None) -> None:
    """The pair `newer` waited in is settled (the far one, the close one, or with None every one): it waits for no
    judge there now, and recall shows it beside the older one."""
    if far is not True:
        newer.extra[RELATED_TO] = ""
        newer.extra.pop(SAME_WORDS_AS, None)
    if far is not False and newer.extra.get(MAYBE_UPDATES):
        newer.extra[MAYBE_UPDATES] = ""


def mark_judged_new(newer: Memory, older_id: str) -> None:
    """A judge kept `newer` apart from `older_id`: recorded, so no later replay of the rules merges them."""
    apart = [i for i in str(newer.extra.get(JUDGED_NEW) or "").split(",") if i]
    newer.extra[JUDGED_NEW] = ",".join(dict.fromkeys(apart + [older_id]))


@dataclass
class Candidate:
    text: str
    wing: str = "user"
    profile: str = "default"
    room: str = "cli"
    scope: str = OWNER  # whose memory: the owner's, or a person's or a chat's (automem.core.memory)
    added_by: str = ""
    session_id: str = ""
    task_id: str = ""
    job: str = ""
    extra: dict = field(default_factory=dict)
    id: str = ""  # an event record's own deterministic id (EVENT_ROOMS); empty: derived from the text
    # Whether the text is the user's own words (automem.core.instructions.supported): True, False (an assistant
    # turn, tool output, quoted text), or None when not known. An instruction that is not is never shared.
    in_user_words: bool | None = None
    # The writer's scope per wing (automem.core.identity.Identity.writes): where a candidate refiled to another wing
    # goes (a group member's personal fact goes to their own scope, not the chat's). None: `scope` for every wing.
    writes: dict | None = None
    queued_at: float = 0.0  # when the words it came from were queued (an extraction job's created_at); 0: now
    # The owner accepted it on review (automem.core.review.accept): not screened for injection again, and a tombstone
    # does not keep it out (the owner's word, like an explicit add). Its room stays the one it was learned in.
    reviewed: bool = False
    # Where it was learned (automem.core.provenance): the source turn's excerpt, who said it, its role ("user",
    # "assistant", "tool", "" unknown: trust decisions read it), the turn's number, how it entered, the extractor.
    # Stored with a new memory (cleaned: secrets redacted, bounded); a restatement's goes into the history.
    evidence: Evidence | None = None


@dataclass
class Decision:
    action: str  # new | duplicate | update | rejected | held (kept for the owner's review, never shown)
    id: str | None
    matched_id: str | None
    reason: str
    text: str
    wing: str
    profile: str
    scope: str = OWNER
    superseded: list = field(default_factory=list)  # every memory this decision superseded (an update: its cluster)

    def to_json(self) -> dict:
        out = asdict(self)
        out["decision"] = out.pop("action")
        return out


def refiled(cand: Candidate, wing: str) -> Candidate:
    """`cand` in another wing (automem.core.instructions.screen's answer), in the writer's scope for that wing."""
    from dataclasses import replace

    scope = cand.writes.get(wing, cand.scope) if cand.writes else cand.scope
    return replace(cand, wing=wing, scope=scope)


def writable_by(earlier: Candidate, cand: Candidate, config) -> bool:
    """Whether `cand` may be decided against an earlier candidate of its batch: only what a write in its own
    profile and scope may touch (the store's rule, automem.core.visibility), so a batch of several profiles or
    people decides each line as adding it alone would."""
    meta = {"status": "active", "profile": earlier.profile, "wing": earlier.wing, "scope": earlier.scope}
    return is_visible(meta, cand.profile, config.shared_wings, scopes=(cand.scope,), inherit=False)


def writable(m: Memory, profile: str, scope: str, wing: str, config) -> bool:
    """Whether a write of `profile` and `scope` in `wing` may decide against the stored memory `m` (active, the
    same wing, visible to it without crossing people; never a task record)."""
    return (m.status == "active" and m.wing == wing and m.room not in EVENT_ROOMS
            and is_visible(m.metadata(), profile, config.shared_wings, scopes=(scope,), inherit=False))
