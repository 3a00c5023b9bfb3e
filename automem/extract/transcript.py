"""Transcript preparation: what of a session goes to the extractor (the seed's rules, made safe).

- user and assistant messages only; content may be a string or a list of parts;
- automem's own recalled context is dropped (blocks starting with `RECALL_MARKER`, which the recall code prints),
  and so is Hermes' `<memory-context>` fence with its "[System note: ...]" line: recalled memories must never be
  extracted again;
- secrets are redacted before anything is cut, so a key cut in half cannot slip past the patterns;
- each message is cut to 500 characters, the whole to its last 4000, and fewer than 2 messages are not extracted.

Plain functions, no I/O.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ..text import RECALL_END, RECALL_MARKER, redact_secrets, scrub_surrogates

ROLES = ("user", "assistant")
PREFIX = {"user": "用户", "assistant": "助手"}  # the seed's line prefixes
SEPARATOR = "："


def turn_mark(n: int) -> str:
    """How a turn's number opens its line, and a memory in the model's answer: "[3]"."""
    return f"[{n}]"

# Text longer than this is cut before secrets are redacted (bounds the regex work on a pasted megabyte); the
# private-key pattern also matches an unterminated block, so a cut inside a key still redacts all of it.
_PRE_CUT = 8000
_REDACT_MARGIN = 1000  # longer than any secret shape but a private key (whose pattern also matches a cut-off block)

_MEMORY_CONTEXT = re.compile(r"<\s*memory-context\s*>[\s\S]*?(?:</\s*memory-context\s*>|$)", re.IGNORECASE)
_FENCE_TAG = re.compile(r"</?\s*memory-context\s*>", re.IGNORECASE)
_SYSTEM_NOTE = re.compile(r"\[System note:[^\]]*\]\s*", re.IGNORECASE)
_RECALL_BLOCK = re.compile(re.escape(RECALL_MARKER) + r"[\s\S]*?(?:" + re.escape(RECALL_END) + r"|$)")
_BLANKS = re.compile(r"\n{3,}")
# Messages Hermes writes itself in the user/assistant roles (context-compaction summaries): system text, not the
# user's words, and already extracted when the compression ended that part of the session.
SYSTEM_MESSAGE_PREFIXES = ("[CONTEXT COMPACTION", "[CONTEXT SUMMARY]", "[END OF PRIOR CONTEXT")


def content_text(content: Any) -> str:
    """The text of a message content: a string, or a list of parts (`{"type": "text", "text": ...}`, strings)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return content_text(content.get("text") if "text" in content else content.get("content"))
    if isinstance(content, (list, tuple)):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type", "text") in ("text", "input_text", "output_text"):
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
        return "\n".join(p for p in parts if p)
    return ""


def strip_injected(text: str) -> str:
    """Remove recalled context (automem's blocks, Hermes' memory-context fence and its system note)."""
    text = _RECALL_BLOCK.sub("", text)
    text = _MEMORY_CONTEXT.sub("", text)
    text = _SYSTEM_NOTE.sub("", text)
    text = _FENCE_TAG.sub("", text)
    return _BLANKS.sub("\n\n", text).strip()


@dataclass
class Transcript:
    """The prepared conversation: (role, text) pairs, already redacted and cut."""

    messages: list[tuple[str, str]] = field(default_factory=list)

    @property
    def text(self) -> str:
        """`用户：…` / `助手：…` lines, as in the seed."""
        return "\n".join(f"{PREFIX[role]}{SEPARATOR}{text}" for role, text in self.messages)

    @property
    def numbered(self) -> str:
        """What the LLM reads: the seed's lines, each opened by its turn's number (`[1]用户：…`), so every memory in
        the answer can name the turn it came from (automem.extract.prompt, rule 8)."""
        return "\n".join(f"{turn_mark(n)}{PREFIX[role]}{SEPARATOR}{text}"
                         for n, (role, text) in enumerate(self.messages, 1))

    def turn(self, n: int) -> tuple[str, str] | None:
        """(role, text) of turn `n` (1-based), or None when there is no such turn."""
        return self.messages[n - 1] if isinstance(n, int) and 1 <= n <= len(self.messages) else None

    def user_texts(self) -> list[str]:
        return [text for role, text in self.messages if role == "user"]

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.messages, ensure_ascii=False).encode("utf-8")).hexdigest()

    def to_json(self) -> list[list[str]]:
        return [[role, text] for role, text in self.messages]

    @classmethod
    def from_json(cls, data: Iterable[Sequence[str]]) -> "Transcript":
        return cls([(str(role), str(text)) for role, text in data if role in ROLES])


