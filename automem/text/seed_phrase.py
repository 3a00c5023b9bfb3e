"""Seed phrases: twelve or more words of the BIP-0039 English list in a row (a wallet's recovery phrase)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Iterator

BIP39_FILE = Path(__file__).resolve().parent.parent / "data" / "bip39_english.txt"
_SEED_WORD = re.compile(r"[A-Za-z]+")
_SEED_GAP = re.compile(r"[\s,;|/\-]*(?:\d{1,2}[.):]?[\s,;]*)?")  # between two words: spaces, commas, "2."
SEED_MIN_WORDS = 12


@lru_cache(maxsize=1)
def bip39_words() -> frozenset[str]:
    """The 2048 words of BIP-0039's English list (automem/data/bip39_english.txt), read on first use."""
    return frozenset(BIP39_FILE.read_text(encoding="ascii").split())


def seed_phrase_spans(text: str) -> Iterator[tuple[int, int]]:
    """Runs of at least 12 BIP-0039 words (a wallet's recovery phrase), numbered or not. Everyday English rarely
    strings 12 of them together: "the", "a", "to", "is", "and", "of", "my" are not on the list."""
    if text.count(" ") + text.count(",") < SEED_MIN_WORDS - 1:
        return
    words = bip39_words()
    start = end = 0
    run: list[str] = []
    for m in _SEED_WORD.finditer(text):
        w = m.group(0).lower()
        if w in words and run and _SEED_GAP.fullmatch(text, end, m.start()):
            run.append(w)
            end = m.end()
            continue
        if _is_seed_run(run):
            yield start, end
        start, end, run = (m.start(), m.end(), [w]) if w in words else (0, 0, [])
    if _is_seed_run(run):
        yield start, end


def _is_seed_run(run: list[str]) -> bool:
    """12 to 24 words (test vectors repeat a word: "abandon" x 11 + "about"), or a longer run of 12 different words
    ("word word word ..." is filler, not a phrase)."""
    return len(run) >= SEED_MIN_WORDS and (len(run) <= 24 or len(set(run)) >= SEED_MIN_WORDS)
