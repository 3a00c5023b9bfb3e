"""Text into units: the lexicon and the tokeniser under the write path's text analysis (`automem.core.analysis`).

The lexicon is data, not code (automem/data/lexicon.yaml documents its format), loaded once at import. Nothing in
it is needed for a fact to be kept: a word it does not know is compared as itself, so an unknown difference keeps
a pair apart. The lexicon only lets more restatements be recognised (and, through antonyms, negations, change
markers and value classes, more updates).

Before words are compared they are brought to one form: numbers however written ("六千" = 6000, "2万" = 20000, "20k"
= "20,000", "forty" = 40, "六点" = "6:00"), English word forms (irregular "took" = "take", "fluently" = "fluent",
"intolerance" = "intolerant").

Chinese has no spaces: values are found first, then CJK runs are segmented by longest match against the lexicon;
what is left is compared as characters and character bigrams; latin words, numbers and paths are tokens of their
own. Plain functions, no I/O beyond reading the lexicon file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

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
CORRECTION = tuple(_LEX["change"]["correction"]["en"] + _LEX["change"]["correction"]["zh"])
_KEPT, _DROPPED = _LEX["change"].get("kept") or {}, _LEX["change"].get("dropped") or {}
KEPT = tuple(_KEPT.get("en") or ()) + tuple(_KEPT.get("zh") or ())  # "same time": the rest of an event holds
DROPPED = tuple(_DROPPED.get("en") or ()) + tuple(_DROPPED.get("zh") or ())  # "之前那家退了": the old value let go
REPEAT = tuple(_LEX["repeat"]["en"]) + tuple(_LEX["repeat"]["zh"])
_OCCURRENCE = _LEX.get("occurrence") or {}
OCCURRENCE_WORDS = tuple(_OCCURRENCE.get("en") or ()) + tuple(_OCCURRENCE.get("zh") or ())
NOT_OCCURRENCE = tuple(_OCCURRENCE.get("not") or ())
OCCURRENCE_PEOPLE: dict[str, str] = dict(_OCCURRENCE.get("people") or {})
OCCURRENCE_NUMBERED = tuple(_OCCURRENCE.get("numbered") or ())
OCCURRENCE_ANCHORS = tuple(_OCCURRENCE.get("anchors") or ())
OCCURRENCE_PERIODS = frozenset(_OCCURRENCE.get("periods") or ())
OCCURRENCE_DAYS = frozenset(_OCCURRENCE.get("days") or ())
OCCURRENCE_KINDS: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in (_OCCURRENCE.get("kinds") or {}).items()}
OCCURRENCE_ONCE = frozenset(f"kind:{k}" for k in (_OCCURRENCE.get("once") or ()))
OCCURRENCE_YEARLY = tuple(_OCCURRENCE.get("yearly") or ())
OCCURRENCE_PARENT_SELF = tuple(_OCCURRENCE.get("parent_self") or ())
OCCURRENCE_STAND_IN = tuple(_OCCURRENCE.get("stand_in") or ())
OCCURRENCE_NOT_PEOPLE = tuple(_OCCURRENCE.get("not_people") or ())
CONCEPTS: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in _LEX["concepts"].items()}
VALUE_CLASSES: dict[str, dict[str, tuple[str, ...]]] = {
    cls: {value: tuple(forms) for value, forms in members.items()} for cls, members in _LEX["value_classes"].items()}
ANTONYMS: tuple[tuple[str, str], ...] = tuple((a, b) for a, b in _LEX["antonyms"])
# The concept that only names a value class ("editor" for vim, "language" for French): said beside a value of that
# class, it adds nothing ("用户写代码用Neovim" / "用户的代码编辑器是Neovim").
CLASS_WORDS: dict[str, frozenset[str]] = {cls: frozenset(keys) for cls, keys in (_LEX.get("class_words") or {}).items()}
# Times, days and frequencies: where they stand in a sentence says nothing about who does what to whom.
_MOVABLE = _LEX.get("movable") or {}
MOVABLE_CONCEPTS = frozenset(_MOVABLE.get("concepts") or ())
MOVABLE_CLASSES = frozenset(_MOVABLE.get("classes") or ())
_ROLES = _LEX.get("role_markers") or {}
ROLE_MARKERS = frozenset(w.lower() for lang in ("en", "zh") for w in (_ROLES.get(lang) or ()))
ROLE_SKIP = frozenset(w.lower() for w in (_ROLES.get("skip") or ()))
# Attributes a holder has one value of at a time (the format is documented in lexicon.yaml).
_SINGLE = _LEX.get("single_valued") or {}
SINGLE_HELD: dict[str, tuple[str, ...]] = {k: tuple(v or ()) for k, v in (_SINGLE.get("holds") or {}).items()}
SINGLE_OWNED = frozenset(_SINGLE.get("owned") or ())
OPEN_SUBJECTS = frozenset(_SINGLE.get("subjects") or ())
PAST_FORMS = tuple(_SINGLE.get("past") or ())
NOT_PAST = tuple(_SINGLE.get("not_past") or ())
QUALIFIERS = tuple(_SINGLE.get("qualifiers") or ())
SINGLE_ASKED: dict[str, tuple[str, ...]] = {k: tuple(v or ()) for k, v in (_SINGLE.get("asked") or {}).items()}
# Verbs that only carry the noun after them ("打网球" is 网球 played, "做编织" knitting done, "do yoga" yoga).
LIGHT_VERBS_ZH = frozenset(_LEX.get("light_verbs", {}).get("zh") or ())
LIGHT_VERBS_EN_FORMS = tuple(_LEX.get("light_verbs", {}).get("en") or ())
NAMING_EN_FORMS = tuple(_LEX.get("naming", {}).get("en") or ())  # "called", "named": a name follows
NAMING_ZH = frozenset(_LEX.get("naming", {}).get("zh") or ())
# Words that say a number names which one: before it ("number 2", "No. 3", "第2"), after it ("3号").
NUMBERING_BEFORE = frozenset(w.lower() for w in (_LEX.get("numbering", {}).get("before") or ()))
NUMBERING_AFTER = frozenset(_LEX.get("numbering", {}).get("after") or ())
NUMBERED_THINGS = frozenset(_LEX.get("numbering", {}).get("names") or ())  # "项目1", "server 2": which one

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
_CN_MEASURES = set("个杯次天张点岁年月周号日小时分钟秒人篇条本页行种位台"
                   "遍倍层级章节顿瓶块份寸字元斤米度只件双首部门辆套")
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
  | (?P<path>(?:~|\.{1,2})?/[\w.\-~/]*\w|~|[\w\-]+(?:/[\w.\-]+)+
             |\w+\.(?:py|js|ts|md|json|yaml|yml|toml|txt|cfg|ini|sh|rs|go|html|css|lock)\b)
  | (?P<ident>\#\d+)
  | (?P<num>(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+(?:[.:/\-]\d+)*)(?:%|[a-zA-Z]{1,2}\b)?)
  | (?P<word>[A-Za-z]+(?:['_.\-][A-Za-z]+)*[+#]*)
  | (?P<cjk>[\u3400-\u4dbf\u4e00-\u9fff]+)
""", re.VERBOSE | re.ASCII)  # ASCII: \w in paths must not swallow the Chinese around them