def clean_message(content: Any, message_chars: int = 500) -> str:
    """One message's text, injected context removed, secrets redacted, cut to `message_chars`."""
    text = scrub_surrogates(content_text(content))  # one undecodable character must not fail the whole job
    if not text:
        return ""
    text = strip_injected(text[:_PRE_CUT] if len(text) > _PRE_CUT else text)
    if text.startswith(SYSTEM_MESSAGE_PREFIXES):
        return ""
    # Only the head is kept; it is redacted with a margin, so a secret cut at the boundary is redacted whole.
    text = redact_secrets(text[:message_chars + _REDACT_MARGIN]).strip()
    return text[:message_chars].rstrip()


def clean_messages(messages: Iterable[Any], message_chars: int = 500) -> list[tuple[str, str]]:
    """(role, text) of every user/assistant message with text left after cleaning, in order."""
    kept: list[tuple[str, str]] = []
    for msg in messages or []:
        if not isinstance(msg, dict):
            continue
        role = msg.get("role")
        if role not in ROLES:
            continue
        text = clean_message(msg.get("content"), message_chars)
        if text:
            kept.append((role, text))
    return kept


def prepare(messages: Iterable[Any], message_chars: int = 500, max_chars: int = 4000,
            min_messages: int = 2) -> Transcript | None:
    """The seed's rules for one transcript: the newest messages within `max_chars`; None when there is too
    little to extract from. (Extraction uses `prepare_windows`, which keeps every message.)"""
    kept = clean_messages(messages, message_chars)
    if len(kept) < min_messages:
        return None
    return Transcript(_keep_last_chars(kept, max_chars))


def prepare_windows(messages: Iterable[Any], message_chars: int = 500, max_chars: int = 4000,
                    min_messages: int = 2) -> list[Transcript]:
    """Every message, in consecutive windows of at most `max_chars` each (one extraction job apiece): a long
    session is extracted whole, not only its tail. [] when the messages are fewer than `min_messages`."""
    kept = clean_messages(messages, message_chars)
    if len(kept) < min_messages:
        return []
    windows: list[Transcript] = []
    current: list[tuple[str, str]] = []
    used = 0
    for role, text in kept:
        room = max_chars - len(PREFIX[role]) - len(SEPARATOR)
        text = text[:max(1, room)]  # only when one message alone is longer than a window
        line = len(PREFIX[role]) + len(SEPARATOR) + len(text)
        if current and used + 1 + line > max_chars:
            windows.append(Transcript(current))
            current, used = [], 0
        used += line + (1 if current else 0)
        current.append((role, text))
    if current:
        windows.append(Transcript(current))
    return windows


def prepare_with(messages: Iterable[Any], config: Any) -> list[Transcript]:
    """`prepare_windows` with the limits of a Config."""
    return prepare_windows(messages, config.transcript_message_chars, config.transcript_max_chars,
                           config.transcript_min_messages)


def _keep_last_chars(kept: list[tuple[str, str]], max_chars: int) -> list[tuple[str, str]]:
    """The newest messages whose lines fit in `max_chars` (the seed keeps the last 4000 characters: the most recent
    content is the most valuable); the oldest kept message is cut at its front, its prefix kept."""
    out: list[tuple[str, str]] = []
    used = 0
    for role, text in reversed(kept):
        line = len(PREFIX[role]) + len(SEPARATOR) + len(text) + (1 if out else 0)
        if used + line <= max_chars:
            out.append((role, text))
            used += line
            continue
        room = max_chars - used - len(PREFIX[role]) - len(SEPARATOR) - (1 if out else 0)
        if room > 0:
            out.append((role, text[-room:].lstrip()))
        break
    out.reverse()
    return [(r, t) for r, t in out if t]


def read_transcript_file(text: str) -> list[dict]:
    """Messages from a transcript file: a JSON list of {"role", "content"}, {"messages": [...]}, or JSONL.

    Raises ValueError with a one-line reason when the text is none of these.
    """
    stripped = text.strip()
    if not stripped:
        raise ValueError("the transcript is empty")
    try:
        data = json.loads(stripped)
    except ValueError:
        data = None
        messages = []
        for n, line in enumerate(stripped.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"line {n}: not JSON ({exc.msg}); expected a JSON list or JSONL of "
                                 f"{{\"role\", \"content\"}}") from None
            if not isinstance(obj, dict):
                raise ValueError(f"line {n}: expected a JSON object with \"role\" and \"content\"") from None
            messages.append(obj)
    else:
        if isinstance(data, dict) and isinstance(data.get("messages"), list):
            data = data["messages"]
        if isinstance(data, dict) and "role" in data:
            data = [data]
        if not isinstance(data, list):
            raise ValueError("expected a JSON list of {\"role\", \"content\"} messages")
        messages = data
    for i, msg in enumerate(messages, 1):
        if not isinstance(msg, dict) or "role" not in msg:
            raise ValueError(f"message {i}: expected an object with \"role\" and \"content\"")
    return messages
