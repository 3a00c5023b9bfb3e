"""Text analysis: what a memory's text says (`analyse`, `Analysis`) and what two texts share or say alone.

One text: its units (script-aware, from `automem.core.tokens`), negations and change markers, the numbers that
name an instance rather than count, and whom or what it is about (`is_about_user`, which the recall index stores
as a ranking hint). Two texts: `overlap`, `changed_values`, `polarity_flipped`, `same_wording`,
`one_slot_replaced`, `set_aside`, the signals the duplicate / update / new rules (`automem.core.dedup`) read, with
`automem.core.word_order` (the same words in another order or role) and `automem.core.single_valued` (a new value
of an attribute held once), which build on this module.
Plain functions, no I/O; `analyse` is cached (an Analysis is immutable).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Iterable, Sequence

from .tokens import (
    _CJK_CHAR,
    _TOKEN,
    ANTONYMS,
    CLASS_WORDS,
    LIGHT_VERBS_EN,
    LIGHT_VERBS_ZH,
    NAMING_EN,
    NAMING_ZH,
    NUMBERED_THINGS,
    NUMBERING_AFTER,
    NUMBERING_BEFORE,
    SINGLE_HELD,
    SINGLE_OWNED,
    Unit,
    _content_stem,
    _daypart,
    _latin_units,
    _number_units,
    _scaled,
    _segment_cjk,
    _split_words,
    _stem_en,
)

# --------------------------------------------------------------------------------------------------------------
# What one text says

_YEAR = re.compile(r"(?:19|20)\d\d")  # a year when it reads as one: "2019年", "in 2019", "a 1974 Stratocaster"
_YEAR_BEFORE = frozenset({"in", "since", "from", "until", "till", "by", "during", "year", "circa"})
_LATIN_CHAR = re.compile(r"[A-Za-z]")


@dataclass(frozen=True)
class Analysis:
    text: str
    lang: str  # zh | en: the language its content words are in
    units: tuple[Unit, ...]
    negations: int
    change: bool  # announces a change ("now", "现在", "switched to", "改用")
    strong_change: bool  # ...in words that say the value changed ("switched to", "改用", "搬到")

    @property
    def meaning(self) -> Counter:
        """Concept, value and content keys with their weights: what the text says, frame words left out."""
        c: Counter = Counter()
        for u in self.units:
            if u.kind in ("concept", "value", "content"):
                c[u.key] = max(c[u.key], u.weight)
        return c

    @property
    def values(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for u in self.units:
            if u.kind == "value":
                cls, _, val = u.key.partition(":")
                out.setdefault(cls, set()).add(val)
        return out

    @property
    def ordinals(self) -> set[str]:
        """Numbers that name an instance rather than count: "#1033", "第二篇", "2nd", "second", "R5" (glued to a
        name)."""
        return {u.key[4:] for u in self.units if u.kind == "value" and u.key.startswith("num:") and u.surface}

    @cached_property  # read by several rules for one pair; an Analysis never changes (`analyse` caches it)
    def identifiers(self) -> frozenset[str]:
        """Numbers that say which thing or occasion the text is about rather than how much: ordinals and numbers
        inside a name ("R5", "B2-107"), a number after a numbering word ("teammate number 2", "Bus No. 3", "第2个")
        or before 号 ("3号同事", "5号楼"), a year (in 2019, 2019年, a 1974 guitar), and a number in the subject
        ("[Room 305] has a broken heater", "用户的[3号]同事"). Two texts that differ in one are about two things or
        two occasions, so the number is never a new value of one slot."""
        units = self.units
        found = set(self.ordinals)
        for i, u in enumerate(units):
            if u.kind != "value" or not u.key.startswith("num:"):
                continue
            before = units[i - 1].key.lower() if i else ""
            after = units[i + 1].key if i + 1 < len(units) else ""
            year = _YEAR.fullmatch(u.key[4:]) and (after == "年" or before in _YEAR_BEFORE or after.startswith("name:"))
            numbering = before in NUMBERING_BEFORE or before in _NUMBERING_STEMS or after in NUMBERING_AFTER
            if numbering or year or _numbers_a_thing(units, i):
                found.add(u.key[4:])
        named = _NAMED_FIRST.match(self.text)
        if named:  # "api-v1 runs on port 8080", "test-01 uses 16GB": the subject's name ends in its number
            found.add(named.group(1).lstrip("0") or "0")
        for m in _CODE.finditer(self.text):  # "测试环境test-01", "CS 101": a name that ends in its number
            found.add((m.group(1) or m.group(2)).lstrip("0") or "0")
        s = _subject_index(self)
        if s is not None and not _owned(self, s) and units[s].kind == "concept":
            s = None  # a text's first word may be a verb ("超过500元…", "Publish two posts a week"): no subject
        if s is not None:
            for j in (s, s + 1, s + 2):
                if j >= len(units) or (j > s and units[j].kind == "frame"):
                    break  # "the user's daughter is 7": a frame word ends the subject
                if units[j].key.startswith("num:"):
                    # the subject itself a number: "305房间" names a room, "2 cats" and "2个孩子" count them
                    named = j > s or (self.lang == "zh" and j + 1 < len(units) and units[j + 1].kind == "content")
                    if named:
                        found.add(units[j].key[4:])
                    break
                if j > s and units[j].key.lower() not in NUMBERING_BEFORE:
                    break
        return frozenset(found)

    @property
    def concepts(self) -> set[str]:
        return {u.key for u in self.units if u.kind == "concept"}

    @cached_property  # read for every name of the other side of every pair
    def latin_words(self) -> frozenset[str]:
        """Every latin word of the text and its hyphen parts, stemmed: where a name from the other side may be."""
        words = re.findall(r"[A-Za-z][A-Za-z'_\-.+#]*", self.text)
        return frozenset(f(p) for w in words for p in [w, *w.split("-")] if p for f in (_stem_en, _content_stem))


def _expand(unit: Unit) -> list[Unit]:
    """A word that stands for several values or concepts ("weekend" = saturday + sunday, "博文" = blog + article)
    becomes one unit each."""
    if unit.kind == "concept" and "+" in unit.key:
        return [Unit("concept", k, unit.weight, unit.surface) for k in unit.key.split("+")]
    if unit.kind != "value" or "+" not in unit.key or unit.key.startswith(("name:", "path:", "num:")):
        return [unit]
    cls, _, vals = unit.key.partition(":")
    return [Unit("value", f"{cls}:{v}", unit.weight, unit.surface) for v in vals.split("+")]


_CN_SCALES = {"万": 10000, "千": 1000, "亿": 100000000}


def _after_digits(tok: str, units: list[Unit], adjacent: bool) -> str:
    """Chinese right after digits belongs to the number: "4万" is 40000, "6点" six o'clock (the 6 of "六点",
    "6:00"), "6点半" 6:30. Returns the rest of the Chinese run."""
    if not adjacent or not units or not units[-1].key.startswith("num:") or units[-1].surface:
        return tok
    number = units[-1].key[4:]
    if not re.fullmatch(r"\d+(?:\.\d+)?", number):
        return tok
    if tok[0] in _CN_SCALES:
        units[-1] = Unit("value", f"num:{_scaled(number, _CN_SCALES[tok[0]])}", 2)
        return tok[1:]
    if tok.startswith("点半"):
        units[-1] = Unit("value", f"num:{number}:30", 2)
        return tok[2:]
    if tok.startswith("点") and "." not in number:
        return tok[2:] if tok.startswith("点钟") else tok[1:]
    return tok


def language(text: str) -> str:
    """"zh" when the text is written in Chinese, code-switched or not ("项目用Python 3.11", "用vim"); else "en"."""
    cjk, latin = len(_CJK_CHAR.findall(text)), len(_LATIN_CHAR.findall(text))
    return "zh" if cjk and cjk * 4 >= latin else "en"


@lru_cache(maxsize=4096)  # a stored memory is the neighbour of many candidates; Analysis is immutable
def analyse(text: str) -> Analysis:
    """Split `text` into units (script-aware) and count its negations and change markers."""
    lang = language(text)
    units: list[Unit] = []
    words: list[str] = []
    sentence_start = True

    def flush() -> None:
        nonlocal sentence_start
        if words:
            units.extend(_latin_units(_split_words(words), in_cjk_text=lang == "zh", sentence_start=sentence_start))
            words.clear()
            sentence_start = False

    last = prev_end = 0
    prev_word, prev_kind, word_opens = "", "", False  # the last token; whether that word opened a sentence
    for m in _TOKEN.finditer(text):
        if re.search(r"[.!?;:。！？；]", text[last:m.start()]):
            flush()
            sentence_start = True
        last = m.end()
        kind, tok = m.lastgroup, m.group()
        if kind == "word":
            gap = text[prev_end:m.start()]
            # "6 am", "3 pm"; "I am" is no time
            if prev_kind == "num" and tok.lower() in ("am", "pm") and not gap.strip():
                units.append(Unit("concept", _daypart(units[-1].key[4:], tok.lower()), 2))  # a number token ends in one
                prev_end, prev_word, prev_kind = m.end(), "", "word"
                continue
            word_opens = sentence_start and not words
            words.append(tok.rstrip("."))
            prev_end, prev_word, prev_kind = m.end(), tok, "word"
            continue
        flush()
        sentence_start = False
        if kind in ("url", "path"):
            units.append(Unit("value", f"path:{tok.rstrip('/').lower()}", 2))
        elif kind == "num":
            if (prev_word.lower() in NUMBERING_BEFORE and re.fullmatch(r"\.\s*", text[prev_end:m.start()])
                    and not word_opens and units and units[-1].kind == "negation"):
                units[-1] = Unit("content", prev_word.lower(), 1, units[-1].surface)  # "Bus No. 3": "No." numbers
            # one or two letters glued to it ("R5", "S22", "B2-107") make a model or a place, not a count; a longer
            # word is a name with its version ("Python3.11", "Node18")
            glued = prev_word if m.start() == prev_end and len(prev_word) <= 2 else ""
            units.extend(Unit(u.kind, u.key, u.weight, (glued + tok).lower()) if glued and u.key.startswith("num:")
                         else u for u in _number_units(tok))
        elif kind == "ident":  # "#1033": an issue or PR number names a thing; it is not a quantity
            units.append(Unit("value", f"num:{tok[1:].lstrip('0') or '0'}", 2, tok))
        else:
            tok = _after_digits(tok, units, adjacent=m.start() == prev_end)
            units.extend(_segment_cjk(tok))
        prev_end, prev_word, prev_kind = m.end(), "", kind
    flush()
    units = [part for u in units for part in _expand(u)]
    negations = sum(1 for u in units if u.kind in ("negation", "negchange"))
    change = any(u.kind in ("change", "negchange") for u in units)
    strong = any(u.kind in ("change", "negchange") and u.weight > 0 for u in units)
    return Analysis(text, lang, tuple(units), negations, change, strong)


# --------------------------------------------------------------------------------------------------------------
# What two texts share, and what each says alone

_SECOND_OF = {y: x for x, y in ANTONYMS}  # an antonym's second member -> its first
_FIRST = {x for x, _ in ANTONYMS}


def _number_parts(ns: set[str]) -> set[str]:
    return {p for n in ns for p in re.split(r"[.:/\-]", n)}


def _unmatched_numbers(a: set[str], b: set[str]) -> tuple[set[str], set[str]]:
    """Numbers written differently are the same: "2024-03-15" on one side, "3" and "15" on the other."""
    pa, pb = _number_parts(a), _number_parts(b)
    return ({n for n in a if not set(re.split(r"[.:/\-]", n)) <= pb},
            {n for n in b if not set(re.split(r"[.:/\-]", n)) <= pa})


def changed_values(a: Analysis, b: Analysis) -> list[str]:
    """Values of one kind replaced by others: "3.11" -> "3.12", 上海 -> 北京, vim -> emacs, 8:00 -> 9:00.

    Only a replaced value counts: a value on one side alone is an added detail, not a change. A name (a latin
    word in Chinese text, a proper name) is also looked for among all the other side's latin words, since "vim"
    in "用户用vim" is a plain word in "the user uses vim".
    """
    found = []
    va, vb = a.values, b.values
    for cls in sorted(set(va) & set(vb)):
        only_a, only_b = va[cls] - vb[cls], vb[cls] - va[cls]
        if cls == "name":
            only_a = {n for n in only_a if n not in b.latin_words}
            only_b = {n for n in only_b if n not in a.latin_words}
        elif cls == "num":
            only_a, only_b = _unmatched_numbers(only_a, only_b)
        if only_a and only_b:
            found.append(f"{cls} {'/'.join(sorted(only_a))} -> {'/'.join(sorted(only_b))}")
    return found


def polarity(x: Analysis, other: Analysis) -> int:
    """0 or 1: the parity of the text's negations plus its antonyms' second members ("light", "spaces",
    "dislike", "关闭", "以内") whose slot the other text also fills. Two texts of one fact have the same parity
    however they phrase it: "never tabs" and "always spaces" are both 1, "不喜欢咖啡" and "讨厌咖啡" both 1,
    "不吃肉" and "吃素" both 0. An opposite the other text has no slot for ("a small company") is a detail."""
    slots = {_SECOND_OF.get(k, k) for k in other.concepts if k in _FIRST or k in _SECOND_OF}
    seconds = len({u.key for u in x.units if u.kind == "concept" and _SECOND_OF.get(u.key) in slots})
    return (x.negations + seconds) % 2


def polarity_flipped(a: Analysis, b: Analysis) -> tuple[bool, str]:
    """One side negates what the other affirms: its negations or its opposites differ in parity."""
    if polarity(a, b) == polarity(b, a):
        return False, ""
    parts = []
    if a.negations % 2 != b.negations % 2:
        parts.append("negation")
    parts.extend(antonym_flips(a, b))
    return True, " and ".join(parts) or "opposites"


def antonym_flips(a: Analysis, b: Analysis) -> list[str]:
    """Opposite concepts, one on each side: dark/light, tabs/spaces, like/dislike, 开启/关闭, 早/晚, 超过/以内."""
    ca, cb = a.concepts, b.concepts
    flips = []
    for x, y in ANTONYMS:
        if ((x in ca and y in cb and y not in ca and x not in cb)
                or (y in ca and x in cb and x not in ca and y not in cb)):
            flips.append(f"{x.lower().rstrip('_')}/{y.lower().rstrip('_')}")
    return flips


@dataclass(frozen=True)
class Overlap:
    """Weights of the meaning both sides share, and the keys each says alone."""

    shared: float
    only_a_keys: tuple[str, ...] = ()
    only_b_keys: tuple[str, ...] = ()
    comparable: bool = True  # both sides in one language: their content words can be matched

    @property
    def unmatched(self) -> bool:
        return bool(self.only_a_keys or self.only_b_keys)

    def differ(self) -> str:
        return f"{'+'.join(self.only_a_keys) or '-'} / {'+'.join(self.only_b_keys) or '-'}"


def overlap(a: Analysis, b: Analysis, ignore: Sequence[str] = ()) -> Overlap:
    """What both texts say and what each says alone, leaving out the value classes in `ignore`.

    Antonyms count as one key (the slot; their sign is the polarity rule's business); numbers written
    differently are one value; "one" alone on one side is an article ("一张封面图" / "a cover image"). Across
    languages only concepts, values and names can meet, so an untranslated content word stays unmatched: it may
    be the very difference.
    """
    skip = tuple(f"{cls}:" for cls in ignore)

    def keyed(x: Analysis) -> Counter:
        c: Counter = Counter()
        for k, w in x.meaning.items():
            if k.startswith(skip):
                continue
            k = _SECOND_OF.get(k, k)
            c[k] = max(c[k], w)
        return c

    ma, mb = keyed(a), keyed(b)
    for mine, theirs, other in ((ma, mb, b), (mb, ma, a)):  # "vim" is a name in "用vim", a word in "uses vim"
        for key in [k for k in mine if k.startswith("name:")]:
            if key not in theirs and key[5:] in other.latin_words:
                theirs[key] = mine[key]
                theirs.pop(key[5:], None)  # ...where it is the same word, not another one
                theirs.pop(_content_stem(key[5:]), None)
    nums_a = {k[4:] for k in ma if k.startswith("num:")}
    nums_b = {k[4:] for k in mb if k.startswith("num:")}
    left_a, left_b = _unmatched_numbers(nums_a, nums_b)
    for mine, nums, left, theirs in ((ma, nums_a, left_a, nums_b), (mb, nums_b, left_b, nums_a)):
        for n in nums - left:
            mine.pop(f"num:{n}")
        if left == {"1"} and not theirs:
            mine.pop("num:1")
    shared = sum(min(ma[k], mb[k]) for k in ma if k in mb) + 2 * len(nums_a - left_a)
    both = {k for k in ma if k in mb and _is_cjk_bigram(k)}
    only_a = tuple(sorted(k for k in ma if k not in mb and not _seam(k, both, mb)))
    only_b = tuple(sorted(k for k in mb if k not in ma and not _seam(k, both, ma)))
    return Overlap(shared, only_a, only_b, a.lang == b.lang)


def set_aside(a: Analysis, b: Analysis, ov: Overlap) -> list[str] | None:
    """Why each word left unmatched by `overlap` says nothing of its own, or None when one of them may say
    something. A word is set aside only as

    - a class word beside a value of its class that both sides name ("editor" beside vim on both sides);
    - a light verb before what the other side says without it ("打" in "打网球" / "网球", "do" in "do yoga");
    - a naming word directly before a name both sides give ("called" in "a brother called Sam" / "Sam is ...").

    Nothing else: a subject, an object, a modifier or a value left on one side keeps the pair apart."""
    if not ov.unmatched:
        return None
    why: list[str] = []
    for mine, theirs, keys in ((a, b, ov.only_a_keys), (b, a, ov.only_b_keys)):
        for key in keys:
            reason = _class_word(key, mine, theirs) or _light_verb(key, mine, theirs) or _naming(key, mine, theirs)
            if not reason:
                return None
            if reason not in why:
                why.append(reason)
    return why


def _class_word(key: str, mine: Analysis, theirs: Analysis) -> str:
    shared = set(mine.meaning) & set(theirs.meaning)
    for cls, words in CLASS_WORDS.items():
        if key in words and any(k.startswith(f"{cls}:") for k in shared):
            return f"{key.lower()} only names the {cls.replace('_', ' ')} both give"
    return ""


def _light_verb(key: str, mine: Analysis, theirs: Analysis) -> str:
    """A light verb alone, or a character bigram that only joins it to the next (or previous) character, when that
    character is in the other text: "打网" in "打网球" beside "网球"."""
    if key in LIGHT_VERBS_EN:
        return f"'{key}' is a light verb"
    if _is_cjk_bigram(key):
        light, other = (key[0], key[1]) if key[0] in LIGHT_VERBS_ZH else (key[1], key[0])
        if light in LIGHT_VERBS_ZH and other in theirs.text and other not in LIGHT_VERBS_ZH:
            return f"'{light}' is a light verb"
        return ""
    if key in LIGHT_VERBS_ZH:
        i = mine.text.find(key)
        while i >= 0:
            nxt = mine.text[i + 1:i + 2]
            if nxt and _CJK_CHAR.fullmatch(nxt) and nxt in theirs.text:
                return f"'{key}' is a light verb"
            i = mine.text.find(key, i + 1)
    return ""


def _naming(key: str, mine: Analysis, theirs: Analysis) -> str:
    """NAME_OF ("called", "named", "叫") directly before a name (in Chinese, an unknown word) the other side has."""
    if key != "NAME_OF":
        return ""
    units = [u for u in mine.units if u.kind != "frame"]
    other = set(theirs.meaning) | {f"name:{w}" for w in theirs.latin_words}
    for u, nxt in zip(units, units[1:]):
        surface = (u.surface or u.key).lower()
        if u.key == "NAME_OF" and (surface in NAMING_EN or surface in NAMING_ZH):
            # a name ("Sam"), or in Chinese an unknown word ("豆豆"); never an English common noun: in "Sam called
            # the user's brother" the word after "called" is no name
            name = nxt.key.startswith("name:") or (nxt.kind == "content" and bool(_CJK_CHAR.match(nxt.key)))
            if name and nxt.key in other:
                return f"'{surface}' only introduces the name"
    return ""


def _is_cjk_bigram(key: str) -> bool:
    return len(key) == 2 and bool(_CJK_CHAR.fullmatch(key[0])) and bool(_CJK_CHAR.fullmatch(key[1]))


def _seam(key: str, shared_bigrams: set[str], other: Counter) -> bool:
    """A character bigram that only joins two words both sides share, because the words stand in another order
    ("逻辑|今天" in "回调逻辑今天重构了" vs "今天重构了…回调逻辑"): the seam says nothing. Both characters must be
    matched on the other side, each inside a shared bigram, so "蜂蜜" is never taken for "蜜蜂"."""
    return (_is_cjk_bigram(key) and key[0] in other and key[1] in other
            and any(m[1] == key[0] for m in shared_bigrams) and any(m[0] == key[1] for m in shared_bigrams))


def same_wording(a: Analysis, b: Analysis) -> bool:
    """Only frame words, word order and punctuation differ: the same words as written, the same negations and
    change markers ("用户习惯使用vim编辑器" / "我习惯用vim编辑器"). No synonym or translation is needed for this,
    so nothing the lexicon maps can make two different facts look the same here."""
    def words(x: Analysis) -> Counter:
        # a content word's stem may read like a lexicon word's ("likely" -> "like"): the kind tells them apart
        return Counter((u.kind == "content", u.surface or u.key) for u in x.units if u.kind != "frame")

    return a.lang == b.lang and bool(words(a)) and words(a) == words(b)


def _slot_sequence(x: Analysis) -> list[str]:
    """The text's substance in order: concepts, values, words, and single Chinese characters of unknown words."""
    return [u.key for u in x.units if u.kind in ("concept", "value")
            or (u.kind == "content" and (len(u.key) == 1 or not _CJK_CHAR.search(u.key)))]


_ATTRIBUTES = frozenset(SINGLE_HELD) | SINGLE_OWNED  # the single-valued attributes a concept names


def one_slot_replaced(a: Analysis, b: Analysis) -> bool:
    """Everything in the same order except one stretch, replaced by another:
    "用户的猫叫[咪咪]" / "用户的猫改名叫[豆豆]".
    The same subject and attribute around one new value, found from the structure, not from a vocabulary."""
    import difflib

    if a.lang != b.lang:
        return False
    sa, sb = _slot_sequence(a), _slot_sequence(b)
    ops = [op for op in difflib.SequenceMatcher(None, sa, sb, autojunk=False).get_opcodes() if op[0] != "equal"]
    kept = len(sa) - sum(i2 - i1 for _, i1, i2, _, _ in ops)
    if not (len(ops) == 1 and ops[0][0] == "replace" and kept >= 1):
        return False
    _, i1, i2, j1, j2 = ops[0]
    ra, rb = sa[i1:i2], sb[j1:j2]
    if bool(set(ra) & _ATTRIBUTES) == bool(set(rb) & _ATTRIBUTES):
        return True
    # A single-valued attribute named in one stretch only: a new value of it when the other stretch gives one (a
    # name, a number: "主数据库是[Oracle]" / "主库换成了[TiDB]"), another fact when it holds only words ("我最近在美团
    # 上[点外卖比较多]" / "我跳槽了，现在在美团[上班]")
    return any(":" in k for k in (rb if set(ra) & _ATTRIBUTES else ra))


# --------------------------------------------------------------------------------------------------------------
# Whom or what a text is about

# Persons a holder has ("the user's wife", "用户老公"): whom a text may be about instead of the user.
KIN = frozenset({"WIFE", "HUSBAND", "SON", "DAUGHTER", "CHILD", "PARENTS", "FATHER", "MOTHER", "GRANDFATHER",
                 "GRANDMOTHER", "OLDER_BROTHER", "YOUNGER_BROTHER", "OLDER_SISTER", "YOUNGER_SISTER", "FRIEND",
                 "COLLEAGUE", "BOSS", "ROOMMATE", "NEIGHBOUR", "GIRLFRIEND", "BOYFRIEND"})
_POSSESSIVE = frozenset({"user's", "users'", "my", "his", "her", "their", "our", "your"})
_HOLDERS = frozenset({"用户", "我", "他", "她", "我们", "你", "user", "i"})


# A text that opens with a hyphenated name ending in a number ("api-v1", "test-01", "dev-2"): that number says which.
_NAMED_FIRST = re.compile(r"\s*(?:the\s+)?[A-Za-z][A-Za-z0-9_.]*-v?(\d+)\b", re.I)
# A name that ends in its number anywhere in a text: a lower-case hyphenated one ("test-01", "node-3"; not "GPT-4",
# a model of record) or a course or flight code in capitals and three digits or more ("CS 101", "CA 981").
_CODE = re.compile(r"(?<![A-Za-z0-9])[a-z][a-z0-9_]*-v?(\d+)(?![\d.])|(?<![A-Za-z])[A-Z]{2,5} ?(\d{3,5})(?![\d.])")
_NUMBERING_STEMS = frozenset(_content_stem(w) for w in NUMBERING_BEFORE)


def _numbers_a_thing(units: Sequence[Unit], i: int) -> bool:
    """The number at `i` follows a thing that is numbered ("项目1", "server 2"), or such a thing and its name
    ("Project Atlas 2"): it says which one."""
    for j in (i - 1, i - 2):
        if j < 0:
            return False
        if units[j].kind == "concept" and units[j].key in NUMBERED_THINGS:
            return True
        if not units[j].key.startswith("name:"):
            return False
    return False


def _subject_index(x: Analysis) -> int | None:
    """Where the unit of whom or what the text is about sits, when that is not the user: what the user's holder
    owns ("the user's [daughter]", "用户的[妻子]"), or, in a text that does not open with the user, its first word
    ("[Anna] likes tea"). None when the text is about the user."""
    units = x.units

    def substantive(u: Unit) -> bool:
        return u.kind not in ("frame", "negation", "change", "repeat")

    for i, u in enumerate(units):
        if u.kind != "frame":
            return i if substantive(u) else None
        if u.key.lower() in _POSSESSIVE or (u.key.lower() in _HOLDERS and i + 1 < len(units)
                                            and units[i + 1].key == "的"):
            return next((j for j in range(i + 1, len(units)) if substantive(units[j])), None)
        if u.key.lower() in _HOLDERS:
            nxt = units[i + 1] if i + 1 < len(units) else None
            # "用户老公在腾讯上班": a relative right after the holder is whom the text is about
            return i + 1 if nxt is not None and nxt.kind == "concept" and nxt.key in KIN else None
    return None


def _owned(x: Analysis, i: int) -> bool:
    """Whether the subject at `i` is held by the user ("the user's shell", "用户的车"), not named first ("Anna ...")."""
    return any(u.key.lower() in _POSSESSIVE or u.key.lower() in _HOLDERS for u in x.units[:i])


def _same_holder(a: Analysis, b: Analysis) -> bool:
    """Whether two texts can be about one subject's slot: the same subject, or the user on one side and something
    the user holds on the other ("用户的车是白色的" / "用户换了一辆黑色的车"). Someone named first ("Colleague No. 2
    uses vim") is never the user."""
    ia, ib = _subject_index(a), _subject_index(b)
    if _subject_key(a, ia) == _subject_key(b, ib):
        return True
    if ia is None or ib is None:
        return _owned(b, ib) if ia is None else _owned(a, ia)
    return False  # two different subjects


def _subject_key(x: Analysis, i: int | None) -> str | None:
    return None if i is None else _SECOND_OF.get(x.units[i].key, x.units[i].key)


def _other_subject(x: Analysis) -> str | None:
    """The key of whom or what the text is about when that is not the user (see `_subject_index`)."""
    return _subject_key(x, _subject_index(x))


class Phrases:
    """Many phrases compiled once, each matched as `has_phrase` matches it: the Chinese ones as substrings, the Latin
    ones as whole words (any case) in one pattern. For word lists every text of a write is read against."""

    def __init__(self, phrases: Iterable[str]):
        phrases = list(phrases)
        self.cjk = tuple(p for p in phrases if _CJK_CHAR.search(p) and not _LATIN_CHAR.search(p))
        mixed = [_mixed_pattern(p) for p in phrases if _CJK_CHAR.search(p) and _LATIN_CHAR.search(p)]
        self.mixed = re.compile("|".join(mixed)) if mixed else None
        latin = [re.escape(p.lower()) for p in phrases if not _CJK_CHAR.search(p)]
        self.latin = re.compile(r"(?<![a-z0-9])(?:" + "|".join(latin) + r")(?![a-z0-9])") if latin else None

    def said_in(self, text: str) -> bool:
        return (any(p in text for p in self.cjk) or bool(self.latin and self.latin.search(text.lower()))
                or bool(self.mixed and self.mixed.search(_mixed_form(text))))


def has_phrase(text: str, phrase: str) -> bool:
    """Whether `text` says `phrase`: as a substring in Chinese, as whole words (any case) otherwise, and a phrase of
    both ("我是PM") in any case and spacing between the two scripts ("我是 pm")."""
    if _CJK_CHAR.search(phrase):
        if _LATIN_CHAR.search(phrase):
            return re.search(_mixed_pattern(phrase), _mixed_form(text)) is not None
        return phrase in text
    # a Latin phrase ends where Latin letters and digits do, in Chinese text too ("迁到MongoDB了")
    return re.search(r"(?<![a-z0-9])" + re.escape(phrase.lower()) + r"(?![a-z0-9])", text.lower()) is not None


# Chat spaces Latin words from Chinese or not, in any case ("我是 PM", "做pm"): a phrase of both scripts is matched
# with the case folded and the spaces beside a Chinese character dropped, on both sides.
_BESIDE_CJK_SPACE = re.compile(r"\s+(?=[\u3400-\u4dbf\u4e00-\u9fff])|(?<=[\u3400-\u4dbf\u4e00-\u9fff])\s+")


def _mixed_form(text: str) -> str:
    return _BESIDE_CJK_SPACE.sub("", text.lower())


def _mixed_pattern(phrase: str) -> str:
    """`phrase` of both scripts as a pattern on `_mixed_form` text, its Latin ends ending where Latin words do."""
    form = _mixed_form(phrase)
    return ((r"(?<![a-z0-9])" if form[0].isascii() and form[0].isalnum() else "") + re.escape(form)
            + (r"(?![a-z0-9])" if form[-1].isascii() and form[-1].isalnum() else ""))


def is_about_user(text: str) -> bool:
    """Whether `text` is about the user themself ("用户是高中物理老师", "The user is left-handed"), not about whom or
    what the user's holder owns ("the user's wife", "用户的父亲") or someone named first ("Anna likes tea").
    Recall's system block puts such persona facts first (automem.core.recall.block_score)."""
    return _other_subject(analyse(text)) is None


def _repeats(x: Analysis) -> bool:
    """An event said to happen again ("again", "又", "再次"): another occurrence, not the same one restated."""
    return any(u.kind == "repeat" for u in x.units)
