"""What the recall index makes of words: plain functions, no SQLite.

FTS5 splits text on spaces and punctuation, which Chinese does not have, so text is segmented first (`segment`):
every CJK run becomes its characters and their bigrams, Latin words stay words (Porter-stemmed by FTS5). A question
is bounded (`bound_query`), cut into its topic-bearing terms (`query_terms`) and asked as an FTS5 expression
(`match_expression`); `coverage` is the share of its term weight a text holds.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Sequence

from ..text.validation import CJK_CHARACTER

_CJK = re.compile(CJK_CHARACTER + "+")
_LATIN = re.compile(r"[^\W_]+")
# Words that carry no topic in a question: kept in the index, left out of keyword queries (BM25 would weigh them
# little anyway, but an OR of only such words matches everything).
STOP_LATIN = frozenset("""a an the i me my mine you your yours we our us he him his she her hers it its they them their
is am are was were be been being do does did done have has had having what which who whom whose how why when where
to of in on at for from by with about into over and or not no nor so if than then that this these those there here
can could would should will shall may might must please tell know use uses used using any some all also just
very really more most much many""".split())
STOP_CJK = frozenset("""你知 知道 道我 我用 用什 什么 么样 是什 怎么 我们 你们 他们 一个 这个 那个 可以
就是 还是 的是 了吗 我的 用户 现在 以后 不要 告诉 记得 记住
吗 呢 的 了 是 我 你 他 她 它 么 什 在 有 和 吧 啊 哪 谁""".split())


def _units(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text).lower()
    out: list[str] = []
    pos = 0
    for m in _CJK.finditer(text):
        out += _LATIN.findall(text[pos:m.start()])
        run = m.group()
        out += list(run)
        out += [run[i:i + 2] for i in range(len(run) - 1)]
        pos = m.end()
    out += _LATIN.findall(text[pos:])
    return out


def segment(text: str) -> str:
    """What FTS5 indexes for `text`: Latin words, CJK characters and CJK bigrams, separated by spaces."""
    return " ".join(_units(text))


# A question longer than this is cut before it is embedded, segmented or ranked: a pasted 1 MB log would otherwise
# cost seconds and gigabytes on Hermes' path. Its start and its end are kept (where a question about a paste is).
MAX_QUERY_CHARS = 2000
_CUT = " … "


def bound_query(query: str) -> str:
    """`query` within MAX_QUERY_CHARS: as is when short enough, else its start and its end."""
    if len(query) <= MAX_QUERY_CHARS:
        return query
    half = (MAX_QUERY_CHARS - len(_CUT)) // 2
    return query[:half] + _CUT + query[len(query) - half:]


def query_terms(text: str) -> list[str]:
    """The distinct topic-bearing terms of a question, in order."""
    seen: dict[str, None] = {}
    for unit in _units(text):
        if unit in STOP_LATIN or unit in STOP_CJK:
            continue
        if len(unit) == 1 and not _CJK.match(unit) and not unit.isdigit():
            continue
        seen.setdefault(unit, None)
    return list(seen)


def match_expression(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression: any of the terms (each quoted, so no term is read as an operator)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[:-len(suffix)]
    return word


def coverage(weights: dict[str, float], text: str) -> float:
    """The share (0..1) of the question's term weight that `text` holds: a memory matching the question's one
    rare word and nothing else scores below one that matches most of it."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    have = {_stem(u) for u in query_terms(text)}
    return sum(w for t, w in weights.items() if _stem(t) in have) / total
