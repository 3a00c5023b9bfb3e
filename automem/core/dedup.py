"""Duplicate / update / new: how a candidate memory relates to the stored memories nearest to it.

Plain functions, no I/O. The write path finds the nearest neighbours (cosine distance, same wing, visible to the
profile) and asks `decide`; `settle` is where an LLM judge decides the pairs the rules cannot.

Loss first. A wrong duplicate or update destroys a fact silently and for ever; a missed duplicate costs one extra
line that a judge or `automem compact` can merge later. The rules therefore say:

- **duplicate** only when nothing of substance on either side is left unmatched: every concept, value, name,
  number and content word of each text is found in the other (after dropping frame words such as "用户", "I",
  "always", "习惯", and mapping synonyms and translations to one concept). One differing word, entity or value,
  whatever the distance, and it is not a duplicate. A candidate that says strictly less than the stored memory
  (only values missing, no negation, not another subject) is a duplicate too: storing nothing loses nothing.
- **update** only for a new value of the same slot, with nothing else changed, and only where the new value
  excludes the old one: the opposite (a negation or antonym: "喜欢" / "不喜欢"), a new quantity ("3.11" ->
  "3.12", 两杯 -> 三杯; not an ordinal or an issue number, which name instances), or a change the candidate
  announces ("改用", "switched to") of one stretch of the same sentence. A value of the same class alone is not a
  slot: a trip to city A and a holiday in city B, 哥哥 and 姐姐, a cat's name and a dog's.
- **new** for everything else, linked (`matched_id`, stored as `related_to`) to the nearest neighbour within the
  related distance.
- **events** (the episodic wing) are never superseded by another event; a duplicate only when the same event is
  restated (and not "again" / "又" / "再次").

Before words are compared they are brought to one form: numbers however written ("六千" = 6000, "2万" = 20000, "20k"
= "20,000", "forty" = 40, "六点" = "6:00"), English word forms (irregular "took" = "take", "fluently" = "fluent",
"intolerance" = "intolerant"). A few words that only frame the others may be set aside (`set_aside`), and only in
a close pair (`RELAXED_DISTANCE`) whose every other word is matched: a light verb before what the other side says
without it ("学打网球" / "学网球"), a class word beside a value of its class on both sides ("代码编辑器是Neovim" /
"写代码用Neovim"), a naming word before a name both give ("a brother called Sam" / "Sam is the user's brother").

Every pair within the related distance that is not a same-wording restatement (only frame words, order or
punctuation differ) is `borderline`: with a judge configured, it decides them. Why not a bare distance threshold:
with the offline encoder, "项目用Python 3.11" vs "项目改用Python 3.12" is 0.03 apart, closer than most paraphrases,
and "allergic to bees" vs "allergic to wasps" 0.08 (see reference/embeddings.md): distance only says "same topic".

Chinese has no spaces: values are found first, then CJK runs are segmented by longest match against the lexicon
(automem/data/lexicon.yaml, data with a documented format); what is left is compared as characters and character
bigrams; latin words, numbers and paths are tokens of their own. Nothing in the lexicon is needed for a fact to
be kept: a word it does not know is compared as itself, so an unknown difference keeps the pair apart. The
lexicon only lets more restatements be recognised (and, through antonyms, negations, change markers and value
classes, more updates).
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
    """Cosine distance `related`: beyond it the two texts are about different things, never merged and never put
    to a judge. Within it, distance decides nothing: the offline encoder puts "Python 3.11" and "3.12" closer than
    most paraphrases."""

    related: float

    @classmethod
    def from_config(cls, cfg) -> "Thresholds":
        return cls(cfg.dedup_related_distance)


@dataclass(frozen=True)
class PairVerdict:
    action: str  # duplicate | update | new
    reason: str
    borderline: bool  # the cheap checks are not sure: a judge may settle it


@dataclass(frozen=True)
class Verdict:
    action: str  # duplicate | update | new
    matched_id: str | None  # the memory duplicated or updated; for new, the nearest related one (or None)
    reason: str
    borderline: bool  # the rules are not sure: a judge settles it when one is configured
    ask: tuple[str, ...] = ()  # the neighbours to put to the judge, best first


# (candidate, existing, wing) triples -> "duplicate" | "update" | "new" for each, in one batched call.
Judge = Callable[[list[tuple[str, str, str]]], list[str]]


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
REPEAT = tuple(_LEX["repeat"]["en"]) + tuple(_LEX["repeat"]["zh"])
CONCEPTS: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in _LEX["concepts"].items()}
VALUE_CLASSES: dict[str, dict[str, tuple[str, ...]]] = {
    cls: {value: tuple(forms) for value, forms in members.items()} for cls, members in _LEX["value_classes"].items()}
ANTONYMS: tuple[tuple[str, str], ...] = tuple((a, b) for a, b in _LEX["antonyms"])
# The concept that only names a value class ("editor" for vim, "language" for French): said beside a value of that
# class, it adds nothing ("用户写代码用Neovim" / "用户的代码编辑器是Neovim").
CLASS_WORDS: dict[str, frozenset[str]] = {cls: frozenset(keys) for cls, keys in (_LEX.get("class_words") or {}).items()}
# Verbs that only carry the noun after them ("打网球" is 网球 played, "做编织" knitting done, "do yoga" yoga).
LIGHT_VERBS_ZH = frozenset(_LEX.get("light_verbs", {}).get("zh") or ())
LIGHT_VERBS_EN_FORMS = tuple(_LEX.get("light_verbs", {}).get("en") or ())
NAMING_EN_FORMS = tuple(_LEX.get("naming", {}).get("en") or ())  # "called", "named": a name follows
NAMING_ZH = frozenset(_LEX.get("naming", {}).get("zh") or ())
# Words that say a number names which one: before it ("number 2", "No. 3", "第2"), after it ("3号").
NUMBERING_BEFORE = frozenset(w.lower() for w in (_LEX.get("numbering", {}).get("before") or ()))
NUMBERING_AFTER = frozenset(_LEX.get("numbering", {}).get("after") or ())
_YEAR = re.compile(r"(?:19|20)\d\d")  # a year when it reads as one: "2019年", "in 2019", "a 1974 Stratocaster"
_YEAR_BEFORE = frozenset({"in", "since", "from", "until", "till", "by", "during", "year", "circa"})

_CN_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10000}
_CN_NUMERAL = set(_CN_DIGITS) | set(_CN_UNITS)
_EN_NUMBERS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}
_EN_NUMBERS.update(once=1, twice=2, thrice=3, half=0.5, dozen=12)
_EN_TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
_EN_SCALES = {"hundred": 100, "thousand": 1000, "million": 1000000}
# Irregular English forms -> the base form the lexicon and the other side know ("took" / "take", "won" / "win").
IRREGULAR_EN: dict[str, str] = dict(_LEX.get("irregular_en") or {})
_EN_ORDINALS = {w: i for i, w in enumerate(
    "zeroth first second third fourth fifth sixth seventh eighth ninth tenth".split()) if i}
# Measure words after a Chinese numeral make it a number ("两杯", "三点"), not part of a word ("统一", "一直").
_CN_MEASURES = set("个杯次天张点岁年月周号日小时分钟秒人篇条本页行种位台遍倍层级章节顿瓶块份寸字元斤米度只件双首部门辆套")
# Measure words that only count (unlike 杯, 天, 岁, 元 ...): read as part of their number.
_CN_CLASSIFIERS = set("个张只位台件本条部辆套双首份颗棵把遍趟次")


# --------------------------------------------------------------------------------------------------------------
# Tokens

@dataclass(frozen=True)
class Unit:
    """One piece of a text: kind is frame, negation, negchange, change, repeat, concept, value or content."""

    kind: str
    key: str  # concept key, "class:value", or the canonical content string
    weight: float = 1.0
    surface: str = ""  # the words as written (stemmed), when the key is not them: a concept or value from the lexicon


_TOKEN = re.compile(r"""
    (?P<url>https?://[^\s，。；、）)]+)
  | (?P<path>(?:~|\.{1,2})?/[\w.\-~/]*\w|~|[\w\-]+(?:/[\w.\-]+)+|\w+\.(?:py|js|ts|md|json|yaml|yml|toml|txt|cfg|ini|sh|rs|go|html|css|lock)\b)
  | (?P<ident>\#\d+)
  | (?P<num>(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+(?:[.:/\-]\d+)*)(?:%|[a-zA-Z]{1,2}\b)?)
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
            stem = w[: len(w) - len(suffix)] + keep
            if suffix in ("ing", "ed") and len(stem) >= 4 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
                stem = stem[:-1]  # knitting -> knit, stopped -> stop
            return stem
    return w


def _build_lexicon() -> tuple[dict[str, Unit], dict[tuple[str, ...], Unit], int]:
    """Surface form -> Unit, for CJK words (longest match) and latin words / phrases (up to 3 words).
    Earlier kinds win: a word that is both a concept and a frame word is a concept."""
    cjk: dict[str, Unit] = {}
    latin: dict[tuple[str, ...], Unit] = {}

    def put(surface: str, unit: Unit) -> None:
        if _CJK_CHAR.search(surface):
            cjk.setdefault(surface, replace(unit, surface=surface))
        else:
            words = tuple(surface.lower().split())
            latin.setdefault(words, replace(unit, surface=" ".join(_stem_en(w) for w in words)))

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
    for surface in REPEAT:
        put(surface, Unit("repeat", surface, 0))
    for surface in FRAME_EN | FRAME_ZH:
        put(surface, Unit("frame", surface, 0))
    return cjk, latin, max(len(s) for s in cjk)


_CJK_LEXICON, _LATIN_LEXICON, _CJK_LONGEST = _build_lexicon()
_LATIN_STEMMED = {tuple(_stem_en(w) for w in k): u for k, u in _LATIN_LEXICON.items()}
LIGHT_VERBS_EN = frozenset(_stem_en(w) for w in LIGHT_VERBS_EN_FORMS)  # compared as stemmed content words
NAMING_EN = frozenset(_stem_en(w) for w in NAMING_EN_FORMS)
# Values of two characters or more, found anywhere in a CJK run before the rest is segmented.
_CJK_VALUES = {s: u for s, u in _CJK_LEXICON.items() if u.kind == "value" and len(s) >= 2}
_CJK_VALUE_LONGEST = max(len(s) for s in _CJK_VALUES)


def _numeral_end(run: str, i: int) -> int:
    """End of a Chinese numeral starting at i when a measure word follows it ("两杯", "三点"), or when it is
    unmistakably a number by itself: a digit and a unit, starting with the digit or 十 ("六千", "二十", "两千三百",
    "十二"; not "千万" or "万一", which are words), else i."""
    j = i
    while j < len(run) and run[j] in _CN_NUMERAL:
        j += 1
    if j < len(run) and run[j] in _CN_MEASURES:
        return j
    numeral = run[i:j]
    if (len(numeral) >= 2 and (numeral[0] in _CN_DIGITS or numeral[0] == "十")
            and any(c in _CN_UNITS for c in numeral) and any(c in _CN_DIGITS for c in numeral)):
        return j
    return i


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
        return str(n), end + (2 if run.startswith("点钟", end) else 1)  # "六点" is six o'clock: "6:00", "at six"
    if end < len(run) and run[end] in _CN_CLASSIFIERS:
        return str(n), end + 1  # a bare classifier counts, it adds nothing: 一张 is one, 两只 two
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
                if unit.key.startswith("city:") and run.startswith("市", i):  # 上海市 is 上海
                    i = start = i + 1
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
        if run[i] == "第" and _numeral_run_end(run, i + 1) > i + 1:  # an ordinal names an instance: 第二篇
            end = _numeral_run_end(run, i + 1)
            out.append(Unit("value", f"num:{_cn_number(run[i + 1:end])}", 2, run[i:end]))
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
    """Leading zeros dropped per part ("08:00" -> "8:00"); versions keep their parts ("3.10" stays "3.10"); a
    thousands comma goes ("20,000" -> "20000"), and so does a full hour's ":00" ("6:00" is the 6 of "六点", "six")."""
    text = text.lower().replace(",", "")
    if re.fullmatch(r"\d{1,2}:00", text):
        text = text[:-3]
    parts = re.split(r"([.:/\-])", text)
    return "".join((p.lstrip("0") or "0") if p.isdigit() else p for p in parts)


def _scaled(number: str, factor: int) -> str:
    """"20" x 1000 -> "20000", "1.5" x 10000 -> "15000": a number written with a scale word ("20k", "2万")."""
    try:
        value = float(number) * factor
    except ValueError:
        return number
    return str(int(value)) if value == int(value) else str(value)


def _daypart(number: str, suffix: str) -> str:
    """The part of the day of "7am", "3 pm", "9pm": 12-5 pm is the afternoon (下午), later the evening."""
    if suffix == "am":
        return "MORNING"
    lead = re.match(r"\d+", number)  # "3", "3:30", "1.30" (a British time), "2-3"
    hour = int(lead.group()) if lead else 0
    return "AFTERNOON" if hour == 12 or 1 <= hour <= 5 else "EVENING"


def _number_units(tok: str) -> list[Unit]:
    """"7am" is 7 in the morning, "3pm" 3 in the afternoon, "7pm" 7 in the evening; other suffixes (18px, 4k, 80%)
    stay with the number."""
    low = tok.lower()
    if low.endswith(("st", "nd", "rd", "th")) and low[:-2].isdigit():  # "2nd": an ordinal names an instance
        return [Unit("value", f"num:{_canonical_number(low[:-2])}", 2, low)]
    if low.endswith(("am", "pm")) and low[:-2].replace(":", "").isdigit():
        return [Unit("concept", _daypart(low[:-2], low[-2:]), 2), Unit("value", f"num:{_canonical_number(low[:-2])}", 2)]
    if low.endswith("k") and re.fullmatch(r"[\d,]+(?:\.\d+)?", low[:-1]):  # "20k" is 20000
        return [Unit("value", f"num:{_scaled(low[:-1].replace(',', ''), 1000)}", 2)]
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
                tuple(_stem_en(w) for w in chunk)) or _LATIN_STEMMED.get(
                tuple(_stem_en(IRREGULAR_EN.get(w.lower(), w)) for w in chunk))  # "took" is "take"
            if unit is not None:
                out.append(unit)
                i += size
                break
        else:
            word = words[i]
            number, end = _en_number(words, i)
            if end > i:
                out.append(Unit("value", f"num:{number}", 2))
                i = end
                continue
            if word.lower() in _EN_ORDINALS:
                out.append(Unit("value", f"num:{_EN_ORDINALS[word.lower()]}", 2, word.lower()))
            elif in_cjk_text or _looks_like_name(word, first=sentence_start and i == 0):
                out.append(Unit("value", f"name:{_stem_en(word)}", 2))
            else:
                out.append(Unit("content", _content_stem(word), 2))
            i += 1
    return out


def _en_number(words: list[str], i: int) -> tuple[str, int]:
    """The number spelled out from words[i] ("forty" -> 40, "twenty-five" -> 25, "two hundred" -> 200, "a
    thousand": "a" is a frame word, "thousand" alone 1000) and where it ends; (_, i) when there is none."""
    total = current = 0
    j = i
    while j < len(words):
        w = words[j].lower()
        if w in _EN_NUMBERS and not (j > i and current % 10):
            current += _EN_NUMBERS[w]
        elif w in _EN_TENS and not (j > i and current % 100):
            current += _EN_TENS[w]
        elif w in _EN_SCALES:
            scale = _EN_SCALES[w]
            if scale == 100:
                current = (current or 1) * 100
            else:
                total += (current or 1) * scale
                current = 0
        else:
            break
        j += 1
    if j == i:
        return "", i
    value = total + current
    return (str(int(value)) if value == int(value) else str(value)), j


def _content_stem(word: str) -> str:
    """A content word the lexicon does not know, in a form its relatives share: the base of an irregular verb
    ("took" -> "take"), an adverb's adjective ("fluently" -> "fluent"), "-ance"/"-ant" and "-ence"/"-ent" as one
    ("intolerance" / "intolerant"), a silent e dropped ("quote" / "quoting"). Only for content words: a lexicon word is looked up as written first, so
    "likely" never becomes LIKE."""
    w = word.lower()
    w = _stem_en(IRREGULAR_EN.get(w, w))
    if w.endswith("ly") and len(w) >= 6 and not w.endswith(("ily", "ally")):
        w = w[:-2]
    for long, short in (("ance", "ant"), ("ence", "ent"), ("ancy", "ant"), ("ency", "ent")):
        if w.endswith(long) and len(w) > len(long) + 2:
            return w[: -len(long)] + short
    if w.endswith("e") and len(w) >= 4 and w[-2] not in "aeiou":
        w = w[:-1]  # a silent e, as the stemmer leaves it after -ing / -ed: "quote" meets "quoting" ("quot")
    return w


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
    def ordinals(self) -> set[str]:
        """Numbers that name an instance rather than count: "#1033", "第二篇", "2nd", "second", "R5" (glued to a name)."""
        return {u.key[4:] for u in self.units if u.kind == "value" and u.key.startswith("num:") and u.surface}

    @property
    def identifiers(self) -> set[str]:
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
            if before in NUMBERING_BEFORE or after in NUMBERING_AFTER or year:
                found.add(u.key[4:])
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
        return found

    @property
    def concepts(self) -> set[str]:
        return {u.key for u in self.units if u.kind == "concept"}

    @property
    def latin_words(self) -> set[str]:
        """Every latin word of the text and its hyphen parts, stemmed: where a name from the other side may be."""
        words = re.findall(r"[A-Za-z][A-Za-z'_\-.+#]*", self.text)
        return {f(p) for w in words for p in [w, *w.split("-")] if p for f in (_stem_en, _content_stem)}


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
            if prev_kind == "num" and tok.lower() in ("am", "pm") and not gap.strip():  # "6 am", "3 pm"; "I am" is no time
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
        if (x in ca and y in cb and y not in ca and x not in cb) or (y in ca and x in cb and x not in ca and y not in cb):
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


# Cosine distance within which a pair may be taken for a restatement once a word that only frames the others is set
# aside (a light verb, a class word, "called" before a name). Necessary, never sufficient: every other word of both
# sides must still be matched. The offline encoder puts most restatements well inside it (reference/embeddings.md).
RELAXED_DISTANCE = 0.35


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


def one_slot_replaced(a: Analysis, b: Analysis) -> bool:
    """Everything in the same order except one stretch, replaced by another: "用户的猫叫[咪咪]" / "用户的猫改名叫[豆豆]".
    The same subject and attribute around one new value, found from the structure, not from a vocabulary."""
    import difflib

    if a.lang != b.lang:
        return False
    sa, sb = _slot_sequence(a), _slot_sequence(b)
    ops = [op for op in difflib.SequenceMatcher(None, sa, sb, autojunk=False).get_opcodes() if op[0] != "equal"]
    kept = len(sa) - sum(i2 - i1 for _, i1, i2, _, _ in ops)
    return len(ops) == 1 and ops[0][0] == "replace" and kept >= 1


# --------------------------------------------------------------------------------------------------------------
# Decisions. Loss first: a wrong duplicate or update destroys a fact for good, a missed one costs a line that a
# judge or `compact` can merge later. So:
#   duplicate  only when nothing of substance on either side is left unmatched;
#   update     only for a new value of the same slot with nothing else changed, and only where the new value
#              excludes the old one: the opposite (negation, antonym), a new quantity, or a change the candidate
#              announces ("改用", "switched to"); a value of the same class alone (trip to city A / holiday in
#              city B, 哥哥 / 姐姐) is not enough;
#   new        everything else, linked to the nearest neighbour so a judge or `compact --judge` can revisit it.
# Events (episodic memories) are never superseded by another event: two events are one only when restated.

def compare(candidate: str, existing: str, distance: float, th: Thresholds, event: bool = False) -> PairVerdict:
    """How `candidate` relates to one `existing` memory at cosine `distance`. `event`: both are events.

    `borderline` is True for every pair within the related distance that is not a same-wording restatement:
    those are the pairs a judge settles when one is configured.
    """
    if distance > th.related:
        return PairVerdict("new", f"different topic (distance {distance:.2f})", False)
    a, b = analyse(existing), analyse(candidate)
    if same_wording(a, b):
        return PairVerdict("duplicate", "the same words (only frame words, order or punctuation differ)", False)
    values = changed_values(a, b)
    flipped, flip_reason = polarity_flipped(a, b)
    ov = overlap(a, b)
    if event and _repeats(b) != _repeats(a):
        return PairVerdict("new", "another occurrence of the event (said to happen again)", True)
    if not values and not flipped:
        if ov.shared > 0:
            how = "in other words" if ov.comparable else "in another language"
            if not ov.unmatched:
                return PairVerdict("duplicate", f"restated {how}: every word of each side matched", True)
            if says_less(a, b, ov, event):
                return PairVerdict("duplicate", f"restated {how}, with less detail ({ov.differ()})", True)
            aside = set_aside(a, b, ov) if distance <= RELAXED_DISTANCE else None
            if aside:
                return PairVerdict("duplicate", f"restated {how}: every word matched once "
                                                f"{'; '.join(aside)} ({ov.differ()})", True)
        if not event and b.strong_change and not a.strong_change and one_slot_replaced(a, b):
            return PairVerdict("update", f"announced as a change of one slot ({ov.differ()})", True)
        return PairVerdict("new", f"a different fact ({ov.differ()})", True)
    change = "; ".join(values) or f"the opposite: {flip_reason}"
    if event:
        return PairVerdict("new", f"another event ({change})", True)
    why = slot_change(a, b, values, flipped)
    if why:
        return PairVerdict("update", f"{why} ({change})", True)
    return PairVerdict("new", f"both may be true ({change}; {ov.differ()})", True)


def slot_change(a: Analysis, b: Analysis, values: list[str], flipped: bool) -> str:
    """Why `b` replaces `a` (the same slot, a value that excludes the old one), or "" when nothing says so."""
    if not _same_holder(a, b):
        return ""  # one subject's slot: "The user switched to emacs" never replaces "Colleague No. 2 uses vim"
    announced = b.strong_change and not a.strong_change
    rest = overlap(a, b, ignore=[v.split(" ", 1)[0] for v in values])
    if flipped and not values:
        return "" if rest.unmatched else "the opposite of the same fact"
    if flipped:
        return ""
    if len(values) > 1:
        return ""  # two kinds of value changed (a cat named Luna / a dog named Milo): two slots, maybe two things
    changed_numbers = {n for v in values if v.startswith("num ") for n in re.split(r"[ /]|->", v[4:]) if n}
    if changed_numbers & (a.identifiers | b.identifiers):
        return ""  # the number says which one (room 305 / room 207): another thing, not a new value
    if not rest.unmatched:
        if changed_numbers:
            return "a new number for the same slot"
        if announced:
            return "announced as a change of the same slot"
        return ""
    if announced and one_slot_replaced(a, b):
        return "announced as a change of one slot"
    return ""


def says_less(a: Analysis, b: Analysis, ov: Overlap, event: bool) -> bool:
    """The candidate `b` says nothing the stored `a` does not: all of it matched, and what only `a` says are values
    (a number, a name, a place: details of the same statement), not another subject ("the user's daughter"), and
    neither text negates (not liking coffee with milk is not not liking coffee). Storing nothing loses nothing.
    Not for events: a less detailed event may be another occurrence."""
    if event or ov.only_b_keys or not ov.only_a_keys or a.negations or b.negations:
        return False
    subject = _other_subject(a)
    if subject is not None and subject in ov.only_a_keys:
        return False
    return all(":" in k for k in ov.only_a_keys)  # "class:value" keys; content words and concepts are not details


_POSSESSIVE = frozenset({"user's", "users'", "my", "his", "her", "their", "our", "your"})
_HOLDERS = frozenset({"用户", "我", "他", "她", "我们", "你", "user", "i"})


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
            return None
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


def is_about_user(text: str) -> bool:
    """Whether `text` is about the user themself ("用户是高中物理老师", "The user is left-handed"), not about whom or
    what the user's holder owns ("the user's wife", "用户的父亲") or someone named first ("Anna likes tea").
    Recall's system block puts such persona facts first (automem.core.recall.block_score)."""
    return _other_subject(analyse(text)) is None


def _repeats(x: Analysis) -> bool:
    """An event said to happen again ("again", "又", "再次"): another occurrence, not the same one restated."""
    return any(u.kind == "repeat" for u in x.units)


_RANK = {"duplicate": 0, "update": 1}


def decide(candidate: str, neighbours: Sequence[Neighbour], th: Thresholds, event: bool = False) -> Verdict:
    """The candidate's relation to its nearest stored memories (sorted by distance).

    A duplicate of any neighbour wins (nothing to store; the same-wording one first), then an update (supersede
    that one), nearest first. Nothing matched: new, linked to the nearest neighbour within the related distance.
    `ask` lists the neighbours a judge should see: the matched one first, then the others by distance.
    """
    best: tuple[tuple, Neighbour, PairVerdict] | None = None
    near: list[Neighbour] = []
    for n in neighbours:
        if n.distance > th.related:
            continue
        near.append(n)
        v = compare(candidate, n.text, n.distance, th, event=event)
        if v.action in _RANK:
            rank = (_RANK[v.action], v.borderline, n.distance)
            if best is None or rank < best[0]:
                best = (rank, n, v)
    near.sort(key=lambda n: n.distance)
    if best is not None:
        _, n, v = best
        ask = tuple(m.id for m in [n] + [m for m in near if m.id != n.id]) if v.borderline else ()
        return Verdict(v.action, n.id, f"{v.reason} (distance {n.distance:.2f})", v.borderline, ask)
    if near:
        n = near[0]
        v = compare(candidate, n.text, n.distance, th, event=event)
        return Verdict("new", n.id, f"{v.reason} (distance {n.distance:.2f})", True, tuple(m.id for m in near))
    return Verdict("new", None, "no stored memory is about this", False)


@dataclass(frozen=True)
class Question:
    """One candidate put to the judge: its text, the rules' verdict, the neighbours (id, text) to compare it with
    (best first) and its wing (an episodic memory is an event)."""

    candidate: str
    verdict: Verdict
    neighbours: tuple[tuple[str, str], ...]
    wing: str = "user"


def settle(questions: Sequence[Question], judge: Judge | None) -> list[Verdict]:
    """Let `judge` decide the questions, in one batched call of (candidate, existing, wing) pairs.

    Per candidate: the first neighbour judged a duplicate wins, then the first judged an update (never for an
    event: it becomes new), else new when every answer says so. A missing or unusable answer leaves the rules'
    verdict. Exceptions from the judge propagate: the caller logs them and keeps the rules' verdicts.
    """
    verdicts = [q.verdict for q in questions]
    pairs: list[tuple[str, str, str]] = []
    spans: list[tuple[int, int]] = []
    for q in questions:
        start = len(pairs)
        pairs.extend((q.candidate, text, q.wing) for _, text in q.neighbours if text)
        spans.append((start, len(pairs)))
    if judge is None or not pairs:
        return verdicts
    answers = [str(a).strip().lower() for a in (judge(pairs) or [])]
    answers += [""] * (len(pairs) - len(answers))
    for i, (q, (start, stop)) in enumerate(zip(questions, spans)):
        if start == stop:
            continue
        said = answers[start:stop]
        ids = [nid for nid, text in q.neighbours if text]
        if q.wing == "episodic":
            said = ["new" if s == "update" else s for s in said]
        for action in ("duplicate", "update"):
            if action in said:
                j = said.index(action)
                verdicts[i] = Verdict(action, ids[j], f"judge: {action} ({q.verdict.reason})", False)
                break
        else:
            if all(s == "new" for s in said):
                verdicts[i] = Verdict("new", ids[0], f"judge: new ({q.verdict.reason})", False)
    return verdicts


def explain(candidate: str, existing: str) -> dict:
    """The units and signals of a pair, for the evaluation script and for debugging a decision."""
    a, b = analyse(existing), analyse(candidate)
    ov = overlap(a, b)
    return {"existing": [(u.kind, u.key) for u in a.units], "candidate": [(u.kind, u.key) for u in b.units],
            "changed_values": changed_values(a, b), "polarity": polarity_flipped(a, b)[1],
            "same_wording": same_wording(a, b), "shared": ov.shared, "differ": ov.differ(),
            "comparable": ov.comparable}
