"""Where a memory was learned: its evidence (the words it came from, who said them, how it entered the store).

Evidence travels on the write path's `Candidate` and is stored in the memory's own metadata (so it goes wherever the
record goes: export, import, migrate; and `forget` deletes it with the record). Keys, all optional (a record written
before them reads as "not recorded"):

- `source_excerpt`: the source turn in the speaker's own words, at most EXCERPT_CHARS characters, secrets redacted
  (automem.text's rules), whitespace folded. The sentence(s) of the turn the memory shares most words with, so a
  long turn that said several things gives each memory its own part.
- `source_speaker`: who said those words: "owner", a gateway scope ("user:telegram:42", "chat:..."), "assistant"
  (the agent), or "" when unknown.
- `source_role`: the role of the source turn: "user", "assistant", "tool" (a tool's output), or "" when unknown.
  Trust decisions (issue 27) read it: only a "user" turn of the owner is the owner's own words.
- `source_turn`: the turn's number in the transcript window the extractor read (1-based; 0 unknown).
- `origin`: how the memory entered: "extraction", "kanban", "tool" (the agent's memory tool), "mirror" (Hermes'
  built-in memory tool), "cli", "import", "edit".
- `extractor`: what wrote the text: "openai:<model>", "hermes:<model>", "rules", "kanban-hook", "" for the user.

The session, task, profile and time are the memory's own `session_id`, `task_id`, `profile`, `created_at`.
Plain functions, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..text import redact_secrets, scrub_surrogates, strip_controls
from .memory import MAX_EXCERPT_CHARS

EXCERPT_CHARS = MAX_EXCERPT_CHARS  # a few hundred characters: the sentence or two a memory came from
ROLES = ("user", "assistant", "tool", "")
ORIGINS = ("extraction", "kanban", "tool", "mirror", "cli", "import", "edit", "")
OWNER_SPEAKER = "owner"
NOT_RECORDED = "not recorded"

_SPACE = re.compile(r"\s+")
_SENTENCE = re.compile(r"(?<=[。！？!?；;\n])|(?<=[.])\s+")
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")
_REDACT_MARGIN = 1000  # redact before cutting, with room for a secret that straddles the cut


@dataclass
class Evidence:
    """What a candidate memory was learned from (see the module docstring for each field)."""

    excerpt: str = ""
    speaker: str = ""
    role: str = ""
    turn: int = 0
    origin: str = ""
    extractor: str = ""

    def cleaned(self) -> "Evidence":
        """Fit to store: the excerpt redacted and bounded, unknown roles and origins emptied, the turn a count."""
        role = self.role if self.role in ROLES else ""
        try:
            turn = max(0, int(self.turn or 0))
        except (TypeError, ValueError):
            turn = 0
        return Evidence(clean_excerpt(self.excerpt), _short(self.speaker), role, turn,
                        self.origin if self.origin in ORIGINS else "", _short(self.extractor))

    def metadata(self) -> dict[str, Any]:
        """The non-empty keys (Chroma stores one row per key: empty ones are left out, and read back as empty)."""
        out: dict[str, Any] = {"source_excerpt": self.excerpt, "source_speaker": self.speaker,
                               "source_role": self.role, "source_turn": int(self.turn or 0), "origin": self.origin,
                               "extractor": self.extractor}
        return {k: v for k, v in out.items() if v}

    def to_memory(self, memory: Any) -> None:
        """Set these fields on a `Memory`."""
        for key, value in self.metadata().items():
            setattr(memory, key, value)

    @classmethod
    def of(cls, memory: Any) -> "Evidence":
        """The evidence stored on a memory (empty fields: not recorded)."""
        return cls(getattr(memory, "source_excerpt", "") or "", getattr(memory, "source_speaker", "") or "",
                   getattr(memory, "source_role", "") or "", int(getattr(memory, "source_turn", 0) or 0),
                   getattr(memory, "origin", "") or "", getattr(memory, "extractor", "") or "")

    @property
    def recorded(self) -> bool:
        return bool(self.excerpt or self.origin or self.speaker or self.role)

    def to_json(self) -> dict[str, Any]:
        return {"excerpt": self.excerpt, "speaker": self.speaker, "role": self.role, "turn": self.turn,
                "origin": self.origin, "extractor": self.extractor}


def _short(value: Any, limit: int = 160) -> str:
    """A speaker or extractor as stored: a name (a scope, a model), not words anyone said, so it is bounded and
    printable but not put through the secret patterns (they cost a write 0.1 ms a name, and would mask a scope that
    holds a phone number, which the memory's `scope` keeps anyway)."""
    return _SPACE.sub(" ", strip_controls(scrub_surrogates(str(value or "")))).strip()[:limit]


_CLEANED: dict[str, None] = {}  # excerpts this process cleaned lately: cleaning one again changes nothing
_CLEANED_MAX = 512


def clean_excerpt(text: Any, limit: int = EXCERPT_CHARS) -> str:
    """`text` as an excerpt may be stored: control characters out, whitespace folded, secrets redacted (before the
    cut, so a secret cut in half cannot slip past the patterns), at most `limit` characters (cut at the end, marked
    with "…"). An excerpt this function just returned is returned as it is (extraction cleans it, then the write
    path checks it again: the patterns run once)."""
    if not isinstance(text, str) or not text:
        return ""
    if text in _CLEANED and len(text) <= limit:
        return text
    text = _SPACE.sub(" ", strip_controls(scrub_surrogates(text))).strip()
    text = redact_secrets(text[:limit + _REDACT_MARGIN]).strip()
    if len(text) > limit:
        text = text[:limit - 1].rstrip() + "…"
    if len(_CLEANED) >= _CLEANED_MAX:
        _CLEANED.clear()
    _CLEANED[text] = None
    return text


def units(text: str) -> set[str]:
    """What overlap is counted in: lower-cased words and numbers, and CJK character pairs (single characters for a
    one-character run)."""
    out = {w.lower().strip(".-") for w in _WORD.findall(text or "")}
    for run in _CJK.findall(text or ""):
        out.update(run[i:i + 2] for i in range(max(1, len(run) - 1)))
    out.discard("")
    return out


def overlap(a: str, b: str) -> int:
    return len(units(a) & units(b))


def excerpt_of(turn_text: str, memory_text: str, limit: int = EXCERPT_CHARS) -> str:
    """The part of one source turn a memory came from: the whole turn when it fits in `limit`, else its sentence
    sharing the most with the memory, grown by its neighbours while it fits (cleaned: see `clean_excerpt`)."""
    turn_text = _SPACE.sub(" ", scrub_surrogates(turn_text or "")).strip()
    if len(turn_text) <= limit:
        return clean_excerpt(turn_text, limit)
    sentences = [s.strip() for s in _SENTENCE.split(turn_text) if s and s.strip()]
    if not sentences:
        return clean_excerpt(turn_text, limit)
    want = units(memory_text)
    scores = [len(units(s) & want) for s in sentences]
    best = max(range(len(sentences)), key=lambda i: (scores[i], -i))
    lo = hi = best
    size = len(sentences[best])
    while True:  # grow toward the richer neighbour first, while the excerpt fits
        options = [(scores[i], -abs(i - best), i) for i in (lo - 1, hi + 1) if 0 <= i < len(sentences)]
        options = [o for o in options if size + 1 + len(sentences[o[2]]) <= limit]
        if not options:
            break
        i = max(options)[2]
        size += 1 + len(sentences[i])
        lo, hi = min(lo, i), max(hi, i)
    return clean_excerpt(" ".join(sentences[lo:hi + 1]), limit)


def best_turn(turns: list[tuple[str, str]], memory_text: str) -> int:
    """The 1-based number of the turn (role, text) sharing the most with `memory_text`, user turns first on a tie;
    0 when none shares anything (no evidence beats wrong evidence)."""
    want = units(memory_text)
    best, best_key = 0, (0, 0)
    for n, (role, text) in enumerate(turns, 1):
        key = (len(units(text) & want), 1 if role == "user" else 0)
        if key[0] and key > best_key:
            best, best_key = n, key
    return best


ECHO_SHARE = 0.5  # an earlier user turn sharing at least this share of what the assistant's turn shares: its source


def source_turn(turns: list[tuple[str, str]], memory_text: str, named: int = 0) -> int:
    """The turn (1-based; 0 unknown) a memory came from, among (role, text) turns: the one the extractor `named`
    when there is such a turn, else the one sharing the most with the memory (`best_turn`). An assistant's turn that
    repeats what the user said ("明白，项目统一使用Python 3.11") gives way to the nearest earlier user turn sharing
    at least ECHO_SHARE as much: the user's words are the source, the assistant only confirmed them."""
    n = named if isinstance(named, int) and 1 <= named <= len(turns) else best_turn(turns, memory_text)
    if not n or turns[n - 1][0] != "assistant":
        return n
    want = units(memory_text)
    shared = len(units(turns[n - 1][1]) & want)
    for u in range(n - 1, 0, -1):
        if turns[u - 1][0] == "user":
            common = len(units(turns[u - 1][1]) & want)
            if common and common >= ECHO_SHARE * shared:
                return u
    return n


def speaker_for(role: str, user_speaker: str) -> str:
    """Who said a turn of `role` in a conversation whose user is `user_speaker` ("owner" or a scope)."""
    if role == "user":
        return user_speaker or OWNER_SPEAKER
    if role == "assistant":
        return "assistant"
    return role


def describe(evidence: Evidence) -> str:
    """One line: "turn 3 (user, owner), extraction by rules" (NOT_RECORDED when nothing is)."""
    if not evidence.recorded:
        return NOT_RECORDED
    who = ", ".join(dict.fromkeys(x for x in (evidence.role, evidence.speaker) if x))
    parts = []
    if evidence.turn:
        parts.append(f"turn {evidence.turn}" + (f" ({who})" if who else ""))
    elif who:
        parts.append(f"said by {who}")
    if evidence.origin:
        parts.append(evidence.origin + (f" by {evidence.extractor}" if evidence.extractor else ""))
    return ", ".join(parts) or NOT_RECORDED
