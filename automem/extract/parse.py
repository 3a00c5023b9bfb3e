"""Tolerant parsing of the extraction model's answer.

Models wrap JSON in code fences or prose, think aloud in `<think>` blocks, answer objects where strings were
asked for, invent or drop keys, leave trailing commas, and run out of tokens mid-answer. This module gets the
memories out of all of that; what it cannot use raises `ParseError` (retryable: the job is tried again), and what
it leaves out is named in `Extraction.notes`, never dropped silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import LLMError

CATEGORIES = ("persona", "episodic", "instruction")

# Keys models use for the three categories (lower-cased, spaces/dashes as underscores).
CATEGORY_ALIASES = {
    "persona": "persona", "personas": "persona", "preference": "persona", "preferences": "persona",
    "user": "persona", "profile": "persona", "habits": "persona", "habit": "persona", "用户": "persona",
    "偏好": "persona", "用户偏好": "persona",
    "episodic": "episodic", "episode": "episodic", "episodes": "episodic", "event": "episodic",
    "events": "episodic", "事件": "episodic",
    "instruction": "instruction", "instructions": "instruction", "rule": "instruction", "rules": "instruction",
    "workflow": "instruction", "workflows": "instruction", "procedure": "instruction", "指令": "instruction",
    "规则": "instruction",
}
CONTAINER_KEYS = ("memories", "memory", "items", "results", "result", "data", "extracted", "output")
TEXT_KEYS = ("content", "text", "memory", "value", "fact", "description", "statement", "item", "summary")
KIND_KEYS = ("category", "type", "kind", "wing")

EMPTY_ANSWERS = {"", "无", "无。", "没有", "没有。", "none", "null", "nil", "n/a", "{}", "[]", "空", "（无）", "(none)"}
_PLACEHOLDER = re.compile(r"^(?:字符串\d*|string\d*|\.\.\.|…+)$", re.IGNORECASE)
_THINK = re.compile(r"<(think|thinking|reasoning)>[\s\S]*?</\1>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<(?:think|thinking|reasoning)>", re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?([\s\S]*?)(?:```|$)")


class ParseError(LLMError):
    """The answer holds nothing usable; the job is retried."""

    def __init__(self, message: str):
        super().__init__(message, retryable=True)


@dataclass
class Item:
    category: str
    text: str
    turn: int = 0  # the transcript turn it came from (1-based; 0: not named)
    source: str = ""  # the words it came from, when the extractor knows them exactly (the rules' sentence)


# The turn a memory names (prompt rule 8): "[3]…" in front, or, as models also write it, "…[3]" at the end; full-width
# brackets too. At most 4 digits: a number in brackets that long is part of the memory.
_TURN_HEAD = re.compile(r"^\s*[\[【［]\s*(\d{1,4})\s*[\]】］]\s*[:：.、\-]?\s*")
_TURN_TAIL = re.compile(r"\s*[\[【［]\s*(\d{1,4})\s*[\]】］]\s*$")


def split_turn(text: str) -> tuple[str, int]:
    """(memory text without its turn mark, the turn; 0 when it names none)."""
    m = _TURN_HEAD.match(text) or _TURN_TAIL.search(text)
    if not m:
        return text, 0
    rest = (text[:m.start()] + text[m.end():]).strip()
    return (rest, int(m.group(1))) if rest else (text, 0)


@dataclass
class Extraction:
    items: list[Item] = field(default_factory=list)
    truncated: bool = False
    notes: list[str] = field(default_factory=list)  # what was left out, and why

    def by_category(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {c: [] for c in CATEGORIES}
        for item in self.items:
            out[item.category].append(item.text)
        return out


# -- a forgiving JSON reader ----------------------------------------------------------------------------------
class _Truncated(Exception):
    """The text ended inside a value; `value` holds the complete part read so far (None for a scalar)."""

    def __init__(self, value: Any = None):
        self.value = value


class _Bad(Exception):
    pass


class _Reader:
    """JSON plus what models write: trailing commas, single-quoted strings, bare words, comments; at the end of
    the text it raises `_Truncated` with every complete element read so far."""

    def __init__(self, text: str, pos: int):
        self.s, self.i = text, pos

    def ws(self) -> None:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\r\n\ufeff\u3000":
                self.i += 1
            elif s.startswith("//", self.i):
                nl = s.find("\n", self.i)
                self.i = len(s) if nl < 0 else nl + 1
            else:
                return

    def value(self) -> Any:
        self.ws()
        if self.i >= len(self.s):
            raise _Truncated(None)
        c = self.s[self.i]
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        if c in "\"'“":
            return self.string()
        return self.bare()

    def obj(self) -> dict:
        self.i += 1
        out: dict = {}
        while True:
            self.ws()
            if self.i >= len(self.s):
                raise _Truncated(out)
            c = self.s[self.i]
            if c == "}":
                self.i += 1
                return out
            if c == ",":
                self.i += 1
                continue
            try:
                key = self.string() if c in "\"'“" else self.bare_key()
            except _Truncated:
                raise _Truncated(out) from None
            self.ws()
            if self.i >= len(self.s):
                raise _Truncated(out)
            if self.s[self.i] not in ":：":
                raise _Bad(f"expected ':' after key at {self.i}")
            self.i += 1
            try:
                out[str(key)] = self.value()
            except _Truncated as t:
                if isinstance(t.value, (list, dict)):
                    out[str(key)] = t.value
                raise _Truncated(out) from None

    def arr(self) -> list:
        self.i += 1
        out: list = []
        while True:
            self.ws()
            if self.i >= len(self.s):
                raise _Truncated(out)
            c = self.s[self.i]
            if c == "]":
                self.i += 1
                return out
            if c in ",，":
                self.i += 1
                continue
            try:
                out.append(self.value())
            except _Truncated as t:
                if isinstance(t.value, (list, dict)) and t.value:
                    out.append(t.value)
                raise _Truncated(out) from None

    def string(self) -> str:
        quote = self.s[self.i]
        close = "”" if quote == "“" else quote
        self.i += 1
        buf = []
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c == "\\":
                if self.i + 1 >= len(s):
                    raise _Truncated(None)
                n = s[self.i + 1]
                if n == "u":
                    hexpart = s[self.i + 2:self.i + 6]
                    if len(hexpart) < 4:
                        raise _Truncated(None)
                    try:
                        buf.append(chr(int(hexpart, 16)))
                    except ValueError:
                        buf.append(hexpart)
                    self.i += 6
                    continue
                buf.append({"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}.get(n, n))
                self.i += 2
                continue
            if c == close:
                self.i += 1
                return "".join(buf)
            buf.append(c)
            self.i += 1
        raise _Truncated(None)

    _BARE = re.compile(r"[^,:：\]\}\s\"']+")

    def bare(self) -> Any:
        m = self._BARE.match(self.s, self.i)
        if not m:
            raise _Bad(f"unexpected {self.s[self.i]!r} at {self.i}")
        word = m.group(0)
        self.i = m.end()
        if self.i >= len(self.s):
            raise _Truncated(None)  # a bare word at the very end may be cut
        low = word.lower()
        if low in ("true", "false"):
            return low == "true"
        if low in ("null", "none", "nil"):
            return None
        try:
            return float(word) if any(ch in word for ch in ".eE") else int(word)
        except ValueError:
            return word

    def bare_key(self) -> str:
        m = re.compile(r"[^:：\s,\}]+").match(self.s, self.i)
        if not m:
            raise _Bad(f"unexpected {self.s[self.i]!r} at {self.i}")
        self.i = m.end()
        if self.i >= len(self.s):
            raise _Truncated(None)
        return m.group(0)


def read_json(text: str, pos: int = 0) -> tuple[Any, bool]:
    """(value, complete) of the JSON value starting at `pos`; complete=False when the text ended inside it.

    Raises ValueError when there is no readable value there.
    """
    try:
        return _Reader(text, pos).value(), True
    except _Truncated as t:
        if t.value is None:
            raise ValueError("the text ends inside a value") from None
        return t.value, False
    except _Bad as exc:
        raise ValueError(str(exc)) from None
    except RecursionError:
        raise ValueError("nested too deeply") from None


# -- from text to memories ------------------------------------------------------------------------------------
def strip_thinking(text: str) -> tuple[str, bool]:
    """(text without <think> blocks, whether an unclosed <think> swallowed the rest)."""
    text = _THINK.sub("", text)
    m = _THINK_OPEN.search(text)
    if m:
        return text[:m.start()], True
    return text, False


def _candidates(text: str) -> list[str]:
    """Where the JSON may be: each fenced block first (a reply may quote the prompt's example before the answer),
    then the whole text."""
    out = [m.group(1) for m in _FENCE.finditer(text) if m.group(1).strip()]
    out.append(text)
    return out


def _key(key: str) -> str:
    return re.sub(r"[\s\-]+", "_", str(key).strip().lower())


def _score(value: Any) -> int:
    """How much `value` looks like an extraction answer (0: not at all)."""
    if isinstance(value, dict):
        keys = {_key(k) for k in value}
        if keys & set(CATEGORY_ALIASES):
            return 3
        if keys & set(CONTAINER_KEYS):
            return 2
        return 1 if not value else 0
    if isinstance(value, list):
        if all(isinstance(v, dict) and any(_key(k) in KIND_KEYS for k in v) for v in value) and value:
            return 2
        return 1 if value and all(isinstance(v, str) for v in value) else 0
    return 0


def find_answer(text: str) -> tuple[Any, bool] | None:
    """The most answer-like JSON value in `text` and whether it was complete; None when there is none."""
    best: tuple[int, Any, bool] | None = None
    for chunk in _candidates(text):
        starts = [m.start() for m in re.finditer(r"[\{\[]", chunk)][:200]
        for pos in starts:
            try:
                value, complete = read_json(chunk, pos)
            except ValueError:
                continue
            score = _score(value)
            if score and (best is None or score > best[0]):
                best = (score, value, complete)
                if score == 3:
                    return value, complete
    return (best[1], best[2]) if best else None


def _text_of(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for k in TEXT_KEYS:
            for key, v in value.items():
                if _key(key) == k and isinstance(v, str):
                    return v
        for key, v in value.items():
            if isinstance(v, str) and _key(key) not in KIND_KEYS:
                return v
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _turn_of(value: dict) -> int:
    """A turn given as a field ({"text": ..., "turn": 3}), as a model answering objects may."""
    for key, v in value.items():
        if (_key(key) in ("turn", "line", "source_turn", "行号") and isinstance(v, (int, str))
                and not isinstance(v, bool)):
            try:
                n = int(str(v).strip("[]【】 "))
            except ValueError:
                return 0
            return n if 0 < n < 10_000 else 0
    return 0


def _kind_of(value: dict) -> str | None:
    for key, v in value.items():
        if _key(key) in KIND_KEYS and isinstance(v, str):
            return CATEGORY_ALIASES.get(_key(v)) or {"user": "persona"}.get(_key(v))
    return None


def to_extraction(value: Any, complete: bool, classify: Callable[[str], str] | None = None) -> Extraction:
    """Memories from a parsed answer. `classify` files a memory that came without a category."""
    result = Extraction(truncated=not complete)

    def add(category: str, raw: Any, where: str) -> None:
        text = _text_of(raw)
        if text is None:
            result.notes.append(f"{where}: not a text ({type(raw).__name__}), left out")
            return
        text = " ".join(text.split())
        if not text:
            return
        if _PLACEHOLDER.match(text):
            result.notes.append(f"{where}: the prompt's placeholder {text!r}, left out")
            return
        if isinstance(raw, dict):
            category = _kind_of(raw) or category
        text, turn = split_turn(text)
        if isinstance(raw, dict) and not turn:
            turn = _turn_of(raw)
        result.items.append(Item(category, text, turn))

    def walk_dict(obj: dict, where: str) -> None:
        for key, val in obj.items():
            k = _key(key)
            cat = CATEGORY_ALIASES.get(k)
            if cat is None and k in CONTAINER_KEYS:
                walk(val, f"{where}{key}.")
                continue
            if cat is None:
                result.notes.append(f"unknown key {key!r} left out")
                continue
            values = val if isinstance(val, list) else ([] if val in (None, "", {}) else [val])
            for i, v in enumerate(values):
                add(cat, v, f"{where}{key}[{i}]")

    def walk(val: Any, where: str) -> None:
        if isinstance(val, dict):
            if _kind_of(val) and _text_of(val):
                add(_kind_of(val) or "persona", val, where.rstrip("."))
            else:
                walk_dict(val, where)
        elif isinstance(val, list):
            for i, v in enumerate(val):
                if isinstance(v, dict) and _kind_of(v):
                    add(_kind_of(v) or "persona", v, f"{where}[{i}]")
                elif isinstance(v, str) and classify is not None:
                    add(classify(v), v, f"{where}[{i}]")
                elif isinstance(v, dict):
                    walk_dict(v, f"{where}[{i}].")
                else:
                    result.notes.append(f"{where}[{i}]: no category, left out")
        elif val is not None:
            result.notes.append(f"{where or 'answer'}: {type(val).__name__} left out")

    walk(value, "")
    seen: set[tuple[str, str]] = set()
    unique: list[Item] = []
    for item in result.items:
        if (item.category, item.text) not in seen:
            seen.add((item.category, item.text))
            unique.append(item)
    result.items = unique
    if result.truncated:
        result.notes.append("the answer was cut off; its complete memories are kept")
    return result


def parse_extraction(content: str | None, classify: Callable[[str], str] | None = None,
                     finish_reason: str | None = None) -> Extraction:
    """The memories in a model's answer. An empty answer ("无", null, {}) is an empty Extraction; an answer that
    holds nothing usable raises ParseError."""
    if content is None:
        return Extraction()
    if not isinstance(content, str):
        content = str(content)
    text, cut_in_thinking = strip_thinking(content)
    text = text.strip()
    if text.strip("`").strip().lower().removeprefix("json").strip() in EMPTY_ANSWERS:
        if cut_in_thinking:
            raise ParseError("the answer ended inside <think> before any JSON (raise extract_max_tokens?)")
        return Extraction()
    found = find_answer(text)
    if found is None:
        raise ParseError(f"no JSON memories in the answer: {_preview(content)}")
    value, complete = found
    if finish_reason == "length":
        complete = False
    result = to_extraction(value, complete, classify)
    if not result.items and result.truncated:
        raise ParseError(f"the answer was cut off before its first memory: {_preview(content)}")
    return result


def _preview(text: str, n: int = 80) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= n else flat[:n] + "…")


def parse_judge(content: str | None, n: int) -> list[str]:
    """The judge's answers ("duplicate" | "update" | "new" per pair); unusable answers raise ParseError."""
    text, _ = strip_thinking(content or "")
    for chunk in _candidates(text):
        for m in re.finditer(r"\[", chunk):
            try:
                value, _complete = read_json(chunk, m.start())
            except ValueError:
                continue
            if isinstance(value, list) and value:
                out = []
                for v in value[:n]:
                    word = _text_of(v) if not isinstance(v, str) else v
                    word = (word or "").strip().lower()
                    out.append(word if word in ("duplicate", "update", "new") else "")
                return out + [""] * (n - len(out))
    raise ParseError(f"the judge did not answer a JSON list: {_preview(text)}")
