"""Whether a text may be stored: its length within the limits, no secret, no personal data; the text as stored
(normalised, fences defused)."""

from __future__ import annotations

import re

from .fence import neutralise_fences
from .normal_form import normalise
from .redact import find_secret
from .secret_patterns import PERSONAL_DATA_KINDS

MIN_CHARS = 5  # a Chinese, Japanese or Korean character counts two: "我爱喝茶" (I love tea) is a whole fact
MAX_CHARS = 200
# Chinese, Japanese (kana) and Korean characters: here for the minimum, in automem.core.index_words for segmenting.
CJK_CHARACTER = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"
_CJK = re.compile(CJK_CHARACTER)


def _width(text: str) -> int:
    return len(text) + len(_CJK.findall(text))


def validate(text: object) -> tuple[str | None, str | None]:
    """(normalised text, None) when `text` may be stored, else (None, reason)."""
    if not isinstance(text, str):
        return None, f"not a string ({type(text).__name__})"
    norm = normalise(text)
    if _width(norm) < MIN_CHARS:
        return None, f"too short ({len(norm)} characters)"
    if len(norm) > MAX_CHARS:
        return None, f"too long ({len(norm)} > {MAX_CHARS} characters)"
    if "[REDACTED" in norm:
        return None, "contains a redacted secret"
    kind = find_secret(norm)
    if kind in PERSONAL_DATA_KINDS:
        return None, f"contains personal data ({kind})"  # the kind, never the value
    if kind:
        return None, f"looks like a secret ({kind})"
    return neutralise_fences(norm), None
