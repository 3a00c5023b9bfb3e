"""The agent's tools: automem's own (automem_search, automem_remember, automem_share, automem_forget: their
schemas, as Hermes lists them, and their handlers) and the mirror of Hermes' built-in memory tool. Plain functions
over a store; both plugin roles call them (the provider through `HermesSession`, the general role through
`automem.hermes.session.run_tool_in_home`). What the agent writes is checked against the words the user said in the
session (`user_words`) and quotes them as its source.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from ..core.identity import OWNER_IDENTITY, Identity
from ..core.memory import CATEGORY_OF_WING, WING_OF_CATEGORY, WINGS
from ..core.provenance import OWNER_SPEAKER, Evidence, excerpt_of, overlap
from ..log import log_event

ROOM_TOOL = "tool"
ROOM_MIRROR = "builtin-mirror"
# Built-in memory tool targets -> wings: USER.md holds the user profile, MEMORY.md the agent's working notes
# (conventions, environment facts, lessons), which is what the instruction wing is for.
WING_OF_TARGET = {"user": "user", "memory": "instruction"}

TOOL_SCHEMAS: list[dict] = [
    {
        "name": "automem_search",
        "description": ("Search long-term memory (automem): the user's preferences, past events and tasks, and the "
                        "rules learned in earlier sessions, including instructions shared by other profiles. Use it "
                        "before asking the user something they may have told you before. Each result says where it "
                        "was learned (`source`). With `id` instead of a query: that one memory, the words it was "
                        "learned from, the values it replaced and what replaced it (when the user asks where you "
                        "learned something)."),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to look for, in any language"},
                "id": {"type": "string", "description": "a memory id (m_...): show its source and history"},
                "k": {"type": "integer", "minimum": 1, "maximum": 20, "description": "how many results (default 5)"},
                "wing": {"type": "string", "enum": list(WINGS),
                         "description": "only this kind: user (persona), episodic (events), instruction (rules)"},
            },
        },
    },
    {
        "name": "automem_remember",
        "description": ("Store one lasting memory now (automem deduplicates it and replaces an older fact it "
                        "updates). One short statement, 5-200 characters, in the user's language; never secrets. "
                        "When the user corrects a memory, give its id as `corrects`: the text replaces it (its "
                        "source and history are kept)."),
        "parameters": {
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "the memory, e.g. 用户习惯使用vim编辑器"},
                "category": {"type": "string", "enum": ["persona", "episodic", "instruction"],
                             "description": "persona: about the user; episodic: what happened; instruction: a rule "
                                            "or way of working (shared with other profiles)"},
                "corrects": {"type": "string",
                             "description": "the id (m_...) of the memory the user says is wrong; text is the "
                                            "corrected memory (category is then the old one's)"},
            },
            "required": ["text"],
        },
    },
    {
        "name": "automem_share",
        "description": ("The owner's standing instructions reach the owner's own profiles; people other than the "
                        "owner (gateway users) see only those the owner confirmed for everyone. Use this only when "
                        "the owner, in this conversation, asks to share (or stop sharing) instructions with "
                        "everyone. Without ids: lists the instructions awaiting confirmation and those shared. "
                        "Works only in the owner's own session."),
        "parameters": {
            "type": "object",
            "properties": {
                "ids": {"type": "array", "items": {"type": "string"},
                        "description": "instruction memory ids (m_...) to confirm for everyone"},
                "everyone": {"type": "boolean",
                             "description": "true (default): share with everyone; false: back to the owner only"},
            },
        },
    },
    {
        "name": "automem_forget",
        "description": ("Forget memories of this profile by id (from automem_search), when the user says they are "
                        "wrong or asks you to forget them. A forgotten memory is never recalled again."),
        "parameters": {
            "type": "object",
            "properties": {
                "ids": {"type": "array", "items": {"type": "string"}, "description": "memory ids (m_...)"},
            },
            "required": ["ids"],
        },
    },
]
TOOL_NAMES = tuple(s["name"] for s in TOOL_SCHEMAS)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


# -- the tools (plain functions over a store; both plugin roles call them) ----------------------------------------
def tool_show(store, profile: str, memory_id: Any, identity: Identity = OWNER_IDENTITY) -> dict:
    """One memory as the agent may see it: its text, where it was learned, the values it replaced and what replaced
    it (automem.core.history.show, with this agent's identity: another person's memory is unknown to it, and the
    owner's shared memory comes without the owner's words)."""
    from ..core.history import NotFound, show

    if not isinstance(memory_id, str) or not memory_id.strip():
        return {"error": "`id` must be a memory id (m_...) from automem_search"}
    try:
        shown = show(store, memory_id.strip()[:128], profile=profile, scopes=identity.reads)
    except NotFound as exc:
        return {"error": str(exc)}
    out = shown.to_json()
    keep = ("id", "text", "category", "wing", "status", "pinned", "created_at", "updated_at", "session_id", "task_id",
            "source", "evidence", "events", "replaced", "replaced_by")
    return {"memory": {k: out[k] for k in keep if k in out}}


def tool_search(store, profile: str, args: dict, identity: Identity = OWNER_IDENTITY) -> dict:
    from ..core.history import source_line

    if args.get("id") and not args.get("query"):
        return tool_show(store, profile, args.get("id"), identity)
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        return {"error": "automem_search needs a non-empty `query` string (or a memory `id`)"}
    try:
        k = int(args.get("k") or 5)
    except (TypeError, ValueError):
        return {"error": "`k` must be a whole number from 1 to 20"}
    k = max(1, min(20, k))
    wing = args.get("wing") or None
    if wing is not None and wing not in WINGS:
        wing = {"persona": "user"}.get(wing, wing)
        if wing not in WINGS:
            return {"error": f"`wing` must be one of {', '.join(WINGS)}"}
    hits = store.recall(query, k=k, profile=profile, wing=wing, scopes=identity.reads)
    return {"results": [{"id": m.id, "text": m.text, "category": m.category, "wing": m.wing, "profile": m.profile,
                         "distance": round(d, 4), "updated_at": m.updated_at,
                         "source": source_line(m, identity.reads)} for m, d in hits]}


def agent_evidence(text: str, user_words: Sequence[str] | None, identity: Identity, origin: str) -> Evidence:
    """Where a memory the agent wrote (its tool, or Hermes' built-in memory tool) came from: the user's message of
    this session sharing the most words with it, the latest on a tie (the user said it; the agent wrote it down),
    else the agent's own words (role assistant, no excerpt)."""
    best, shared = "", 0
    for said in user_words or ():
        n = overlap(said, text) if isinstance(said, str) else 0
        if n and n >= shared:
            best, shared = said, n
    if best:
        return Evidence(excerpt=excerpt_of(best, text), speaker=identity.scope_for("user") or OWNER_SPEAKER,
                        role="user", origin=origin)
    return Evidence(speaker="assistant", role="assistant", origin=origin)


def said_by_user(text: str, user_words: Sequence[str] | None) -> bool | None:
    """Whether an agent-written memory is in the words the user said in this session (None: nothing of the
    session's user turns is known, e.g. a tool call before any turn)."""
    if not user_words:
        return None
    from ..core.instructions import supported

    return supported(text, user_words)


def tool_remember(store, profile: str, args: dict, session_id: str = "", identity: Identity = OWNER_IDENTITY,
                  judge=None, user_words: Sequence[str] | None = None) -> dict:
    """The agent stores one memory. An instruction not in the words the user said in this session (what the agent
    read in a web page, a file, a tool's output) is kept for this profile only, never shared
    (automem.core.instructions.screen). With `corrects`, the user's correction of one of their memories."""
    from ..core.write_path import Candidate, remember

    text, category = args.get("text"), args.get("category") or "persona"
    if args.get("corrects"):
        return tool_correct(store, profile, args.get("corrects"), text, identity, user_words)
    wing = WING_OF_CATEGORY.get(category, category if category in WINGS else None)
    if wing is None:
        return {"error": "`category` must be persona, episodic or instruction"}
    if not isinstance(text, str):
        return {"error": "automem_remember needs a `text` string"}
    [d] = remember(store, [Candidate(text=text, wing=wing, profile=profile, room=ROOM_TOOL, added_by="agent",
                                     session_id=session_id, scope=identity.scope_for(wing),
                                     writes=dict(identity.writes),
                                     in_user_words=said_by_user(text, user_words) if wing == "instruction" else None,
                                     evidence=agent_evidence(text, user_words, identity, "tool"))],
                   judge=judge)
    out = {"decision": d.action, "id": d.id, "matched_id": d.matched_id, "reason": d.reason, "text": d.text,
           "category": CATEGORY_OF_WING.get(d.wing, d.wing)}
    return out


def tool_correct(store, profile: str, memory_id: Any, text: Any, identity: Identity = OWNER_IDENTITY,
                 user_words: Sequence[str] | None = None) -> dict:
    """The user's correction of one of their memories (automem.core.write_path.edit with this agent's identity:
    only a memory of this profile in a scope it writes; the owner's shared memory is read-only to anyone else).
    Screened as the agent's writes are: an injection-shaped text is refused, and an instruction's correction must
    be in the words the user said in this session."""
    from ..core.write_path import edit
    from ..errors import UsageError

    if not isinstance(memory_id, str) or not memory_id.strip():
        return {"error": "`corrects` must be a memory id (m_...) from automem_search"}
    if not isinstance(text, str):
        return {"error": "automem_remember needs a `text` string: the corrected memory"}
    try:
        d = edit(store, memory_id.strip()[:128], text, profile=profile, scopes=sorted(set(identity.writes.values())),
                 explicit=False, in_user_words=said_by_user(text, user_words))
    except UsageError as exc:
        return {"error": str(exc)}
    return {"decision": "rejected" if d.action == "rejected" else "corrected", "id": d.id, "corrects": memory_id,
            "reason": d.reason, "text": d.text, "category": CATEGORY_OF_WING.get(d.wing, d.wing)}


def tool_forget(store, profile: str, args: dict, identity: Identity = OWNER_IDENTITY) -> dict:
    """Forget memories the caller owns: its profile's, in one of the scopes it writes (never another person's,
    never the owner's when the caller is someone else)."""
    ids = args.get("ids")
    if isinstance(ids, str):
        ids = [ids]
    if args.get("id") and not ids:
        ids = [args["id"]]
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        return {"error": "automem_forget needs `ids`: a list of memory ids from automem_search"}
    found = {m.id: m for m in store.get(ids)}
    writable = set(identity.writes.values())
    own = [i for i in ids if i in found and found[i].profile == profile and found[i].scope in writable]
    changed = set(store.forget(own)) if own else set()
    return {"forgotten": [i for i in own if i in changed],
            "already_forgotten": [i for i in own if i not in changed],
            "not_found": [i for i in ids if i not in found],
            "not_yours": [i for i in ids if i in found and i not in own]}


SHARE_WORDS = ("share", "everyone", "everybody", "public", "all users", "other people", "strangers", "gateway",
               "unshare", "stop sharing", "分享", "共享", "公开", "所有人", "大家", "别人", "其他人",
               "取消共享", "不再共享")


def tool_share(store, profile: str, args: dict, identity: Identity = OWNER_IDENTITY,
               user_words: Sequence[str] | None = None) -> dict:
    """Confirm (or withdraw) owner instructions for everyone (automem.core.sharing). Only in the owner's own
    session, and only when the owner's own words in this session ask for it: text the agent read elsewhere (a web
    page, a file) cannot make it share anything."""
    from ..core import sharing

    if identity != OWNER_IDENTITY:
        return {"error": "only the owner can share instructions, in the owner's own session (or `automem share`)"}
    ids = args.get("ids") or []
    if isinstance(ids, str):
        ids = [ids]
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return {"error": "`ids` must be a list of memory ids (m_...)"}
    if not ids:
        def row(m):
            return {"id": m.id, "text": m.text, "profile": m.profile}

        return {"awaiting_confirmation": [row(m) for m in sharing.awaiting_confirmation(store)],
                "shared_with_everyone": [row(m) for m in sharing.shared_with_everyone(store)]}
    said = " ".join(user_words or ()).lower()
    if not any(w in said for w in SHARE_WORDS):
        return {"error": "the owner has not asked to share in this conversation; ask them, or they can run "
                         "`automem share ID`"}
    everyone = args.get("everyone", True)
    result = (sharing.share if everyone is not False else sharing.unshare)(store, ids, by="agent")
    return result.to_json()


def run_tool(store, profile: str, name: str, args: Any, session_id: str = "",
             identity: Identity = OWNER_IDENTITY, judge=None, user_words: Sequence[str] | None = None) -> str:
    """One tool call as Hermes wants it: a JSON string, errors included (never an exception). `judge`: the
    write path's LLM judge for `automem_remember` (the session's model), or None for the offline rules;
    `user_words`: what the user said in this session (agent writes are checked against it, and quote it as their
    source)."""
    if not isinstance(args, dict):
        return _dumps({"error": "tool arguments must be a JSON object"})
    try:
        if name == "automem_search":
            out = tool_search(store, profile, args, identity)
        elif name == "automem_remember":
            out = tool_remember(store, profile, args, session_id, identity, judge=judge, user_words=user_words)
        elif name == "automem_share":
            out = tool_share(store, profile, args, identity, user_words)
        elif name == "automem_forget":
            out = tool_forget(store, profile, args, identity)
        else:
            out = {"error": f"unknown automem tool {name!r}"}
    except Exception as exc:  # noqa: BLE001 - the model gets one line, automem.log the details
        log_event(store.location, "tool_failed", tool=name, error=f"{exc.__class__.__name__}: {exc}")
        out = {"error": f"{name} failed: {exc}"}
    return _dumps(out)


# -- the built-in memory tool mirror ------------------------------------------------------------------------------
def mirror_write(store, profile: str, action: str, target: str, content: str, metadata: dict | None = None,
                 identity: Identity = OWNER_IDENTITY, user_words: Sequence[str] | None = None) -> dict:
    """Mirror one write of Hermes' built-in memory tool into room `builtin-mirror`.

    Hermes' own MEMORY.md / USER.md are per profile, whoever the agent talks to. The mirror is not: in a session of
    someone other than the owner, what the agent wrote there goes into that person's (or chat's) scope, never
    into the owner's memory and never into the instructions every profile shares."""
    from ..core.write_path import Candidate, remember

    metadata = metadata or {}
    wing = WING_OF_TARGET.get(target, "user")
    scope = identity.scope_for(wing)
    session_id = str(metadata.get("session_id") or "")
    old_text = str(metadata.get("old_text") or "").strip()
    new_text = (content or "").strip()
    out: dict = {"action": action, "wing": wing}
    if action in ("replace", "remove") and old_text:
        # The built-in tool matches entries by substring: our mirrored copies that contained it are gone there, so
        # they go here too (before the new text is decided, so it is not judged a duplicate of what it replaces).
        mirrored = store.list(profile=profile, wing=wing, where={"room": ROOM_MIRROR}, scopes=(scope,), inherit=False)
        gone = [m.id for m in mirrored if m.profile == profile and old_text in m.text and m.text != new_text]
        out["forgotten"] = store.forget(gone) if gone else []
    if action in ("add", "replace") and new_text:
        [d] = remember(store, [Candidate(text=new_text, wing=wing, profile=profile, room=ROOM_MIRROR,
                                         added_by="builtin-memory", session_id=session_id, scope=scope,
                                         writes=dict(identity.writes),
                                         in_user_words=said_by_user(new_text, user_words)
                                         if wing == "instruction" else None,
                                         evidence=agent_evidence(new_text, user_words, identity, "mirror"))])
        out["decision"] = d.to_json()
    return out
