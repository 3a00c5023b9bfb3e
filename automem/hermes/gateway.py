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

from typing import Any, Mapping

from ..core.identity import OWNER_IDENTITY, Identity
from ..core.memory import OWNER, WINGS

# Platforms where the one person at the keyboard is whoever runs Hermes: the owner.
OWNER_PLATFORMS = frozenset({"", "cli", "tui", "acp"})
GROUP_CHAT_TYPES = frozenset({"group", "channel", "thread", "supergroup"})


def _all(scope: str) -> dict[str, str]:
    return {w: scope for w in WINGS}


def _clean(value: Any) -> str:
    """A kwarg as a scope part: a string without the separator, or "" when missing or odd."""
    if value is None or isinstance(value, bool) or not isinstance(value, (str, int)):
        return ""
    return str(value).strip().replace(":", "_")[:128]


def is_owner_id(platform: str, user: str, owner_ids) -> bool:
    for entry in owner_ids or ():
        p, _, u = str(entry).partition(":")
        if p == platform and (u == "*" or (user and u == user)):
            return True
    return False


def identify(kwargs: Mapping[str, Any], config) -> Identity:
    """The identity of an agent from `initialize`'s kwargs (platform, user_id, chat_id, ...).

    - CLI-like platforms (cli, tui), kanban workers and `user_scope: owner`: the owner.
    - A gateway user listed in `owner_ids`, in a session of their own: the owner (in a group, what concerns the
      chat still goes to the chat).
    - Anyone else in a direct chat: their own scope, for every wing.
    - A member of a group with a session of their own: their persona is theirs; events and instructions concern
      the chat and go to the chat's scope; they read both.
    - A shared session (a thread, or a group without per-user sessions): everything belongs to the chat, whoever
      created the session; nothing in it is trusted.
    - A missing or odd user id: the chat's scope, else the session's; never the owner's, never another user's.
    """
    platform = _clean(kwargs.get("platform")).lower() or "cli"
    if platform in OWNER_PLATFORMS:
        return OWNER_IDENTITY
    if getattr(config, "user_scope", "per_user") == "owner":
        return Identity(why=f"user_scope: owner ({platform})")
    user = _clean(kwargs.get("user_id_alt")) or _clean(kwargs.get("user_id"))
    chat = _clean(kwargs.get("chat_id"))
    thread = _clean(kwargs.get("thread_id"))
    chat_type = _clean(kwargs.get("chat_type")).lower()
    key = str(kwargs.get("gateway_session_key") or "").strip()
    chat_scope = f"chat:{platform}:{chat}" + (f":{thread}" if thread else "") if chat else ""

    if not user:
        fallback = chat_scope or f"session:{platform}:{_clean(key) or _clean(kwargs.get('session_id')) or 'unknown'}"
        return Identity((fallback,), _all(fallback), False, f"no user id on {platform}: the chat's own scope")

    user_scope = f"user:{platform}:{user}"
    group = chat_type in GROUP_CHAT_TYPES or bool(thread)
    if group and chat_scope:
        per_user = bool(key) and key.endswith(f":{kwargs.get('user_id_alt') or kwargs.get('user_id')}") \
            and chat_type != "thread"
        if not per_user:  # everyone who speaks here shares the session: nobody's persona, nobody's trust
            return Identity((chat_scope,), _all(chat_scope), False, f"a shared {chat_type or 'group'} session")
        owner = is_owner_id(platform, user, config.owner_ids)
        writes = {"user": OWNER if owner else user_scope, "episodic": chat_scope,
                  "instruction": OWNER if owner else chat_scope}
        reads = ((OWNER,) if owner else (user_scope,)) + (chat_scope,)
        return Identity(reads, writes, owner, f"{'the owner' if owner else 'a member'} in a {chat_type or 'group'}")
    if is_owner_id(platform, user, config.owner_ids):
        return Identity(why=f"the owner on {platform}")
    return Identity((user_scope,), _all(user_scope), False, f"a user on {platform}")


def user_scope_of(text: str) -> str:
    """A CLI `--user` value as a scope: "telegram:123" is that person, "chat:..."/"session:..."/"user:..." pass
    through, "" or "owner" is the owner. Raises ValueError for anything else."""
    text = (text or "").strip()
    if text in ("", "owner"):
        return OWNER
    kind, _, rest = text.partition(":")
    if kind in ("user", "chat", "session") and ":" in rest and all(rest.split(":")):
        return text
    if kind and rest and ":" not in rest:
        return f"user:{kind}:{rest}"
    raise ValueError(f"--user {text!r}: expected <platform>:<user id> (e.g. telegram:123456789), "
                     f"chat:<platform>:<chat id>, or owner")
