"""Plain text functions: normalise, find and redact secrets, validate, and the fence around recalled context."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterator

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
_SURROGATE = re.compile(r"[\ud800-\udfff]")


@dataclass(frozen=True)
class SecretPattern:
    """One shape of secret. `group` is the part replaced (0: the whole match, else the value after its label);
    `check`, when given, must accept that part (it keeps look-alikes such as "password manager" out)."""

    kind: str
    source: str  # compiled on first use: some 35 patterns would cost ~25 ms of every Hermes start
    group: int | str = 0
    check: Callable[[str], bool] | None = None
    needle: str = ""  # a literal every match contains: text without it is skipped at once

    @cached_property
    def regex(self) -> re.Pattern:
        return re.compile(self.source)

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        if self.needle and self.needle not in text:
            return
        for m in self.regex.finditer(text):
            value = m.group(self.group)
            if value and not value.startswith("[REDACTED") and (self.check is None or self.check(value)):
                yield m.span(self.group)


def _has_digit_or_symbol(value: str) -> bool:
    core = value.rstrip(".,;:!?)]}\"'”’")
    return len(core) >= 3 and any(not c.isalpha() for c in core)


# Words that follow "password is" in ordinary sentences ("the password is required").
_NOT_A_PASSWORD = frozenset("""required needed wrong incorrect invalid expired missing empty set changed reset
    too not the a an my your our their stored saved secure weak strong long short case sensitive protected hashed
    encrypted rotated shared same different unknown forgotten lost correct ok fine there here in on at for of to""".split())


def _stated_password(value: str) -> bool:
    core = value.strip("\"'“”‘’").rstrip(".,;:!?)]}")
    return len(core) >= 3 and core.lower() not in _NOT_A_PASSWORD


def _looks_random(value: str) -> bool:
    """A machine-made token: long, upper and lower case and digits, and the character class changes at most
    positions (random base62 about 60 %, CamelCase words about 30 %). Pure hex (hashes, commit ids) is not."""
    core = value.strip("=")
    alnum = [c for c in core if c.isalnum()]
    if len(alnum) < 24 or all(c in "0123456789abcdefABCDEF" for c in alnum):
        return False
    digits = sum(c.isdigit() for c in alnum)
    upper = sum(c.isupper() for c in alnum)
    lower = sum(c.islower() for c in alnum)
    if digits < 2 or upper < 2 or lower < 2:
        return False

    def cls(c: str) -> int:
        return 0 if c.isdigit() else 1 if c.isupper() else 2

    switches = sum(cls(a) != cls(b) for a, b in zip(alnum, alnum[1:]))
    return switches / (len(alnum) - 1) >= 0.45


_V = r"""(?:"[^"\s]{3,}"|'[^'\s]{3,}'|[^\s"',;]{3,})"""  # an assigned value: quoted or bare
_PW_WORDS = r"(?:\b(?:pass(?:word|wd|phrase|code)s?|pwd)|密码|口令)"

