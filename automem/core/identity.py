"""Whose memories one reader or writer speaks for: the scopes it reads, the scope each wing's new memories get,
and whether its instructions are the owner's (the only memory shared with every profile and every person).

The Hermes side builds one from the gateway's identity kwargs (automem.hermes.gateway); jobs in the spool carry
it, so a drainer writes each memory into the scope of the person who said it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .memory import OWNER, WINGS


@dataclass(frozen=True)
class Identity:
    """Whose memories one agent reads and writes.

    `reads`: the scopes its recall shows (plus the owner's instructions, when it is not the owner);
    `writes`: the scope each wing's new memories get; `trusted`: its instructions are the owner's (shared with
    every profile and every user); `why`: one line for the log and `automem doctor`.
    """

    reads: tuple[str, ...] = (OWNER,)
    writes: Mapping[str, str] = field(default_factory=lambda: {w: OWNER for w in WINGS})
    trusted: bool = True
    why: str = field(default="the owner", compare=False)

    @property
    def is_owner(self) -> bool:
        return self.reads == (OWNER,)

    def scope_for(self, wing: str) -> str:
        return self.writes.get(wing, self.writes.get("user", OWNER))

    def to_json(self) -> dict:
        return {"reads": list(self.reads), "writes": dict(self.writes), "trusted": self.trusted, "why": self.why}

    @classmethod
    def from_json(cls, data: Any) -> "Identity":
        """An identity saved with a job or a session. None or {}: saved before identities existed, when every
        session was the owner's. Anything unreadable belongs to no one: a scope of its own, untrusted."""
        if data is None or data == {}:
            return OWNER_IDENTITY
        try:
            reads = tuple(str(s) for s in data["reads"])
            writes = {w: str(data["writes"][w]) for w in WINGS}
        except (TypeError, KeyError):
            reads, writes = (), {}
        if not reads:
            return UNKNOWN_IDENTITY
        return cls(reads, writes, bool(data.get("trusted")) and writes["instruction"] == OWNER,
                   str(data.get("why") or ""))


OWNER_IDENTITY = Identity()
UNKNOWN_IDENTITY = Identity(("session:unknown",), {w: "session:unknown" for w in WINGS}, False,
                            "an unreadable identity")
