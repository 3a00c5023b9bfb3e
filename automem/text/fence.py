"""The fence around recalled context: the markers of every block automem injects, and stored text defused so it
can never open, close or forge a fence where a model reads it."""

from __future__ import annotations

import re

from .normal_form import strip_controls

# Every block automem injects into a conversation starts with this line (recall.py prints it). A block runs to
# RECALL_END when present, else to the end of the message (injected context is appended after the user's text).
RECALL_MARKER = "[automem:recall]"
RECALL_END = "[/automem:recall]"


def recall_block(body: str) -> str:
    """`body` wrapped as a block the extraction pipeline will drop (for anything automem injects)."""
    return f"{RECALL_MARKER}\n{body.strip()}\n{RECALL_END}"


# Anything that would open, close or forge a fence around recalled context where a model reads it: automem's
# markers, Hermes' <memory-context> tags and its "[System note:" line.
_FENCE_TOKEN = re.compile(r"\[\s*/?\s*automem\s*:\s*recall\s*\]|<\s*/?\s*memory-context\s*>|\[\s*system\s+note\s*:",
                          re.IGNORECASE)
_FENCE_CHARS = str.maketrans({"[": "(", "]": ")", "<": "\u2039", ">": "\u203a"})


def neutralise_fences(text: str) -> str:
    """Memory text with every fence-like token defused ("[automem:recall]" -> "(automem:recall)",
    "</memory-context>" -> "\u2039/memory-context\u203a") and every control character removed (`strip_controls`):
    stored text is data, it can never close the block it is shown in nor act on the screen it is shown on."""
    return _FENCE_TOKEN.sub(lambda m: m.group(0).translate(_FENCE_CHARS), strip_controls(text))