# Ordered from the most specific to the most generic, so a redaction names what it found.
SECRET_PATTERNS: list[SecretPattern] = [
    SecretPattern("private key", (
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)")),
    # Key bodies without their PEM lines: DER private keys (PKCS#1 / PKCS#8 / EC) and OpenSSH keys, base64.
    SecretPattern("private key", (
        r"\b(?:MII[A-Za-z0-9+/]{2}(?:AgEAA|IBAA|QIBADAN)|MHcCAQEE|b3BlbnNzaC1rZXktdjE)[A-Za-z0-9+/=]{16,}")),
    SecretPattern("API key", (r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),  # Stripe
    SecretPattern("API key", (r"\bsk-(?:ant-|proj-|or-v1-)?[A-Za-z0-9_\-]{16,}")),
    SecretPattern("API key", (r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    SecretPattern("API key", (r"\bgl(?:pat|dt|rt|cbt|ptt|ft|soat)-[A-Za-z0-9_\-]{20,}")),  # GitLab
    SecretPattern("API key", (r"\bhf_[A-Za-z0-9]{30,}")),  # Hugging Face
    SecretPattern("API key", (r"\bnpm_[A-Za-z0-9]{36,}")),
    SecretPattern("API key", (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    SecretPattern("API key", (r"\bAIza[0-9A-Za-z_\-]{30,}")),
    SecretPattern("API key", (r"\bxox[abeprs]-[A-Za-z0-9\-]{10,}")),
    SecretPattern("API key", (r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}")),  # SendGrid
    SecretPattern("API key", (r"\b[0-9a-f]{32}\.[A-Za-z0-9]{16}\b")),  # Zhipu keys: id.secret
    SecretPattern("API key", (r"\bshp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}\b")),  # Shopify
    SecretPattern("API key", (r"\bkey-[0-9a-f]{32}\b")),  # Mailgun
    SecretPattern("token", (r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),  # JWT
    SecretPattern("webhook secret", (r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9/_\-]{16,})"),
                  group=1),
    # scheme://user:password@host (the password may hold '@': the last one before the host ends it)
    SecretPattern("password", (r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]*:(?P<v>[^\s/]+)@[^\s/@]+"), group="v",
                  needle="://"),
    SecretPattern("auth header", (
        r"(?i)\bauthorization\s*[:=]\s*(?:basic|bearer|token|digest|apikey)?\s*(?P<v>[A-Za-z0-9._~+/=\-]{8,})"),
        group="v"),
    SecretPattern("auth header", (r"(?i)\bx-[a-z0-9\-]*(?:key|token|auth|secret)\s*:\s*(?P<v>\S{8,})"),
                  group="v"),
    SecretPattern("bearer token", (r"(?i)\bbearer\s+(?P<v>[A-Za-z0-9._~+/=\-]{12,})"), group="v"),
    SecretPattern("basic auth", (r"\b[Bb]asic\s+(?P<v>[A-Za-z0-9+/]{12,}={0,2})"), group="v",
                  check=lambda v: v.endswith("=") or any(c.isdigit() for c in v) or (v.lower() != v and v.upper() != v)),
    # command-line password flags: mysql -pSECRET, sshpass -p SECRET, --password=SECRET, curl -u user:SECRET
    SecretPattern("password", (r"\b(?i:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s-p(?P<v>[^\s\-]\S*)"),
                  group="v"),
    SecretPattern("password", (r"\b(?i:sshpass)\s+-p\s*(?P<v>" + _V + ")"), group="v"),
    SecretPattern("password", (r"\b(?i:docker|podman|buildah|skopeo|helm|oras)\s+(?i:registry\s+)?(?i:login)\b"
                                         r"[^\n]*?\s-p\s+(?P<v>" + _V + ")"), group="v"),
    SecretPattern("password", (r"(?i)--pass(?:word|wd)?(?:=|\s+)(?P<v>" + _V + ")"), group="v"),
    SecretPattern("password", (r"(?:\s-u|--user)\s+[^\s:]+:(?P<v>\S{3,})"), group="v"),
    # KEY=value: env style (`*_KEY=`, `*_TOKEN=`, `*_SECRET=`, `*PASSWORD*=`) and connection strings
    SecretPattern("credential", (
        r"(?i)\b[A-Z0-9_]*(?:_KEY|_TOKEN|_SECRET|_PWD|_PASS|PASSWORD|PASSWD|ACCOUNTKEY|SHAREDACCESSKEY)[A-Z0-9_]*"
        r"\s*[=:]\s*(?P<v>" + _V + ")"), group="v"),
    SecretPattern("credential", (r"(?i)(?:^|[;\s])(?:pwd|password|accountkey|sharedaccesskey)\s*=\s*(?P<v>[^;\s]{3,})"),
                  group="v"),
    # a password stated in words: "password: x", "the password for the NAS is x", "密码是 x", "银行卡密码 739264"
    SecretPattern("password", (
        r"(?i)" + _PW_WORDS + r"(?:\s+(?:for|of|to)\s+\S+(?:\s+\S+){0,3}?)?\s*(?:is|was|=|:|：|是|为|為)\s*"
        r"(?P<v>[\"'“‘]?[A-Za-z0-9!@#$%^&*()_+\-=.~?/\\|<>]{3,}[\"'”’]?)"), group="v", check=_stated_password),
    SecretPattern("password", (r"(?i)" + _PW_WORDS + r"\s*(?P<v>[A-Za-z0-9!@#$%^&*_+\-=.~]{3,})"),
                  group="v", check=_has_digit_or_symbol),
    # a PIN (digits), and "pass: x" (a label only when the value has a digit or a symbol)
    SecretPattern("password", (
        r"(?:\bPIN|\b[Pp]in\s+(?:code|number))(?:\s+(?:for|of|to)\s+\S+(?:\s+\S+){0,3}?)?\s*(?:is|was|=|:|：)\s*"
        r"(?P<v>\d{4,}#?)"), group="v"),
    SecretPattern("password", (r"(?i)\bpass\s*[:：=]\s*(?P<v>" + _V + ")"), group="v",
                  check=_has_digit_or_symbol),
    SecretPattern("credential", (
        r"(?i)\b(?:api[_\- ]?key|secret(?:[_\- ]?key)?|access[_\- ]?token|auth[_\- ]?token|token|client[_\- ]?secret)"
        r"\s*(?:is|=|:|：|是|为)\s*[\"']?(?P<v>[A-Za-z0-9._~+/=\-]{12,})"), group="v"),
    # the safety net: a long machine-made token of no known shape
    SecretPattern("token", (r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{24,}={0,2}"), check=_looks_random),
]


def normalise(text: str) -> str:
    """NFKC (full-width letters, digits and punctuation to half-width), control characters removed
    (`strip_controls`), whitespace folded, ends trimmed; a lone surrogate (undecodable bytes from a command line or
    a broken client) becomes U+FFFD."""
    text = unicodedata.normalize("NFKC", strip_controls(scrub_surrogates(text)))
    return _SPACE.sub(" ", text).strip()


def scrub_surrogates(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so it can be written as UTF-8."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def secret_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every secret in `text`, left to right, overlaps merged (the earlier pattern names it)."""
    found: list[tuple[int, int, str]] = []
    for pattern in SECRET_PATTERNS:
        for start, end in pattern.spans(text):
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


def text_digest(text: str) -> str:
    """A short hash of normalised text: what logs and tombstones keep instead of a memory's words."""
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()[:16]


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
