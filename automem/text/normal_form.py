"""The normal form of every text automem keeps: NFKC, control characters removed, whitespace folded, lone
surrogates replaced; and the ways to show stored text safely (`printable`, `json_safe`)."""

from __future__ import annotations

import hashlib
import re
import unicodedata

# Control characters in memory text (issue 27). A terminal acts on escape sequences (colours, clearing the screen,
# setting the window title, OSC 52 writing the clipboard) and a viewer on bidi overrides (U+202E shows
# "exe.gnp" as "png.exe"); none carries meaning in a memory. Whole sequences go first (ESC [ ... final byte, ESC ]
# ... BEL/ST, their C1 forms, ESC + one byte), then single C0 / DEL / C1 controls, bidi embeddings, overrides,
# isolates and marks, and the invisible zero-width space / word joiner / BOM. Whitespace controls (tab, newline,
# CR, VT, FF, NEL, the line and paragraph separators) are whitespace: they become a space. ZWJ / ZWNJ stay (emoji
# sequences, Persian).
_WHITESPACE_CONTROLS = "\t\n\r\x0b\x0c\x1c-\x1f\x85\u2028\u2029"
_CONTROL_SEQ = (r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"  # CSI: parameters, intermediates, final byte
                r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x9c]{0,512}(?:\x07|\x1b\\|\x9c)"  # OSC, DCS, ...
                r"|\x1b[ -/]*[0-~]?")  # any other ESC sequence (an unterminated OSC loses only its ESC ])
_CONTROL_CHAR = "\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\u061c\u200b\u200e\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff"
_CONTROL = re.compile(f"{_CONTROL_SEQ}|[{_CONTROL_CHAR}]")
_CONTROL_ONE = re.compile(f"[{_CONTROL_CHAR}]")
_WS_CONTROL = re.compile(f"[{_WHITESPACE_CONTROLS}]")
_ANY_CONTROL = re.compile(f"[{_CONTROL_CHAR}{_WHITESPACE_CONTROLS}]")


def strip_controls(text: str) -> str:
    """`text` without terminal escape sequences, C0 / C1 controls and bidi controls (see above); whitespace
    controls become spaces."""
    if not _ANY_CONTROL.search(text):
        return text
    return _WS_CONTROL.sub(" ", _CONTROL.sub("", text))


def printable(text: str) -> str:
    """`text` safe to print on a terminal, for records stored before `normalise` removed controls: every control
    character shown as its escape ("\\x1b", "\\u202e"), whitespace controls as a space. Nothing is hidden from the
    reader, nothing acts on the screen."""
    if not _ANY_CONTROL.search(text):
        return text
    return _CONTROL_ONE.sub(_escape, _WS_CONTROL.sub(" ", text))


def _escape(m: re.Match) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def json_safe(line: str) -> str:
    """A `json.dumps(..., ensure_ascii=False)` line with the controls json leaves raw (DEL, C1, bidi, zero-width,
    NEL, U+2028/9) written as \\uXXXX escapes: the same JSON value, nothing a terminal acts on."""
    if not _ANY_CONTROL.search(line):
        return line
    return _ANY_CONTROL.sub(lambda m: f"\\u{ord(m.group(0)):04x}", line)

_SPACE = re.compile(r"\s+")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def normalise(text: str) -> str:
    """NFKC (full-width letters, digits and punctuation to half-width), control characters removed
    (`strip_controls`), whitespace folded, ends trimmed; a lone surrogate (undecodable bytes from a command line or
    a broken client) becomes U+FFFD."""
    text = unicodedata.normalize("NFKC", strip_controls(scrub_surrogates(text)))
    return _SPACE.sub(" ", text).strip()


def scrub_surrogates(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so it can be written as UTF-8."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text



def text_digest(text: str) -> str:
    """A short hash of normalised text: what logs and tombstones keep instead of a memory's words."""
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()[:16]
