"""Duplicate / update / new: how a candidate memory relates to the stored memories nearest to it.

Plain functions, no I/O. The write path finds the nearest neighbours (cosine distance, same wing, visible to the
profile) and asks `decide`; `settle` is where an LLM judge may overrule the pairs marked borderline.

Why not a bare distance threshold: with the offline encoder, "项目用Python 3.11" vs "项目改用Python 3.12" is 0.03
apart, closer than most paraphrases (see reference/embeddings.md). Distance only says "same topic"; whether the
fact is the same or changed comes from cheap lexical checks on the two texts:

- values: numbers, versions, dates, times, paths, identifiers, and names from small value classes (cities, editors,
  languages, weekdays, ...). A value replaced by another of its kind, the rest of the sentence being the same
  slot, is a changed value ("3.11" -> "3.12", 上海 -> 北京); a value on one side only is a detail of another fact
  ("用vim" / "vim配置放在~/.vimrc").
- polarity: negations (not / never / 不 / 没 / 别 ...) plus antonyms (dark/light, 暗/亮, tabs/spaces, like/dislike,
  开启/关闭, 超过/以内 ...). An odd difference flips the fact; a negation and an antonym cancel ("never tabs" =
  "always spaces", "不吃肉" = "吃素").
- overlap: the meaning left after dropping frame words ("用户", "I", "use", "习惯", "always" ...) and mapping
  synonyms, in both languages, to one concept ("回复" = "reply" = "answer"). Enough in common (weighted Jaccard,
  `MIN_OVERLAP`) is the same fact restated; less is a related fact. Across languages only concepts and values can
  be matched (`CROSS_MIN_OVERLAP`).
- change markers: strong ones (改用, 换成, 搬到, switched to, moved to, no longer) turn a replaced word into an
  update; weak ones (现在, now) count only across languages, where the words cannot be compared.

Chinese has no spaces: values are found first, then CJK runs are segmented by longest match against the lexicon
below, and what is left is compared as characters and character bigrams; latin words, numbers and paths are
tokens of their own. Pairs the rules are unsure of are marked borderline for a judge.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Callable, Sequence

ACTIONS = ("duplicate", "update", "new")


@dataclass(frozen=True)
class Neighbour:
    """A stored memory near the candidate: its id, normalised text and cosine distance (1 - cos)."""

    id: str
    text: str
    distance: float


@dataclass(frozen=True)
class Thresholds:
    """Cosine distances. `same`: practically the same sentence; `paraphrase`: close enough to be the same fact or
    the same slot; `related`: beyond it the two texts are about different things and never merged."""

    same: float
    paraphrase: float
    related: float

    @classmethod
    def from_config(cls, cfg) -> "Thresholds":
        return cls(cfg.dedup_same_distance, cfg.dedup_paraphrase_distance, cfg.dedup_related_distance)


@dataclass(frozen=True)
class PairVerdict:
    action: str  # duplicate | update | new
    reason: str
    borderline: bool  # the cheap checks are not sure: a judge may settle it


@dataclass(frozen=True)
class Verdict:
    action: str  # duplicate | update | new
    matched_id: str | None
    reason: str
    borderline: bool


# (candidate, existing) pairs -> "duplicate" | "update" | "new" for each, in one batched call.
Judge = Callable[[list[tuple[str, str]]], list[str]]


# --------------------------------------------------------------------------------------------------------------
# Lexicon: data, not code (automem/data/lexicon.yaml documents its format). Small and general: the vocabulary of
# everyday memories in Chinese and English. Nothing in it is needed for correctness; it lets more restatements be
# recognised.

LEXICON_FILE = Path(__file__).resolve().parent.parent / "data" / "lexicon.yaml"


def _load_lexicon(path: Path = LEXICON_FILE) -> dict:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when the wheel has it: ~10x faster
    with open(path, encoding="utf-8") as fh:
        return yaml.load(fh, Loader=loader)


_LEX = _load_lexicon()
FRAME_EN = frozenset(_LEX["frame"]["en"])
FRAME_ZH = frozenset(_LEX["frame"]["zh"])
NEGATION_EN = frozenset(_LEX["negation"]["en"])
NEGATION_ZH = frozenset(_LEX["negation"]["zh"])
NOT_NEGATION_ZH = frozenset(_LEX["not_negation_zh"])
CHANGE_STRONG_EN = tuple(_LEX["change"]["strong"]["en"])
CHANGE_STRONG_ZH = tuple(_LEX["change"]["strong"]["zh"])
CHANGE_EN = tuple(_LEX["change"]["weak"]["en"])
CHANGE_ZH = tuple(_LEX["change"]["weak"]["zh"])
CONCEPTS: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in _LEX["concepts"].items()}
VALUE_CLASSES: dict[str, dict[str, tuple[str, ...]]] = {
    cls: {value: tuple(forms) for value, forms in members.items()} for cls, members in _LEX["value_classes"].items()}
ANTONYMS: tuple[tuple[str, str], ...] = tuple((a, b) for a, b in _LEX["antonyms"])

_CN_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10000}
_CN_NUMERAL = set(_CN_DIGITS) | set(_CN_UNITS)
_EN_NUMBERS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
_EN_NUMBERS.update(once=1, twice=2, thrice=3, half=0.5, dozen=12)
# Measure words after a Chinese numeral make it a number ("两杯", "三点"), not part of a word ("统一", "一直").
_CN_MEASURES = set("个杯次天张点岁年月周号日小时分钟秒人篇条本页行种位台遍倍层级章节顿瓶块份寸字元斤米度只件双首部门辆套")


# --------------------------------------------------------------------------------------------------------------
# Tokens

@dataclass(frozen=True)
class Unit:
    """One piece of a text: kind is frame, negation, negchange, change, concept, value or content."""

    kind: str
    key: str  # concept key, "class:value", or the canonical content string
    weight: float = 1.0


_TOKEN = re.compile(r"""
    (?P<url>https?://[^\s，。；、）)]+)
  | (?P<path>(?:~|\.{1,2})?/[\w.\-~/]*\w|~|[\w\-]+(?:/[\w.\-]+)+|\w+\.(?:py|js|ts|md|json|yaml|yml|toml|txt|cfg|ini|sh|rs|go|html|css|lock)\b)
  | (?P<num>\d+(?:[.:/\-]\d+)*(?:%|[a-zA-Z]{1,2}\b)?)
  | (?P<word>[A-Za-z]+(?:['_.\-][A-Za-z]+)*[+#]*)
  | (?P<cjk>[\u3400-\u4dbf\u4e00-\u9fff]+)
""", re.VERBOSE | re.ASCII)  # ASCII: \w in paths must not swallow the Chinese around them

_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_LATIN_CHAR = re.compile(r"[A-Za-z]")


def _stem_en(word: str) -> str:
    """Light English stemming so "uses"/"use", "indented"/"indent" meet; both sides get the same treatment."""
    w = word.lower()
    if w.endswith("'s"):
        w = w[:-2]
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w.endswith("ss"):
            return w[: len(w) - len(suffix)] + keep
    return w


def _build_lexicon() -> tuple[dict[str, Unit], dict[tuple[str, ...], Unit], int]:
    """Surface form -> Unit, for CJK words (longest match) and latin words / phrases (up to 3 words).
    Earlier kinds win: a word that is both a concept and a frame word is a concept."""
    cjk: dict[str, Unit] = {}
    latin: dict[tuple[str, ...], Unit] = {}

    def put(surface: str, unit: Unit) -> None:
        if _CJK_CHAR.search(surface):
            cjk.setdefault(surface, unit)
        else:
            latin.setdefault(tuple(surface.lower().split()), unit)

    for surface in NOT_NEGATION_ZH:
        put(surface, Unit("content", surface, len(surface)))
    for surface in ("no longer", "no more", "不再"):
        put(surface, Unit("negchange", surface, 1))
    for surface in NEGATION_EN | NEGATION_ZH:
        put(surface, Unit("negation", surface, 0))
    for cls, members in VALUE_CLASSES.items():
        for value, surfaces in members.items():
            for surface in surfaces:
                put(surface, Unit("value", f"{cls}:{value}", 2))
    for key, surfaces in CONCEPTS.items():
        for surface in surfaces:
            put(surface, Unit("concept", key, 2))
    for surface in CHANGE_STRONG_EN + CHANGE_STRONG_ZH:
        put(surface, Unit("change", surface, 1))
    for surface in CHANGE_EN + CHANGE_ZH:
        put(surface, Unit("change", surface, 0))  # weight 0: a weak marker
    for surface in FRAME_EN | FRAME_ZH:
        put(surface, Unit("frame", surface, 0))
    return cjk, latin, max(len(s) for s in cjk)


_CJK_LEXICON, _LATIN_LEXICON, _CJK_LONGEST = _build_lexicon()
_LATIN_STEMMED = {tuple(_stem_en(w) for w in k): u for k, u in _LATIN_LEXICON.items()}
# Values of two characters or more, found anywhere in a CJK run before the rest is segmented.
_CJK_VALUES = {s: u for s, u in _CJK_LEXICON.items() if u.kind == "value" and len(s) >= 2}
_CJK_VALUE_LONGEST = max(len(s) for s in _CJK_VALUES)


def _numeral_end(run: str, i: int) -> int:
    """End of a Chinese numeral starting at i when a measure word follows it ("两杯", "三点"), else i."""
    j = i
    while j < len(run) and run[j] in _CN_NUMERAL:
        j += 1
    return j if j < len(run) and run[j] in _CN_MEASURES else i


def _numeral_run_end(run: str, i: int) -> int:
    while i < len(run) and run[i] in _CN_NUMERAL:
        i += 1
    return i


def _cn_number(numerals: str) -> int:
    """"两" -> 2, "十二" -> 12, "二十七" -> 27, "两千" -> 2000, "一万五千" -> 15000."""
    total = section = digit = 0
    for c in numerals:
        if c in _CN_DIGITS:
            digit = _CN_DIGITS[c]
        elif c == "万":
            total += (section + digit) * 10000
            section = digit = 0
        else:
            section += (digit or 1) * _CN_UNITS[c]
            digit = 0
    return total + section + digit


def _cn_time_or_number(run: str, i: int, end: int) -> tuple[str, int]:
    """The number at run[i:end] and where reading goes on: "六点半" -> 6:30, "八点十五分" -> 8:15, "百分之八十" ->
    80%, otherwise the plain number (the measure word after it is read as usual)."""
    n = _cn_number(run[i:end])
    if run.startswith("点半", end):
        return f"{n}:30", end + 2
    if run.startswith("点", end):
        m_end = _numeral_end(run, end + 1)
        if m_end > end + 1 and run.startswith("分", m_end):
            return f"{n}:{_cn_number(run[end + 1:m_end]):02d}", m_end + 1
    return str(n), end


def _segment_cjk(run: str) -> list[Unit]:
    """Values first (so "每周五" holds 周五, not 每周 + 五), then the rest between them by `_segment_words`."""
    out: list[Unit] = []
    start = i = 0
    while i < len(run):
        for size in range(min(_CJK_VALUE_LONGEST, len(run) - i), 1, -1):
            unit = _CJK_VALUES.get(run[i:i + size])
            if unit is not None:
                out.extend(_segment_words(run[start:i]))
                out.append(unit)
                i = start = i + size
                break
        else:
            i += 1
    out.extend(_segment_words(run[start:]))
    return out


def _segment_words(run: str) -> list[Unit]:
    """Longest match against the lexicon; a numeral before a measure word is a number ("两杯", "三点"; "一张" is
    the number 1, which `one_sided_values` treats as an article); the characters left between known words are
    content: each character and each bigram ("医生" and "医院" share a character but no bigram)."""
    out: list[Unit] = []
    unknown: list[str] = []

    def flush_unknown() -> None:
        if len(unknown) == 1:
            out.append(Unit("content", unknown[0], 1))
        else:  # characters at half weight, bigrams at full: both were measured equal, together they are steadier
            out.extend(Unit("content", c, 0.5) for c in unknown)
            out.extend(Unit("content", unknown[k] + unknown[k + 1], 1) for k in range(len(unknown) - 1))
        unknown.clear()

    i = 0
    while i < len(run):
        if unknown and (_numeral_end(run, i) > i or run.startswith("百分之", i) or any(
                run[i:i + size] in _CJK_LEXICON for size in range(1, _CJK_LONGEST + 1))):
            flush_unknown()
        if run.startswith("百分之", i) and _numeral_run_end(run, i + 3) > i + 3:
            end = _numeral_run_end(run, i + 3)
            out.append(Unit("value", f"num:{_cn_number(run[i + 3:end])}%", 2))
            i = end
            continue
        end = _numeral_end(run, i)
        if end > i:
            value, i = _cn_time_or_number(run, i, end)
            out.append(Unit("value", f"num:{value}", 2))
            continue
        for size in range(min(_CJK_LONGEST, len(run) - i), 0, -1):
            unit = _CJK_LEXICON.get(run[i:i + size])
            if unit is not None:
                out.append(unit)
                i += size
                break
        else:
            unknown.append(run[i])
            i += 1
    if unknown:
        flush_unknown()
    return out


def _canonical_number(text: str) -> str:
    """Leading zeros dropped per part ("08:00" -> "8:00"); versions keep their parts ("3.10" stays "3.10")."""
    parts = re.split(r"([.:/\-])", text.lower())
    return "".join((p.lstrip("0") or "0") if p.isdigit() else p for p in parts)


def _number_units(tok: str) -> list[Unit]:
    """"7am" is 7 in the morning, "7pm" 7 in the evening; other suffixes (18px, 4k, 80%) stay with the number."""
    low = tok.lower()
    if low.endswith(("am", "pm")) and low[:-2].replace(":", "").isdigit():
        daypart = "MORNING" if low.endswith("am") else "EVENING"
        return [Unit("concept", daypart, 2), Unit("value", f"num:{_canonical_number(low[:-2])}", 2)]
    return [Unit("value", f"num:{_canonical_number(low)}", 2)]


def _split_words(words: list[str]) -> list[str]:
    """Hyphenated words the lexicon does not know are their parts: "Google-style" is google + style."""
    out = []
    for w in words:
        if "-" in w and (w.lower(),) not in _LATIN_LEXICON:
            out.extend(p for p in w.split("-") if p)
        else:
            out.append(w)
    return out


def _latin_units(words: list[str], in_cjk_text: bool, sentence_start: bool) -> list[Unit]:
    """Phrases from the lexicon (up to 3 words), then single words. A latin word inside Chinese text is a name
    (a value); in English text a capitalised word mid-sentence or an identifier is one."""
    out: list[Unit] = []
    i = 0
    while i < len(words):
        for size in (3, 2, 1):
            chunk = words[i:i + size]
            if len(chunk) < size:
                continue
            unit = _LATIN_LEXICON.get(tuple(w.lower() for w in chunk)) or _LATIN_STEMMED.get(
                tuple(_stem_en(w) for w in chunk))
            if unit is not None:
                out.append(unit)
                i += size
                break
        else:
            word = words[i]
            if word.lower() in _EN_NUMBERS:
                out.append(Unit("value", f"num:{_EN_NUMBERS[word.lower()]}", 2))
            elif in_cjk_text or _looks_like_name(word, first=sentence_start and i == 0):
                out.append(Unit("value", f"name:{_stem_en(word)}", 2))
            else:
                out.append(Unit("content", _stem_en(word), 2))
            i += 1
    return out


def _looks_like_name(word: str, first: bool) -> bool:
    """A proper name or identifier in English text: capitalised mid-sentence, ALLCAPS, or with inner punctuation."""
    if any(c in word for c in "_+#.") or (len(word) > 1 and word.isupper()):
        return True
    return word[:1].isupper() and not first


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
    def concepts(self) -> set[str]:
        return {u.key for u in self.units if u.kind == "concept"}

    @property
    def latin_words(self) -> set[str]:
        """Every latin word of the text and its hyphen parts, stemmed: where a name from the other side may be."""
        words = re.findall(r"[A-Za-z][A-Za-z'_\-.+#]*", self.text)
        return {_stem_en(p) for w in words for p in [w, *w.split("-")] if p}


def _expand(unit: Unit) -> list[Unit]:
    """A word that stands for several values or concepts ("weekend" = saturday + sunday, "博文" = blog + article)
    becomes one unit each."""
    if unit.kind == "concept" and "+" in unit.key:
        return [Unit("concept", k, unit.weight) for k in unit.key.split("+")]
    if unit.kind != "value" or "+" not in unit.key or unit.key.startswith(("name:", "path:", "num:")):
        return [unit]
    cls, _, vals = unit.key.partition(":")
    return [Unit("value", f"{cls}:{v}", unit.weight) for v in vals.split("+")]


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

    last = 0
    for m in _TOKEN.finditer(text):
        if re.search(r"[.!?;:。！？；]", text[last:m.start()]):
            flush()
            sentence_start = True
        last = m.end()
        kind, tok = m.lastgroup, m.group()
        if kind == "word":
            words.append(tok.rstrip("."))
            continue
        flush()
        sentence_start = False
        if kind in ("url", "path"):
            units.append(Unit("value", f"path:{tok.rstrip('/').lower()}", 2))
        elif kind == "num":
            units.extend(_number_units(tok))
        else:
            units.extend(_segment_cjk(tok))
    flush()
    units = [part for u in units for part in _expand(u)]
    negations = sum(1 for u in units if u.kind in ("negation", "negchange"))
    change = any(u.kind in ("change", "negchange") for u in units)
    strong = any(u.kind in ("change", "negchange") and u.weight > 0 for u in units)
    return Analysis(text, lang, tuple(units), negations, change, strong)


# --------------------------------------------------------------------------------------------------------------
# Rules. Each says what it found (or nothing); `compare` weighs them.

_SECOND_OF = {y: x for x, y in ANTONYMS}  # an antonym's second member -> its first
_FIRST = {x for x, _ in ANTONYMS}


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


def _unmatched_numbers(a: set[str], b: set[str]) -> tuple[set[str], set[str]]:
    """Numbers written differently are the same: "2024-03-15" on one side, "3" and "15" on the other."""
    def parts(ns: set[str]) -> set[str]:
        return {p for n in ns for p in re.split(r"[.:/\-]", n)}

    pa, pb = parts(a), parts(b)
    return ({n for n in a if not set(re.split(r"[.:/\-]", n)) <= pb},
            {n for n in b if not set(re.split(r"[.:/\-]", n)) <= pa})


def one_sided_values(a: Analysis, b: Analysis) -> list[str]:
    """Values (numbers, paths, names, ...) that only one side mentions: a detail the other fact lacks, which
    makes the two different facts ("用户喜欢喝咖啡" / "每天早上要喝两杯咖啡", "用vim" / "vim配置放在~/.vimrc")."""
    va, vb = a.values, b.values
    out = []
    for mine, theirs, other in ((va, vb, b), (vb, va, a)):
        for cls, vals in mine.items():
            for v in sorted(vals - theirs.get(cls, set())):
                if cls == "name" and v in other.latin_words:
                    continue
                if cls == "num" and (v == "1" or v in {p for ns in theirs.get("num", set())
                                                       for p in re.split(r"[.:/\-]", ns)}):
                    continue  # "一张封面图" / "a cover image": one alone is an article, not a detail
                out.append(f"{cls}:{v}")
    return out


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
        if (x in ca and y in cb and y not in ca and x not in cb) or (y in ca and x in cb and x not in ca and y not in cb):
            flips.append(f"{x.lower().rstrip('_')}/{y.lower().rstrip('_')}")
    return flips


@dataclass(frozen=True)
class Overlap:
    """Weights of the meaning both sides share and of what each says alone."""

    shared: float
    only_a: float
    only_b: float
    comparable: bool  # both sides in one language: their content words can be matched
    only_a_keys: tuple[str, ...] = ()
    only_b_keys: tuple[str, ...] = ()

    @property
    def jaccard(self) -> float:
        total = self.shared + self.only_a + self.only_b
        return self.shared / total if total else 1.0

    def differ(self) -> str:
        return f"{'+'.join(self.only_a_keys) or '-'} / {'+'.join(self.only_b_keys) or '-'}"


def overlap(a: Analysis, b: Analysis, ignore: Sequence[str] = ()) -> Overlap:
    """What both texts say and what each says alone, leaving out the value classes in `ignore`. Antonyms count
    as one key (the slot), their sign is the polarity rule's business. Across languages only concepts and values
    can be matched; the untranslated content words are left out (they are no evidence either way)."""
    skip = tuple(f"{cls}:" for cls in ignore)

    def keyed(x: Analysis) -> Counter:
        c: Counter = Counter()
        for k, w in x.meaning.items():
            if (a.lang != b.lang and not _comparable(k)) or k.startswith(skip):
                continue
            k = _SECOND_OF.get(k, k)
            c[k] = max(c[k], w)
        return c

    ma, mb = keyed(a), keyed(b)
    if a.lang != b.lang:  # a name inside the Chinese text is a plain word in the English one
        for mine, theirs, other in ((ma, mb, b), (mb, ma, a)):
            for key in [k for k in mine if k.startswith("name:")]:
                if key[5:] in other.latin_words and key not in theirs:
                    theirs[key] = mine[key]
    shared = sum(min(ma[k], mb[k]) for k in ma if k in mb)
    only_a = tuple(sorted(k for k in ma if k not in mb))
    only_b = tuple(sorted(k for k in mb if k not in ma))
    return Overlap(shared, sum(ma[k] for k in only_a), sum(mb[k] for k in only_b), a.lang == b.lang, only_a, only_b)


def _comparable(key: str) -> bool:
    """Concept keys are uppercase, values are "class:value"; content words (lowercase, or Chinese) are neither."""
    return ":" in key or (key.isupper() and key.isascii())


# --------------------------------------------------------------------------------------------------------------
# Decisions

def compare(candidate: str, existing: str, distance: float, th: Thresholds) -> PairVerdict:
    """How `candidate` relates to one `existing` memory at cosine `distance`."""
    if distance > th.related:
        return PairVerdict("new", f"different topic (distance {distance:.2f})", False)
    a, b = analyse(existing), analyse(candidate)
    close = distance <= th.paraphrase
    ov = overlap(a, b)
    values = changed_values(a, b)
    if values:
        # The same slot: apart from the changed values, the two say the same thing (or the candidate says it changed).
        rest = overlap(a, b, ignore=[v.split(" ", 1)[0] for v in values])
        same_slot = rest.jaccard >= (MIN_OVERLAP if rest.comparable else CROSS_MIN_OVERLAP)
        if (same_slot and (close or rest.shared > 0)) or (b.strong_change and not a.strong_change):
            return PairVerdict("update", f"changed value: {'; '.join(values)}", False)
        return PairVerdict("new", f"another value ({'; '.join(values)}) of another fact ({rest.differ()})", True)
    flipped, flip_reason = polarity_flipped(a, b)
    if flipped:
        if close or (ov.comparable and ov.only_a == ov.only_b == 0):
            return PairVerdict("update", f"polarity flipped ({flip_reason})", False)
        return PairVerdict("new", f"the opposite ({flip_reason}) of a related fact", True)
    extra = one_sided_values(a, b)
    if extra:
        if close and b.strong_change and not a.strong_change:  # "用户用npm" -> "switched to pnpm"
            return PairVerdict("update", f"announced as a change ({', '.join(extra)})", True)
        return PairVerdict("new", f"a different detail ({', '.join(extra)})", close)
    if ov.comparable:
        return _compare_same_language(b, a, ov, distance, close, th)
    return _compare_across_languages(b, a, ov, distance, close, th)


# Share of the meaning (weighted Jaccard of concepts, values and content words) two same-language texts must have
# in common to be one fact restated. On the labelled pairs related facts share at most ~0.25 and rewordings
# mostly 0.3 or more, whatever their distance.
MIN_OVERLAP = 0.3
# Across languages only concepts and values are matched, so what they share must weigh more (on the labelled pairs
# cross-language rewordings share 0.5 or more).
CROSS_MIN_OVERLAP = 0.4


def _compare_same_language(b: Analysis, a: Analysis, ov: Overlap, distance: float, close: bool,
                           th: Thresholds) -> PairVerdict:
    """Same language, no value or polarity changed: the distance and the meaning in common decide."""
    if ov.only_a == 0 and ov.only_b == 0 and ov.shared > 0:
        return PairVerdict("duplicate", "restated: the same meaning in other words", False)
    if distance <= th.same:
        return PairVerdict("duplicate", f"practically the same sentence ({ov.differ()})", False)
    if close and ov.only_a > 0 and ov.only_b > 0 and b.strong_change and not a.strong_change:
        return PairVerdict("update", f"announced as a change ({ov.differ()})", True)
    if ov.jaccard >= MIN_OVERLAP:
        return PairVerdict("duplicate", f"restated in other words ({ov.differ()})", not close or ov.jaccard < 0.5)
    return PairVerdict("new", f"a related fact ({ov.differ()})", ov.shared > 0)


def _compare_across_languages(b: Analysis, a: Analysis, ov: Overlap, distance: float, close: bool,
                              th: Thresholds) -> PairVerdict:
    """Across languages only concepts and values are comparable; the encoder's distance carries the rest."""
    if not close:
        if ov.shared > 0 and ov.only_a == 0 and ov.only_b == 0:
            return PairVerdict("duplicate", "restated in another language (distant wording)", True)
        return PairVerdict("new", f"a different fact (distance {distance:.2f})", ov.shared > 0)
    if b.change and not a.change:
        return PairVerdict("update", "announced as a change, in another language", True)
    if ov.jaccard < CROSS_MIN_OVERLAP:
        return PairVerdict("new", f"a different fact, in another language ({ov.differ()})", True)
    sure = ov.shared > 0 and ov.only_a == 0 and ov.only_b == 0
    return PairVerdict("duplicate", f"restated in another language ({ov.differ()})", not sure)


_RANK = {("duplicate", False): 0, ("update", False): 1, ("duplicate", True): 2, ("update", True): 3}


def decide(candidate: str, neighbours: Sequence[Neighbour], th: Thresholds) -> Verdict:
    """The candidate's relation to its nearest stored memories (sorted by distance).

    A sure duplicate of any neighbour wins (nothing to store), then a sure update (supersede that one), then the
    unsure ones, nearest first. Nothing matched: new, borderline (with the neighbour) when it was a close call.
    """
    best: tuple[int, float, Neighbour, PairVerdict] | None = None
    unsure_new: tuple[Neighbour, PairVerdict] | None = None
    for n in neighbours:
        if n.distance > th.related:
            continue
        v = compare(candidate, n.text, n.distance, th)
        rank = _RANK.get((v.action, v.borderline))
        if rank is None:
            if v.borderline and unsure_new is None:
                unsure_new = (n, v)
            continue
        if best is None or (rank, n.distance) < (best[0], best[1]):
            best = (rank, n.distance, n, v)
    if best is not None:
        _, _, n, v = best
        return Verdict(v.action, n.id, f"{v.reason} (distance {n.distance:.2f})", v.borderline)
    if unsure_new is not None:
        n, v = unsure_new
        return Verdict("new", n.id, f"{v.reason} (distance {n.distance:.2f})", True)
    return Verdict("new", None, "no stored memory is about this", False)


def settle(items: Sequence[tuple[str, str, Verdict]], judge: Judge | None) -> list[Verdict]:
    """Let `judge` overrule the borderline verdicts, in one batched call.

    `items` are (candidate text, matched memory's text, verdict). A verdict that is not borderline, has no
    matched memory, or gets no valid answer stands. Exceptions from the judge propagate: the caller logs them
    and keeps the cheap checks' verdicts (a judge is an optimisation, never a reason to lose a write).
    """
    verdicts = list(v for _, _, v in items)
    asked = [i for i, (_, existing, v) in enumerate(items) if v.borderline and v.matched_id and existing]
    if judge is None or not asked:
        return verdicts
    answers = list(judge([(items[i][0], items[i][1]) for i in asked]) or [])
    for i, answer in zip(asked, answers):
        answer = str(answer).strip().lower()
        if answer in ACTIONS:
            v = verdicts[i]
            verdicts[i] = replace(v, action=answer, borderline=False, reason=f"judge: {answer} ({v.reason})")
    return verdicts


def explain(candidate: str, existing: str) -> dict:
    """The units and signals of a pair, for the evaluation script and for debugging a decision."""
    a, b = analyse(existing), analyse(candidate)
    ov = overlap(a, b)
    return {"existing": [(u.kind, u.key) for u in a.units], "candidate": [(u.kind, u.key) for u in b.units],
            "changed_values": changed_values(a, b), "one_sided_values": one_sided_values(a, b),
            "polarity": polarity_flipped(a, b)[1], "shared": ov.shared, "differ": ov.differ(),
            "comparable": ov.comparable}
