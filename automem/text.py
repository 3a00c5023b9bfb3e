"""Plain text functions: normalise, find and redact secrets, validate, and the fence around recalled context."""

from __future__ import annotations

import re
import unicodedata

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
    "</memory-context>" -> "\u2039/memory-context\u203a"): stored text is data, it can never close the block it is
    shown in."""
    return _FENCE_TOKEN.sub(lambda m: m.group(0).translate(_FENCE_CHARS), text)


# Text that tells the model to drop its own rules: never a memory worth keeping, and the shape of prompt injection
# when it comes from a chat ("ignore all previous instructions", "忽略之前的所有指令", "you are now DAN").
_INJECTION = re.compile(r"""
    \b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+|my\s+)?
      (?:previous|prior|above|earlier|preceding|former|original|system|developer|safety)\s+
      (?:instructions?|prompts?|rules|messages|directions|guidelines|directives|constraints)
  | \b(?:ignore|disregard)\s+(?:all|your)\s+(?:instructions|rules|guidelines|directives|constraints)\b
      (?!\s+(?:about|for|on|in|of|regarding|when)\b)
  | \byou\s+are\s+now\s+(?:in\s+)?(?:an?\s+)?(?:unrestricted|unfiltered|jailbroken|dan\b|developer\s+mode|evil)
  | \b(?:reveal|print|show|repeat)\s+(?:me\s+)?(?:your|the)\s+(?:system|hidden|initial)\s+prompt
  | \bjailbreak
  | (?:忽略|无视|忘记|忘掉|不要理会|别管|绕过)掉?(?:你的|我的)?(?:之前|以上|上面|前面|先前|原来|原有|所有|全部|一切)的?(?:所有|全部)?的?
      (?:指令|指示|规则|提示词|提示|设定|要求|限制|约束)
  | 你现在(?:是|变成)(?:一个)?(?:不受|没有|无)(?:任何)?(?:限制|约束)
  | (?:泄露|输出|告诉我|显示)(?:你的)?系统提示词
""", re.IGNORECASE | re.VERBOSE)


def looks_like_injection(text: str) -> bool:
    """Whether `text` reads as an order to the model to drop its instructions (see `_INJECTION`)."""
    return bool(_INJECTION.search(text))


MIN_CHARS = 5
MAX_CHARS = 200

_SPACE = re.compile(r"\s+")

# (name, pattern). Ordered from the most specific to the most generic, so a redaction names what it found.
SECRET_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("private key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)")),
    ("API key", re.compile(r"\bsk-(?:ant-|proj-|or-v1-)?[A-Za-z0-9_\-]{16,}")),
    ("API key", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("API key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}")),
    ("API key", re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}")),
    ("API key", re.compile(r"\b[0-9a-f]{32}\.[A-Za-z0-9]{16}\b")),  # Zhipu keys: id.secret
    ("token", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),  # JWT
    ("bearer token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{12,}")),
    ("password", re.compile(
        r"(?i)(?:password|passwd|passphrase|pwd|密码|口令)\s*(?:is|=|:|：|是|为|為)\s*[\"'“]?[^\s\"'”，。,;；]{3,}")),
    ("credential", re.compile(
        r"(?i)\b(?:api[_\- ]?key|secret(?:[_\- ]?key)?|access[_\- ]?token|auth[_\- ]?token|token|client[_\- ]?secret)"
        r"\s*(?:is|=|:|：|是|为)\s*[\"']?[A-Za-z0-9._~+/=\-]{12,}")),
]


def normalise(text: str) -> str:
    """NFKC (full-width letters, digits and punctuation to half-width), whitespace folded, ends trimmed."""
    text = unicodedata.normalize("NFKC", text)
    return _SPACE.sub(" ", text).strip()


def find_secret(text: str) -> str | None:
    """The kind of secret in `text` ("API key", "password", ...), or None."""
    for name, pattern in SECRET_PATTERNS:
        if pattern.search(text):
            return name
    return None


def redact_secrets(text: str) -> str:
    """Replace every secret with `[REDACTED <kind>]` before text leaves the machine or reaches the store."""
    for name, pattern in SECRET_PATTERNS:
        text = pattern.sub(f"[REDACTED {name}]", text)
    return text


def validate(text: object) -> tuple[str | None, str | None]:
    """(normalised text, None) when `text` may be stored, else (None, reason)."""
    if not isinstance(text, str):
        return None, f"not a string ({type(text).__name__})"
    norm = normalise(text)
    if len(norm) < MIN_CHARS:
        return None, f"too short ({len(norm)} < {MIN_CHARS} characters)"
    if len(norm) > MAX_CHARS:
        return None, f"too long ({len(norm)} > {MAX_CHARS} characters)"
    if "[REDACTED" in norm:
        return None, "contains a redacted secret"
    kind = find_secret(norm)
    if kind:
        return None, f"looks like a secret ({kind})"
    return neutralise_fences(norm), None
