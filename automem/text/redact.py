"""Finding secrets and personal data in text (`secret_spans`, `find_secret`) and redacting them
(`redact_secrets`), with the patterns of `secret_patterns.py`."""

from __future__ import annotations

import unicodedata

from .secret_patterns import SECRET_PATTERNS


def _folded(text: str) -> tuple[str, list[int]] | None:
    """`text` as the patterns read it (NFKC: full-width "１３９…" and "ｓｋ－…" as ASCII), one character at a time,
    with where each folded character came from in `text`; None when `text` is folded already (the usual case)."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return None
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        folded = unicodedata.normalize("NFKC", ch)
        out.append(folded)
        where.extend([i] * len(folded))
    return "".join(out), where


def secret_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every secret in `text`, left to right, overlaps merged (the earlier pattern names it).
    Raw text is read folded (`_folded`), so redaction finds what `validate` finds on normalised text."""
    folded = _folded(text)
    subject = folded[0] if folded else text
    found: list[tuple[int, int, str]] = []
    for pattern in SECRET_PATTERNS:
        for start, end in pattern.spans(subject):
            if folded:
                start, end = folded[1][start], folded[1][end - 1] + 1
            found.append((start, end, pattern.kind))
    found.sort(key=lambda s: (s[0], -s[1]))
    merged: list[tuple[int, int, str]] = []
    for start, end, kind in found:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], end), last[2])
        else:
            merged.append((start, end, kind))
    return merged


def find_secret(text: str) -> str | None:
    """The kind of secret in `text` ("API key", "password", ...), or None."""
    for pattern in SECRET_PATTERNS:
        for _ in pattern.spans(text):
            return pattern.kind
    return None


def redact_secrets(text: str, placeholder: str | None = None) -> str:
    """Replace every secret with `[REDACTED <kind>]` (or `placeholder`) before text leaves the machine or reaches
    a file. Labels stay ("password: [REDACTED password]"), so what remains still reads."""
    if not text:
        return text
    spans = secret_spans(text)
    if not spans:
        return text
    out, pos = [], 0
    for start, end, kind in spans:
        out.append(text[pos:start])
        out.append(placeholder if placeholder is not None else f"[REDACTED {kind}]")
        pos = end
    out.append(text[pos:])
    return "".join(out)
