"""The recall snapshot: the active memories that Hermes' start path reads instead of opening Chroma.

`<root>/automem/cache/recall.json` holds the newest active memories of every (profile, wing), stamped with the
store's write generation. The store refreshes it when it closes after writing (`refresh_cache`); a reader that
finds it stale (another generation, or on a Chroma server older than `SERVER_CACHE_TTL_S`) rebuilds it once
(`automem.core.recall.load_items`). Plain reads and writes of one JSON file: no chromadb, no embedding model.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import Any, Iterable

from ..config import Config
from ..paths import Location, ensure_private_dir, write_private
from .memory import CATEGORY_OF_WING

CACHE_VERSION = 2  # 2: items carry their scope
CACHE_NAME = "recall.json"
# Newest memories kept per (profile, wing, scope) in the snapshot: enough for any budget, small enough to parse in ms.
CACHE_PER_GROUP = 200
# A Chroma server has no local write generation: trust a snapshot this long.
SERVER_CACHE_TTL_S = 60.0


@dataclass
class RecallItem:
    id: str
    text: str
    wing: str
    profile: str
    updated_at: int = 0
    created_at: int = 0
    room: str = ""
    scope: str = ""  # automem.core.memory.OWNER, or a person's or a chat's scope

    @property
    def category(self) -> str:
        return CATEGORY_OF_WING.get(self.wing, self.wing)


def cache_path(location: Location):
    return location.cache_dir / CACHE_NAME


def read_generation(location: Location) -> int:
    """The embedded store's write generation (see `automem.core.store`), 0 before the first write."""
    try:
        with open(location.automem_dir / "generation", encoding="ascii") as fh:
            return int(fh.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def read_cache(location: Location) -> dict | None:
    try:
        with open(cache_path(location), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION or not isinstance(data.get("memories"), list):
        return None
    return data


def cache_is_fresh(location: Location, config: Config, data: dict | None, now: float | None = None) -> bool:
    if data is None:
        return False
    if config.chroma_url:
        now = time.time() if now is None else now
        return data.get("backend") == "server" and now - float(data.get("built_at", 0)) < SERVER_CACHE_TTL_S
    return data.get("backend") == "embedded" and data.get("generation") == read_generation(location)


def snapshot_items(memories: Iterable[Any], per_group: int = CACHE_PER_GROUP,
                   counts: dict | None = None) -> list[RecallItem]:
    """The newest `per_group` active memories of each (profile, wing, scope), newest first. `counts`, when given,
    gets the number of all of them: {"owner": {profile: {wing: n}}, "others": {profile: {"memories": n,
    "scopes": k}}} (the owner's memories, and those of the people and chats of gateway bots)."""
    groups: dict[tuple[str, str, str], list[RecallItem]] = {}
    others: dict[str, dict[str, int]] = {}
    for m in memories:
        if getattr(m, "status", "active") != "active":
            continue
        item = RecallItem(m.id, m.text, m.wing, m.profile, int(m.updated_at or 0), int(m.created_at or 0), m.room,
                          getattr(m, "scope", ""))
        groups.setdefault((item.profile, item.wing, item.scope), []).append(item)
        if counts is not None and not item.scope:
            per_wing = counts.setdefault("owner", {}).setdefault(item.profile, {})
            per_wing[item.wing] = per_wing.get(item.wing, 0) + 1
        elif counts is not None:
            per_scope = others.setdefault(item.profile, {})
            per_scope[item.scope] = per_scope.get(item.scope, 0) + 1
    if counts is not None:
        counts.setdefault("owner", {})
        counts["others"] = {p: {"memories": sum(v.values()), "scopes": len(v)} for p, v in others.items()}
    out: list[RecallItem] = []
    for items in groups.values():
        items.sort(key=newest_first)
        out.extend(items[:per_group])
    out.sort(key=newest_first)
    return out


def refresh_cache(store) -> dict:
    """Rebuild the snapshot from `store` and write it atomically. Returns the snapshot."""
    location = store.location
    generation = read_generation(location)  # read before the records: a write in between leaves it stale, not wrong
    memories = store.iter_records(where={"status": "active"})
    counts: dict = {}
    items = snapshot_items(memories, counts=counts)
    data = {
        "version": CACHE_VERSION,
        "backend": store.backend,
        "generation": generation,
        "built_at": round(time.time(), 3),
        "memories": [asdict(i) for i in items],
        "counts": counts,  # of all active memories, not only those above (`hermes memory status` shows them)
    }
    write_cache(location, data)
    return data


def write_cache(location: Location, data: dict) -> None:
    ensure_private_dir(location.cache_dir)
    write_private(cache_path(location), json.dumps(data, ensure_ascii=False))


def newest_first(item: RecallItem) -> tuple:
    return (-(item.updated_at or item.created_at), -item.created_at, item.id)