_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


# Words ending in s that are no plural: "https" is not "http" ("Redirect http to https"); "Windows" is not a window
# ("sat by the window"). And words the stemming would turn into another: a wedding is not "wed", Wednesday.
_NOT_PLURAL = frozenset({"https", "wss", "ftps", "dns", "gps", "sms", "css", "ios", "macos", "aws", "redis",
                         "postgres", "kubernetes", "jenkins", "windows"})
_STEMS = {"wedding": "wedding", "weddings": "wedding", "wedded": "wedded"}


def _stem_en(word: str) -> str:
    """Light English stemming so "uses"/"use", "indented"/"indent" meet; both sides get the same treatment."""
    w = word.lower()
    if w.endswith("'s"):
        w = w[:-2]
    if w in _NOT_PLURAL:
        return w
    if w in _STEMS:
        return _STEMS[w]
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
_LATIN_SIZES = tuple(range(max(len(k) for k in _LATIN_LEXICON), 0, -1))
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


_WEEK_BEFORE = {"上个": "LAST_WEEK", "下个": "NEXT_WEEK", "这个": "THIS_WEEK", "上": "LAST_WEEK", "下": "NEXT_WEEK",
                "这": "THIS_WEEK", "本": "THIS_WEEK"}


def _week_before(run: str, start: int, i: int) -> tuple[str, str] | None:
    """The week a weekday at `i` is placed in by the characters before it ("上" in "上周六"), or None."""
    for prefix, week in _WEEK_BEFORE.items():  # longest first
        if i - len(prefix) >= start and run.startswith(prefix, i - len(prefix)):
            return prefix, week
    return None


