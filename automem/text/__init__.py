"""Plain text functions: normalise, find and redact secrets, validate, and the fence around recalled context.

May import: nothing of automem (the bottom layer, with paths and errors). Each module has one job:

    normal_form.py        the normal form of stored text (NFKC, controls removed, whitespace folded), text_digest
    fence.py              the markers around recalled context; stored text defused so it never acts as a fence
    injection_phrases.py  the phrases of prompt injection ("ignore all previous instructions", "忽略之前的所有指令")
    number_checks.py      check digits and shapes that tell cards, identity numbers, IBANs and phones from numbers
    seed_phrase.py        a wallet's recovery phrase: a run of BIP-0039 words
    secret_patterns.py    the ordered table of secret and personal-data shapes (SECRET_PATTERNS)
    redact.py             finding them in text (secret_spans, find_secret) and redacting them (redact_secrets)
    validation.py         whether a text may be stored (MIN_CHARS, MAX_CHARS, validate)

Callers import from `automem.text`; the names below are its public surface.
"""

from __future__ import annotations

from .fence import RECALL_END, RECALL_MARKER, neutralise_fences, recall_block
from .injection_phrases import looks_like_injection
from .normal_form import json_safe, normalise, printable, scrub_surrogates, strip_controls, text_digest
from .redact import find_secret, redact_secrets, secret_spans
from .secret_patterns import PERSONAL_DATA_KINDS, SECRET_PATTERNS, SecretPattern
from .seed_phrase import BIP39_FILE, SEED_MIN_WORDS, bip39_words
from .validation import MAX_CHARS, MIN_CHARS, validate

__all__ = [
    "BIP39_FILE", "MAX_CHARS", "MIN_CHARS", "PERSONAL_DATA_KINDS", "RECALL_END", "RECALL_MARKER", "SECRET_PATTERNS",
    "SEED_MIN_WORDS", "SecretPattern", "bip39_words", "find_secret", "json_safe", "looks_like_injection",
    "neutralise_fences", "normalise", "printable", "recall_block", "redact_secrets", "scrub_surrogates",
    "secret_spans", "strip_controls", "text_digest", "validate",
]
