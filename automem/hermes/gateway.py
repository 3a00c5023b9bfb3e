"""Who a Hermes gateway agent is talking to, from the identity kwargs Hermes passes to `MemoryProvider.initialize`.

One gateway profile talks to many people; each gets a scope of their own (automem.core.memory), and only the
owner's instructions reach everyone. Plain functions over the kwargs and the config: no I/O.

What the gateway passes (Hermes 0.19): `platform` always; `user_id`, `user_id_alt`, `user_name`, `chat_id`,
`chat_name`, `chat_type` (dm, group, channel, thread), `thread_id` and `gateway_session_key` only when truthy.
A session key ends with the sender's id when the gateway gives each member of a group a session of their own
(`group_sessions_per_user`, the default); threads, and groups without that setting, are shared by everyone who
speaks in them, and the agent's user id is then only the id of whoever spoke first.
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping
from urllib.parse import quote

from ..core.identity import OWNER_IDENTITY, Identity
from ..core.memory import OWNER, WINGS
from ..core.visibility import legacy_read

# Platforms where the one person at the keyboard is whoever runs Hermes: the owner.
OWNER_PLATFORMS = frozenset({"", "cli", "tui", "acp"})
GROUP_CHAT_TYPES = frozenset({"group", "channel", "thread", "supergroup"})


def _all(scope: str) -> dict[str, str]:
    return {w: scope for w in WINGS}


MAX_ID_CHARS = 128  # an id up to this long, without ':', is its own scope part, as it always was


def _raw(value: Any) -> str:
    """A kwarg as an id: the string, trimmed; "" when missing or odd (None, a bool, a dict...)."""
    if value is None or isinstance(value, bool) or not isinstance(value, (str, int)):
        return ""
    return str(value).strip()


def scope_part(raw: str) -> str:
    """One id as a part of a scope string, so that two different ids never give the same scope.

    An id without ':' and at most MAX_ID_CHARS long is the part itself: every scope written before keeps its exact
    string. Any other id (a Matrix id "@alice:matrix.org", an api_server session key "webui:alice", a very long id)
    is ":" + its percent-encoding (every character but letters, digits and "_.-"), cut to 96 characters plus "~" and
    a hash of the whole id when long. Its scope then holds an empty segment ("user:matrix::%40alice%3Amatrix.org"),
    which no scope of the first kind has, and a scope reads back into its parts one way only."""
    if ":" not in raw and len(raw) <= MAX_ID_CHARS:
        return raw
    body = quote(raw, safe="").replace("~", "%7E")  # "~" only ever marks the hash
    if len(raw) > MAX_ID_CHARS or len(body) > 2 * MAX_ID_CHARS:
        body = body[:96] + "~" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return ":" + body


def old_scope_part(raw: str) -> str:
    """The part the rule before scope_part gave the same id (':' -> '_', cut to 128): where its memories were
    written until then."""
    return raw.replace(":", "_")[:MAX_ID_CHARS]


def _clean(value: Any) -> str:
    """A kwarg as a scope part (scope_part of the trimmed id), or "" when missing or odd."""
    return scope_part(_raw(value))


def user_scope(platform: str, user_id: str) -> str:
    """The scope of one person of a platform, from their raw id."""
    return f"user:{scope_part(platform.strip().lower())}:{scope_part(user_id.strip())}"


def is_owner_id(platform: str, user: str, owner_ids) -> bool:
    """Whether `user` (the raw id, ':' and all) on `platform` is listed in `owner_ids` ("<platform>:<user id>",
    the id may hold ':'; "<platform>:*" is every user of that platform)."""
    for entry in owner_ids or ():
        p, _, u = str(entry).partition(":")
        if p.strip().lower() == platform and (u.strip() == "*" or (user and u.strip() == user)):
            return True
    return False


def _legacy_reads(scope: str, old: str, before: int | None) -> tuple[str, ...]:
    """What an identity reads besides its scope: the scope the old rule gave it, when that differs, for what was
    written there before `before` (what the old string gets later belongs to whoever owns that string now)."""
    if before is None or old == scope:
        return ()
    return (legacy_read(old, before),)


def identify(kwargs: Mapping[str, Any], config, legacy_before: int | None = None) -> Identity:
    """The identity of an agent from `initialize`'s kwargs (platform, user_id, chat_id, ...).

    - CLI-like platforms (cli, tui), kanban workers and `user_scope: owner`: the owner.
    - A gateway user listed in `owner_ids`, in a session of their own: the owner (in a group, events and
      instructions go to the chat: nothing learned in a group becomes a shared instruction).
    - Anyone else in a direct chat: their own scope, for every wing.
    - A member of a group with a session of their own: their persona is theirs; events and instructions concern
      the chat and go to the chat's scope; they read both.
    - A shared session (a thread, or a group without per-user sessions): everything belongs to the chat, whoever
      created the session; nothing in it is trusted.
    - A missing or odd user id: the chat's scope, else the session's; never the owner's, never another user's.

    Ids map to scopes without collisions (`scope_part`). `legacy_before` (a time, from the caller: when this rule
    first ran on the root) also lets an id whose scope string changed read what the old rule wrote for it before then.
    """
    platform = _raw(kwargs.get("platform")).lower() or "cli"
    if platform in OWNER_PLATFORMS:
        return OWNER_IDENTITY
    if getattr(config, "user_scope", "per_user") == "owner":
        return Identity(why=f"user_scope: owner ({platform})")
    raw_user = _raw(kwargs.get("user_id_alt")) or _raw(kwargs.get("user_id"))
    raw_chat, raw_thread = _raw(kwargs.get("chat_id")), _raw(kwargs.get("thread_id"))
    chat_type = _raw(kwargs.get("chat_type")).lower()
    key = _raw(kwargs.get("gateway_session_key"))
    p = scope_part(platform)

    def chat_scope_of(part) -> str:
        return f"chat:{part(platform)}:{part(raw_chat)}" + (f":{part(raw_thread)}" if raw_thread else "") \
            if raw_chat else ""

    chat_scope, old_chat = chat_scope_of(scope_part), chat_scope_of(old_scope_part)

    if not raw_user:
        session = key or _raw(kwargs.get("session_id"))
        fallback = chat_scope or f"session:{p}:{scope_part(session) if session else 'unknown'}"
        old = old_chat or f"session:{old_scope_part(platform)}:{old_scope_part(session) if session else 'unknown'}"
        return Identity((fallback,) + _legacy_reads(fallback, old, legacy_before), _all(fallback), False,
                        f"no user id on {platform}: the chat's own scope")

    person = f"user:{p}:{scope_part(raw_user)}"
    old_person = f"user:{old_scope_part(platform)}:{old_scope_part(raw_user)}"
    group = chat_type in GROUP_CHAT_TYPES or bool(raw_thread)
    owner = is_owner_id(platform, raw_user, config.owner_ids)
    if group and chat_scope:
        per_user = bool(key) and key.endswith(f":{raw_user}") and chat_type != "thread"
        chat_legacy = _legacy_reads(chat_scope, old_chat, legacy_before)
        if not per_user:  # everyone who speaks here shares the session: nobody's persona, nobody's trust
            return Identity((chat_scope,) + chat_legacy, _all(chat_scope), False,
                            f"a shared {chat_type or 'group'} session")
        # Instructions learned in a group are the chat's, whoever speaks: the owner's session there reads the
        # members' lines too, and what it saves must never become an instruction every profile shares.
        writes = {"user": OWNER if owner else person, "episodic": chat_scope, "instruction": chat_scope}
        reads = ((OWNER,) if owner else (person,) + _legacy_reads(person, old_person, legacy_before)) + \
            (chat_scope,) + chat_legacy
        return Identity(reads, writes, False, f"{'the owner' if owner else 'a member'} in a {chat_type or 'group'}")
    if owner:
        return Identity(why=f"the owner on {platform}")
    return Identity((person,) + _legacy_reads(person, old_person, legacy_before), _all(person), False,
                    f"a user on {platform}")


def user_scope_of(text: str) -> str:
    """A CLI `--user` value as a scope: "telegram:123" is that person, "chat:..."/"session:..."/"user:..." pass
    through, "" or "owner" is the owner. Raises ValueError for anything else."""
    text = (text or "").strip()
    if text in ("", "owner"):
        return OWNER
    kind, _, rest = text.partition(":")
    if kind in ("user", "chat", "session") and ":" in rest and not rest.startswith(":") and not text.endswith(":"):
        return text  # a scope as automem prints it (`list --all-users`)
    if kind and rest.strip():
        return user_scope(kind, rest)  # <platform>:<user id>; the id may hold ':' (Matrix)
    raise ValueError(f"--user {text!r}: expected <platform>:<user id> (e.g. telegram:123456789), "
                     f"chat:<platform>:<chat id>, or owner")
