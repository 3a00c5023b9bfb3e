"""JSON input from the user (export files, `add --file`, `search --file`, transcripts), with every failure as one
line naming where: not UTF-8, not JSON, nested too deeply, a lone surrogate escape."""

from __future__ import annotations

import json
from typing import Any, Iterator

from ..errors import UsageError
from ..text import scrub_surrogates

MAX_JSON_DEPTH = 64  # deeper nesting is not a memory file; json would recurse until it fails
MAX_LINE_BYTES = 1 << 20  # a line of JSONL input (a memory, a query) is far shorter


def decode_utf8(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{where}: not valid UTF-8 (byte {exc.start + 1}); save the file as UTF-8") from None


def check_depth(text: str, where: str) -> None:
    depth = max_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise UsageError(f"{where}: JSON nested {depth} levels deep (at most {MAX_JSON_DEPTH})")


def loads(text: str, where: str) -> Any:
    """json.loads with every failure as one line: bad JSON, nesting too deep, a lone surrogate escape."""
    check_depth(text, where)
    try:
        obj = json.loads(text)
    except RecursionError:
        raise UsageError(f"{where}: JSON nested too deeply") from None
    except ValueError as exc:
        raise UsageError(f"{where}: not JSON ({getattr(exc, 'msg', exc)})") from None
    bad = surrogate_in(obj)
    if bad:
        raise UsageError(f"{where}: {bad} holds a lone surrogate escape (\\ud800-\\udfff): not text")
    return obj


def max_depth(text: str) -> int:
    """The deepest bracket nesting outside strings (cheap, and no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def surrogate_in(obj: Any, where: str = "a value") -> str | None:
    """Where in a JSON value a lone surrogate sits ("a key", "field 'text'", ...), or None."""
    if isinstance(obj, str):
        return where if scrub_surrogates(obj) != obj else None
    if isinstance(obj, dict):
        for k, v in obj.items():
            found = surrogate_in(k, "a key") or surrogate_in(v, f"field {k!r}")
            if found:
                return found
    if isinstance(obj, list):
        for v in obj:
            found = surrogate_in(v, where)
            if found:
                return found
    return None


def check_line(line: bytes, where: str, max_bytes: int = MAX_LINE_BYTES) -> None:
    if len(line) > max_bytes:
        raise UsageError(f"{where}: a line of {len(line)} bytes (at most {max_bytes})")


def jsonl_objects(raw: bytes, name: str, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line of JSONL `raw` (read from `name`); UsageError at the first
    line that is not a JSON object, or longer than `max_line_bytes`."""
    for n, line in enumerate(raw.splitlines(), 1):
        check_line(line, f"{name}:{n}", max_line_bytes)
        text = decode_utf8(line, f"{name}:{n}")
        if not text.strip():
            continue
        obj = loads(text, f"{name}:{n}")
        if not isinstance(obj, dict):
            raise UsageError(f"{name}:{n}: expected a JSON object")
        yield n, obj