def _segment_cjk(run: str) -> list[Unit]:
    """Values first (so "每周五" holds 周五, not 每周 + 五), then the rest between them by `_segment_words`."""
    out: list[Unit] = []
    start = i = 0
    while i < len(run):
        for size in range(min(_CJK_VALUE_LONGEST, len(run) - i), 1, -1):
            unit = _CJK_VALUES.get(run[i:i + size])
            if unit is not None:
                week = _week_before(run, start, i) if unit.key.startswith("weekday:") else None
                if week is not None:  # "上周六" is last week's Saturday, "这周六" this week's: two days
                    out.extend(_segment_words(run[start:i - len(week[0])]))
                    out.append(Unit("concept", week[1], 2))
                else:
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
        return [Unit("concept", _daypart(low[:-2], low[-2:]), 2),
                Unit("value", f"num:{_canonical_number(low[:-2])}", 2)]
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
    """Phrases from the lexicon (the longest first: "city of brotherly love"), then single words. A latin word inside
    Chinese text is a name (a value); in English text a capitalised word mid-sentence or an identifier is one."""
    out: list[Unit] = []
    i = 0
    while i < len(words):
        for size in _LATIN_SIZES:
            chunk = words[i:i + size]
            if len(chunk) < size:
                continue
            unit = _LATIN_LEXICON.get(tuple(w.lower() for w in chunk)) or _LATIN_STEMMED.get(
                tuple(_stem_en(w) for w in chunk)) or _LATIN_STEMMED.get(
                tuple(_stem_en(IRREGULAR_EN.get(w.lower(), w)) for w in chunk))  # "took" is "take"
            if unit is not None and size == 1 and unit.kind == "frame" and (_capitalised_mid_sentence(
                    chunk[0], first=sentence_start and i == 0) or (in_cjk_text and len(chunk[0]) == 1)):
                unit = None  # a name the lexicon takes for a frame word: "The user knows Go", "从A机房"
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
    ("intolerance" / "intolerant"), a silent e dropped ("quote" / "quoting"). Only for content words: a lexicon
    word is looked up as written first, so "likely" never becomes LIKE."""
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


def _capitalised_mid_sentence(word: str, first: bool) -> bool:
    """"Go" in "The user knows Go", "A" in "Team A": capitalised (not ALLCAPS, not "I") and not the first word of a
    sentence."""
    if len(word) == 1:
        return not first and word.isupper() and word != "I"
    return not first and word[0].isupper() and word[1:].islower()


def _looks_like_name(word: str, first: bool) -> bool:
    """A proper name or identifier in English text: capitalised mid-sentence, ALLCAPS, or with inner punctuation."""
    if any(c in word for c in "_+#.") or (len(word) > 1 and word.isupper()):
        return True
    return word[:1].isupper() and not first
