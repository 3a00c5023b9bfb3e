"""Which of the owner's instructions reach people other than the owner: only the ones the owner confirmed.

The owner's instructions are shared across the owner's profiles automatically. A gateway stranger's session (and
a group member's) reads only those whose metadata `audience` is "everyone" (automem.core.memory.AUDIENCE_EVERYONE;
the rule is automem.core.visibility's). Confirming is the owner's act, through this module only: the CLI (`automem
share` / `unshare`), the agent tool `automem_share` in an owner's session, the dashboard's Memory tab.

Before an instruction is shared with everyone it is checked again: no secret (automem.text.find_secret), no personal
data (automem.core.personal.personal_data), nothing injection-shaped (automem.core.injection). A refused one stays
the owner's, and the answer says why (feature names, never the memory's words).

    result = share(store, ["m_..."])           # confirm for everyone
    result = unshare(store, ["m_..."])         # back to the owner's profiles only
    awaiting_confirmation(store, profile=None)  # the owner's active instructions not confirmed yet
    shared_with_everyone(store, profile=None)   # ... and the confirmed ones
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..text import find_secret
from .injection import injection
from .memory import AUDIENCE_EVERYONE, HELD, OWNER, Memory
from .personal import personal_data

INSTRUCTION = "instruction"


@dataclass
class ShareResult:
    """What a share or unshare did: ids changed, ids already so, and ids refused with the reason."""

    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"changed": self.changed, "unchanged": self.unchanged, "refused": self.refused}


def why_not_shareable(memory: Memory) -> str | None:
    """Why this memory may not be confirmed for everyone (None: it may): only an active instruction of the owner,
    without a secret, personal data or an injection-shaped order."""
    if memory.scope != OWNER:
        return "not the owner's (only the owner's instructions can be shared)"
    if memory.wing != INSTRUCTION:
        return f"a {memory.category} memory (only instructions can be shared; persona and events stay the owner's)"
    if memory.status == HELD:
        return "held for review as an injection-shaped order (accept it first: `automem review --accept ID`)"
    if memory.status != "active":
        return f"{memory.status} (share the memory that replaced it)"
    kind = find_secret(memory.text)
    if kind:
        return f"holds a secret ({kind})"
    kind = personal_data(memory.text)
    if kind:
        return f"holds {kind}: keep it for your own profiles, or edit it first"
    verdict = injection(memory.text)
    if verdict.refused:
        return "reads as an injected order (" + ", ".join(verdict.features) + ")"
    return None


def share(store, ids: Sequence[str], *, by: str = "") -> ShareResult:
    """Confirm the owner's instructions `ids` for everyone (gateway users of every profile read them). Each is checked
    first (`why_not_shareable`); refused ones are left as they were. `by` names who confirmed (cli, agent, dashboard)
    for the log."""
    return _set(store, ids, AUDIENCE_EVERYONE, by)


def unshare(store, ids: Sequence[str], *, by: str = "") -> ShareResult:
    """Withdraw the confirmation: the instructions are read by the owner's profiles only again."""
    return _set(store, ids, "", by)


def _set(store, ids: Sequence[str], audience: str, by: str) -> ShareResult:
    out = ShareResult()
    wanted = list(dict.fromkeys(str(i) for i in ids))
    with store.lock():  # read and write under the write lock: no other writer's change is overwritten
        found = {m.id: m for m in store.get(wanted)}
        changed: list[Memory] = []
        for mid in wanted:
            m = found.get(mid)
            if m is None:
                out.refused[mid] = "no memory with this id"
                continue
            if audience:
                reason = why_not_shareable(m)
            else:
                reason = None if m.scope == OWNER and m.wing == INSTRUCTION else "not an instruction of the owner"
            if reason:
                out.refused[mid] = reason
            elif (m.audience or "") == audience:
                out.unchanged.append(mid)
            else:
                m.audience = audience
                changed.append(m)
                out.changed.append(mid)
        if changed:
            store.update_metadata(changed)
    from ..log import log_event

    log_event(store.location, "share" if audience else "unshare", by=by, changed=out.changed,
              unchanged=out.unchanged, refused=out.refused)
    return out


def awaiting_confirmation(store, profile: str | None = None) -> list[Memory]:
    """The owner's active instructions (of `profile`, or every profile) not confirmed for everyone, newest first."""
    return [m for m in _owner_instructions(store, profile) if (m.audience or "") != AUDIENCE_EVERYONE]


def shared_with_everyone(store, profile: str | None = None) -> list[Memory]:
    """The owner's active instructions confirmed for everyone, newest first."""
    return [m for m in _owner_instructions(store, profile) if (m.audience or "") == AUDIENCE_EVERYONE]


def _owner_instructions(store, profile: str | None) -> list[Memory]:
    where = {"profile": profile} if profile is not None else None
    return store.list(profile=None, wing=INSTRUCTION, scopes=(OWNER,), where=where)
