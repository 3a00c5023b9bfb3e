"""Events: one occurrence told twice, or two occurrences.

A judge may say that an event replaces an earlier one: the dinner was on Saturday, not Friday; the flight lands at
Pudong, not Hongqiao. Applied, the earlier event is superseded, so a wrong "update" loses an event that happened
(last year's trip, the deploy of 1.4.0, mum's visit beside dad's). `another_occurrence` names what in a pair says
the two are two occurrences; where it finds something, the write path keeps both whatever a judge says, unless the
candidate itself says it corrects or moves what was told (`automem.core.dedup.event_may_replace`). Where it finds
nothing, a judge's "update" is applied: "dinner with Sam at Nopa on Friday" / "dinner with Sam at Zuni on Friday"
is one dinner told wrong once, and keeping both leaves the agent stating a place the user never went to.

Plain functions, no I/O; the words are the lexicon's `occurrence` section.
"""

from __future__ import annotations

import difflib
import re
from functools import lru_cache

from .analysis import KIN, Analysis, Phrases, _repeats, _slot_sequence, analyse, has_phrase, overlap
from .tokens import (
    _CJK_CHAR,
    CONCEPTS,
    MOVABLE_CONCEPTS,
    NOT_OCCURRENCE,
    OCCURRENCE_ANCHORS,
    OCCURRENCE_DAYS,
    OCCURRENCE_KINDS,
    OCCURRENCE_NOT_PEOPLE,
    OCCURRENCE_NUMBERED,
    OCCURRENCE_ONCE,
    OCCURRENCE_PARENT_SELF,
    OCCURRENCE_PEOPLE,
    OCCURRENCE_PERIODS,
    OCCURRENCE_STAND_IN,
    OCCURRENCE_WORDS,
    OCCURRENCE_YEARLY,
    VALUE_CLASSES,
)

_ORDINAL_SURFACE = re.compile(r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th)"
                              r"|第.+|v\d.*)", re.IGNORECASE)
# An ordinal that is a day of the month ("on the 18th.", "the 21st at 8am", "the 3rd of May"): when, not which one
# ("my 2nd marathon").
_DAY_OF_MONTH = re.compile(r"\b([1-9]|[12]\d|3[01])(?:st|nd|rd|th)\b"
                           r"(?=\s*(?:$|[.,;:!?)\u2014\u2013-]|(?:at|of|in|and|for)\b))", re.IGNORECASE)
_VERSIONED = frozenset({"VERSION", "DEPLOY", "BUILD"})  # a dotted number beside them is a release, not an amount


def another_occurrence(a: Analysis, b: Analysis) -> str:
    """Why the events `a` (stored) and `b` (new) are two occurrences, or "" when nothing says so."""
    return told_as_another(a, b) or _not_tied(a, b)


@lru_cache(maxsize=4096)  # several rules of one pair ask it (event_may_replace, moved_in_time, once_moved...)
def told_as_another(a: Analysis, b: Analysis, person: bool = True) -> str:
    """What in the pair says outright that there are two occurrences (again, also, another ordinal or release,
    another person, another period), or "". `person=False`: anything but another person."""
    if _repeats(a) or _repeats(b):
        return "said to happen again"
    wa, wb = _occurrence_words(a.text), _occurrence_words(b.text)
    word = next((w for w in wb + wa if (w in wa) != (w in wb)), "")  # on both sides ("这次…" / "这次…"), it anchors one
    if word:
        return f"'{word}' tells one more"
    ia, ib = _instances(a), _instances(b)
    if ia and ib and ia != ib:
        return f"another instance ({'/'.join(sorted(ia))} -> {'/'.join(sorted(ib))})"
    pa, pb = people(a), people(b)
    # each names someone the other does not ("Mia's recital" names no kin: the same girl)
    if person and pa - pb and pb - pa:
        return f"another person ({'/'.join(sorted(pa)) or '-'} -> {'/'.join(sorted(pb)) or '-'})"
    ta, tb = a.concepts & OCCURRENCE_PERIODS, b.concepts & OCCURRENCE_PERIODS
    if ta and tb and ta != tb:
        return f"another period ({'/'.join(sorted(ta))} -> {'/'.join(sorted(tb))})"
    return ""


_PAST_PERIODS = frozenset({"YESTERDAY", "LAST_WEEK", "LAST_MONTH", "LAST_YEAR"})
_LAST_WEEKDAY = re.compile(r"\blast\s+(?:mon|tues|wednes|thurs|fri|satur|sun)day\b", re.IGNORECASE)
# who comes along or where it is held, not whose event it is: "the conference for my son", "at my in-laws'", "陪我妈";
# whom a request is addressed to: "could you text my mom the new time", "提醒我老公"; or who said so, or has the user
# go: "领导说线上搞定就行", "my boss says it's off", "领导让我13号再走"
_BESIDE_EN = (r"\b(?:for|at|with|to|by|and|(?:text|tell|email|remind|ping|message|notify|ask|call)(?:ing)?)"
              r"\s+(?:my|our|the|his|her|their)?\s*")
_BESIDE_ZH = r"(?:[跟和陪带给为帮]|告诉|通知|提醒)[我咱]?"
_SAID_BY_EN = r"\s*(?:says|said|told me|tells me)\b"
_SAID_BY_ZH = r"\s*(?:说|讲|通知|告诉我|让我)"


# A name said as an event's owner ("Marcus's board presentation got pushed"): capitalised, before 's, and no day,
# month or time ("Saturday's game", "Today's standup" are when, not whose)
_OWNER = re.compile(r"\b([A-Z][a-z]+)(?:'s|’s)\s+(?!(?:been|got|gotten|going|happening|on|off|at|in|now|not|still|"
                    r"moved|cancelled|canceled|postponed|pushed|delayed|over|done|back|up|out)\b)[a-z]")
_NOT_OWNERS = frozenset({"today", "tomorrow", "yesterday", "tonight", "monday", "tuesday", "wednesday", "thursday",
                         "friday", "saturday", "sunday", "january", "february", "march", "april", "may", "june", "july",
                         "august", "september", "october", "november", "december", "user", "it", "that", "there",
                         "here", "what", "who", "let", "he", "she", "everyone", "nobody", "this", "next", "last"})


def _owners(text: str) -> set[str]:
    """The names `text` says own an event ("Marcus's board presentation"), not days or months, not the user's people
    ("Mom's surgery"), not a place ("at Rachel's")."""
    low = text.lower()
    return {m.group(1) for m in _OWNER.finditer(text) if m.group(1).lower() not in _NOT_OWNERS
            and not people(analyse(m.group(1))) and not re.search("(?:" + _BESIDE_EN + ")$", low[:m.start()])}


def _beside(text: str, key: str) -> bool:
    """Whether every person `key` names in `text` is said after a word that makes them a companion, the one the
    event is for, the place it is held or whom a request is addressed to ("for my son", "at my in-laws'", "带我妈",
    "text my wife the new time"), or before one that makes them who said so ("领导说线上搞定就行"), not its holder."""
    forms = [f for f in CONCEPTS.get(key, ()) if isinstance(f, str)]
    forms += [f for f, k in OCCURRENCE_PEOPLE.items() if k == key]
    low, said = text.lower(), False
    for form in sorted(forms, key=len, reverse=True):
        f = re.escape(form.lower())
        cjk = _CJK_CHAR.search(form)
        at = [m.start() for m in re.finditer(f if cjk else r"(?<![a-z])" + f + r"(?![a-z])", low)]
        if not at:
            continue
        said = True
        before, after = (_BESIDE_ZH, _SAID_BY_ZH) if cjk else (_BESIDE_EN, _SAID_BY_EN)
        if any(not re.search("(?:" + before + ")$", low[:i]) and not re.match(after, low[i + len(form):])
               for i in at):
            return False
    return said


def told_of_another(a: Analysis, b: Analysis) -> str:
    """Whom or when the candidate `b` names that the stored event `a` does not: someone else ("my wife's company
    party got pushed to January", "neighbor's bbq got scrapped") or a past period ("上周日爬山泡汤了" against "this
    Sunday's hike"). A correction word said beside them may be about that other event, so it alone does not let `b`
    replace `a` (`dedup.event_may_replace`), or "" when `b` names no one and no past period `a` does not."""
    others = {key for key in people(b) - people(a) if not _beside(b.text, key)}
    if not people(a):  # "Ava's recital" may be the stored "daughter's recital": only a stored event of no one else
        others |= {name for name in _owners(b.text) if name.lower() not in a.text.lower()}
    if others:
        return f"told of someone else ({'/'.join(sorted(others))})"
    past = (b.concepts & _PAST_PERIODS) - a.concepts
    if _LAST_WEEKDAY.search(b.text) and not _LAST_WEEKDAY.search(a.text) and "LAST_WEEK" not in a.concepts:
        past.add("LAST_WEEK")  # "last sunday's game got rained out": the analysis reads the weekday, not the week
    return f"told of another time ({'/'.join(sorted(past))})" if past else ""


def _not_tied(a: Analysis, b: Analysis) -> str:
    """What keeps the pair from reading as one occasion though nothing says two: several details told otherwise,
    or no day, date or number in common."""
    if a.lang == b.lang and _stretches(a, b) >= 2 and not _one_day_retold(a, b):
        return "more than one stretch differs"
    if not _anchors(a) & _anchors(b):
        return "nothing ties them to one occasion (no day, date, number or 'this time' in common)"
    return ""


def moved_in_time(a: Analysis, b: Analysis) -> bool:
    """Whether `b` tells `a`'s event again with only its day or time of day told otherwise, and nothing it adds
    ("Book club's on Thursday night" / "The user's book club meets Wednesday evening this week", "驾照考试是下周三上午
    九点" / "用户的驾照考试安排在下周一上午九点"): the shape of a rescheduling told without a word for it, and of two
    occurrences of a habit told alike, which only a reading judge tells apart (`dedup.event_may_replace`). Another
    month alone ("the electricity bill for October" / "for November") or another amount ("a 5K" / "a 10K") is not
    that shape."""
    if told_as_another(a, b):
        return False
    when_a, when_b = _when(a), _when(b)
    if not (when_a ^ when_b) - _MONTHS:
        return False
    what_a, what_b = _what(a, when_a), _what(b, when_b)
    return bool(what_b) and what_b <= what_a


_DATE_WORDS = frozenset({"月", "日", "号", "点", "noon", "midnight", "tonight"})
_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
                "november", "december")
_MONTHS = frozenset(f"name:{m}" for m in _MONTH_NAMES)
_MONTHS_BY_NAME = frozenset(_MONTH_NAMES)  # as `_anchors` gives them


def _when(x: Analysis) -> frozenset[str]:
    """When `x` says its event happens: weekdays, months, parts of the day, and the dates and times of day it gives
    ("3点", "9:30", "the 22nd", "4pm"; not an amount)."""
    return frozenset({u.key for u in x.units if u.key.startswith("weekday:") or u.key in _MONTHS
                      or u.key in MOVABLE_CONCEPTS} | {f"num:{next(g for g in m.groups() if g)}"
                                                       for m in _WHEN.finditer(x.text)})


def _what(x: Analysis, when: frozenset[str]) -> frozenset[str]:
    """What `x` tells besides when: its content words, concepts, names and amounts."""
    return frozenset(u.key for u in x.units if u.kind != "frame" and u.key not in when and u.key not in _DATE_WORDS)


_NOT_AN_OCCASION = frozenset({"HOUR", "MINUTE", "EVERY"})  # "lasted 45 minutes" places nothing


# A date or a time of day: "7月12日", "12号", "3点", "9:30", "the 22nd", "4pm" (not "S3", "80%", "Spring Boot 3").
_WHEN = re.compile(r"(\d{1,4})\s*(?:月|日|号|点)|(\d{1,2}:\d\d)|\b(\d{1,2})(?:st|nd|rd|th)\b|\b(\d{1,2})\s*(?:am|pm)\b"
                   r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})\b", re.IGNORECASE)


@lru_cache(maxsize=4096)  # several rules read one text's anchors for one pair
def _anchors(x: Analysis) -> frozenset[str]:
    """What places the event on an occasion: a weekday, a date or time, a period, "tonight", "这次"."""
    found = {u.key for u in x.units if u.key.startswith("weekday:")
             or (u.kind == "concept" and u.key in MOVABLE_CONCEPTS and u.key not in _NOT_AN_OCCASION)}
    found |= {f"when:{next(g for g in m.groups() if g)}" for m in _WHEN.finditer(x.text)}
    # "12月22号" is in December as "December 20" is: the month by its name, in either language
    found |= {_MONTH_NAMES[int(m.group(1)) - 1] for m in _CJK_MONTH.finditer(x.text) if 1 <= int(m.group(1)) <= 12}
    told = _slashed(x.text) | _last_days(x.text)
    found |= {k for month, day in told for k in (_MONTH_NAMES[month - 1], f"when:{day}")}
    said = {w.lower() for w in OCCURRENCE_ANCHORS if has_phrase(x.text, w)}
    return frozenset(found | {_MONTH_ABBR.get(w, w) for w in said})


_CJK_MONTH = re.compile(r"(?<![0-9])(\d{1,2})\s*月")
# "7/18", "7/7–7/18", "18/7": a month and a day (not "24/7", "1.5/2", "2024/7/18"; "3/4 cup" is rare beside an event)
_SLASHED = re.compile(r"(?<![\d./])(?!24/7\b)(\d{1,2})/(\d{1,2})(?![\d/])")


def _slashed(text: str) -> set[tuple[int, int]]:
    """(month, day) of each date written with a slash: month first ("7/18", as in the US and in Chinese chat), or
    day first where the first number cannot be a month ("18/7")."""
    found = set()
    for m in _SLASHED.finditer(text):
        first, second = int(m.group(1)), int(m.group(2))
        found.add((first, second) if first <= 12 else (second, first))
    return {(month, day) for month, day in found if 1 <= month <= 12 and 1 <= day <= 31}


def dates(x: Analysis) -> set[str]:
    """The full dates `x` names, month and day, as "date:07-18" whatever their writing ("July 18", "18 July",
    "7/18", "7月18日", "7月18号"): what the recall index files an event under, so a telling worded far from it is
    found by its date (`automem.core.write_path`)."""
    found = set()
    for m in _NAMED_DATE.finditer(x.text):
        found.add((_MONTH_NUMBER[(m.group(1) or m.group(4))[:3].lower()], int(m.group(2) or m.group(3))))
    found |= _slashed(x.text) | {(int(m.group(1)), int(m.group(2))) for m in _CJK_DATE.finditer(x.text)}
    found |= _last_days(x.text)
    return {f"date:{month:02d}-{day:02d}" for month, day in found if 1 <= month <= 12 and 1 <= day <= 31}


def kinds(x: Analysis) -> frozenset[str]:
    """The kinds of event `x` tells, as "kind:FLIGHT" (lexicon `occurrence.kinds`: a flight, a wedding, 体检): what
    the recall index files an event under besides its dates, so one that says it is called off or moved ("flight's
    cancelled, driving instead") finds the stored one of its kind however far its wording
    (`automem.core.write_path`)."""
    return kinds_told(x.text)


def names_a_time(x: Analysis) -> bool:
    """Whether `x` places its event at a time: one day (`names_a_day`) or a period ("next week", 下礼拜)."""
    return bool(_days(x) or x.concepts & OCCURRENCE_PERIODS)


@lru_cache(maxsize=4096)
def kinds_told(text: str) -> frozenset[str]:
    """`kinds` read from the text alone, without its analysis: what a write tests every far stored event by first."""
    return frozenset(f"kind:{key}" for key, forms in _KIND_FORMS.items() if forms.said_in(text))


_KIND_FORMS = {key: Phrases(forms) for key, forms in OCCURRENCE_KINDS.items()}


def _last_days(text: str) -> set[tuple[int, int]]:
    """(month, day) of each month's last day said so ("the last day of Aug", "8月最后一天": August 31); February's is
    the 28th and the 29th."""
    found = set()
    for m in _LAST_DAY.finditer(text):
        month = _MONTH_NUMBER[m.group(1)[:3].lower()] if m.group(1) else int(m.group(2))
        if 1 <= month <= 12:
            found |= {(2, 28), (2, 29)} if month == 2 else {(month, _LAST_DAYS[month - 1])}
    return found


_MONTH_NUMBER = {name[:3]: n for n, name in enumerate(_MONTH_NAMES, 1)}
# "Oct 7" is in October as "October 3" is: a short month word read as its month's name
_MONTH_ABBR = {abbr: _MONTH_NAMES[n - 1] for abbr, n in _MONTH_NUMBER.items()} | {"sept": "september"}
_MONTH_WORD = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*"
_NAMED_DATE = re.compile(rf"\b{_MONTH_WORD}\.?\s+(\d{{1,2}})(?!\d|:)"
                         rf"|\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_WORD}\b", re.IGNORECASE)
_LAST_DAY = re.compile(rf"\blast day of\s+{_MONTH_WORD}\b|(?<![0-9])(\d{{1,2}})\s*月的?最后一天", re.IGNORECASE)
_LAST_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_CJK_DATE = re.compile(r"(?<![0-9])(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")


def names_a_day(x: Analysis) -> bool:
    """Whether `x` places its event on one day (a weekday, a date, "yesterday", "今晚")."""
    return bool(_days(x))


def may_name_a_day(text: str) -> bool:
    """False when `text` has nothing `_days` could read as a day (no digit, weekday, "yesterday", "今晚"): a test
    without the text analysis, for a stored event the write only looks at if it names one."""
    return bool(_DAY_SURFACES.search(text))


_DAY_SURFACES = re.compile("|".join([r"\d", "last day of", "最后一天"] + sorted(
    {re.escape(f) for forms in VALUE_CLASSES.get("weekday", {}).values() for f in forms}
    | {re.escape(f) for key in OCCURRENCE_DAYS for f in (CONCEPTS.get(key) or (key,))}, key=len, reverse=True)),
    re.IGNORECASE)


def day_of_month_moved(a: Analysis, b: Analysis) -> bool:
    """Whether `b` gives its event's day as a day of the month alone ("my Lisbon flight leaves on the 11th", "机票是
    15号的"), `a` the same event on a full date with another day ("The user's flight to Lisbon departs on June 9"),
    something in common, no other city or person, and nothing that says there are two: the date corrected, or a
    second flight on another day, which only a reading judge tells apart (`dedup.event_may_replace`)."""
    if told_as_another(a, b) or _months(b) or not _months(a) or any(k.startswith("weekday:") for k in _anchors(b)):
        return False
    days_b = {m.group(1) for m in _DAY_OF_MONTH.finditer(b.text)} | set(_CJK_DAY.findall(b.text))
    days_a = {k[5:] for k in _anchors(a) if k.startswith("when:")}
    names_a, names_b = _names(a), _names(b)
    if (names_a - names_b and names_b - names_a) or people(a) != people(b):
        return False  # "my Paris flight" / "the flight to Lisbon", "my wife flies to Denver": another flight
    return bool(days_b) and not days_b & days_a and overlap(a, b).shared > 0


_CJK_DAY = re.compile(r"(?<![0-9月])(\d{1,2})\s*[号日]")


def _months(x: Analysis) -> set[str]:
    """The months `x` names, in either language or with a slash, or as "next month"."""
    return _anchors(x) & _MONTHS_BY_NAME | {u.key for u in x.units if u.key in _MONTHS or u.key in _THIS_MONTH}


_THIS_MONTH = frozenset({"LAST_MONTH", "NEXT_MONTH", "THIS_MONTH"})


def _names(x: Analysis) -> set[str]:
    """The values of a known class `x` gives (a city, an airline), not free names ("PyCon LT" is "PyCon
    Lithuania")."""
    return {u.key for u in x.units if u.kind == "value" and not u.key.startswith(("num:", "name:"))}


# The substance (`analysis.overlap`'s shared weight: about four words or two names) two tellings of one day's event
# have in common when one retells it in other words with a detail otherwise ("Had lunch with Priya at Tartine on
# Monday; it cost $45" / "Monday's lunch with Priya was at Tartine, and the check came to $60"). Two events of one
# day share less ("昨天在宜家花了三千块买家具" / "昨天把三千块转给了房东当押金").
RETOLD_SHARED = 8.0


def retold_on_its_day(a: Analysis, b: Analysis) -> bool:
    """Whether `b` places its event on a day `a` names too (a weekday, a date, "tonight") and nothing says there are
    two ("The user's dentist appointment is on March 3 at Lakeview Dental" / "the March 3 dentist visit is at the
    Brookfield office", "用户下周二去杭州出差" / "下周二出差的地方是宁波"): one occasion with a detail told otherwise,
    or two events of one day, which only a reading judge tells apart (`dedup.event_may_replace`)."""
    return bool(_days(a) & _days(b)) and not told_as_another(a, b)


def retold_of_its_kind(a: Analysis, b: Analysis) -> bool:
    """Whether `b` tells an event of a kind `a` tells too (`kinds`) at a time `a` names too: a day, a date or a period
    ("The user is on vacation next week" / "下礼拜我休年假", "The user has a big exam tomorrow" / "final's tmrw"), and
    nothing says there are two, nor names someone `a` does not: one event told in other words, or two of one kind at
    one time, which only a reading judge tells apart (`dedup.compare`)."""
    if not kinds(a) & kinds(b):
        return False
    periods = a.concepts & b.concepts & OCCURRENCE_PERIODS
    return bool(_days(a) & _days(b) or periods) and not told_as_another(a, b) and not told_of_another(a, b)


def once_moved(a: Analysis, b: Analysis) -> bool:
    """Whether `b` tells an event a holder has once (their wedding, their thesis defense: lexicon `occurrence.once`)
    that `a` tells too, on another full date, with nothing that says two and no one else named ("The user's thesis
    defense is on May 8" / "thesis defense: May 15, 2pm, room 301"): moved, or told wrong once, which a reading judge
    confirms (`dedup.event_may_replace`)."""
    common = kinds(a) & kinds(b)
    if not common & OCCURRENCE_ONCE and not (common and _yearly(a) and _yearly(b)):
        return False
    da, db = dates(a), dates(b)
    return bool(da and db and not da & db) and not told_as_another(a, b) and not told_of_another(a, b)


def _yearly(x: Analysis) -> bool:
    """Whether `x` says its event comes once a year ("annual physical", "年度体检"; lexicon `occurrence.yearly`)."""
    return _YEARLY.said_in(x.text)


_YEARLY = Phrases(OCCURRENCE_YEARLY)


def stands_in(a: Analysis, b: Analysis) -> bool:
    """Whether `b` names every person the stored event `a` names and one more, on a day both name, and nothing else
    says there are two ("用户4月2日和妈妈一起去体检" / "4月2号体检我爸陪我去，我妈那天走不开"): someone going in the
    stored person's place, or going too, which only a reading judge tells apart where `b` says what changed
    (`dedup.event_may_replace`)."""
    na, nb = _named(a), _named(b)
    if not na or not na < nb or len(nb - na) != 1 or not _days(a) & _days(b):
        return False
    return not told_as_another(a, b, person=False)


def takes_the_place(a: Analysis, b: Analysis) -> bool:
    """Whether `b` says someone it names, whom the stored event `a` does not name, goes in another's place (lexicon
    `occurrence.stand_in`: "Jake bailed on Coldplay, so my cousin Priya is taking his ticket", "I'm not going to Austin
    after all, my manager is going in my place"), tied to `a`'s event by a day, a name or a kind both tell, on no day
    `a` does not name, and nothing else says two: the stored one's holder or companion out, another in, which only a
    reading judge tells from a second event (`dedup.event_may_replace`)."""
    if not _stands_in_said(b.text) or _stands_in_said(a.text):
        return False
    if not (_named(b) - _named(a) or _free_names(b) - _free_names(a)) or not _days(b) <= _days(a):
        return False
    tied = _days(a) & _days(b) or _free_names(a) & _free_names(b) or _names(a) & _names(b) or kinds(a) & kinds(b)
    return bool(tied) and not told_as_another(a, b, person=False)


def _free_names(x: Analysis) -> set[str]:
    """The names `x` gives that no class knows ("Coldplay", "Austin", "Priya")."""
    return {u.key for u in x.units if u.kind == "value" and u.key.startswith("name:")}


def _stands_in_said(text: str) -> bool:
    """Whether `text` says someone goes in another's place: a stand-in phrase, or someone sent (让…去)."""
    return _STAND_IN.said_in(text) or bool(_LET_GO.search(text))


_STAND_IN = Phrases(OCCURRENCE_STAND_IN)
# "让我老公送他去", "让孩子她爷爷送过去": someone sent in the user's place (not "领导让我周六去": the user still goes)
_LET_GO = re.compile(r"让(?:我(?=[老爸妈哥姐弟妹爷奶儿女外表堂舅叔姑])|(?!我))[^，,。.！!？?；;]{1,8}?[去送带陪接]")


def _days(x: Analysis) -> set[str]:
    """The anchors of `x` that name one day: a weekday, a date, "yesterday", "今晚" (not a part of the day, a month)."""
    return {k for k in _anchors(x) if k.startswith(("weekday:", "when:")) or k in OCCURRENCE_DAYS}


def _one_day_retold(a: Analysis, b: Analysis) -> bool:
    """One event of one day told again in other words: a day in common and most of the substance, so that the
    stretches told otherwise are its rewording and the detail it corrects, not another occurrence."""
    return bool(_days(a) & _days(b)) and overlap(a, b).shared >= RETOLD_SHARED


def _stretches(a: Analysis, b: Analysis) -> int:
    """How many stretches of `a` `b` tells otherwise, in order: a correction mends one detail, another occurrence
    often differs in several (another item, on another day, from another shop)."""
    ops = difflib.SequenceMatcher(None, _slot_sequence(a), _slot_sequence(b), autojunk=False).get_opcodes()
    return sum(1 for op in ops if op[0] != "equal")


def _occurrence_words(text: str) -> list[str]:
    masked = text
    for phrase in NOT_OCCURRENCE:
        masked = masked.replace(phrase, " ")
    return [w for w in OCCURRENCE_WORDS if has_phrase(masked, w)]


def _instances(x: Analysis) -> set[str]:
    """Numbers that say which occurrence or thing: an ordinal ("second", "第三次", "v3"), a release (1.4.1; 2.4
    beside "deploy" or "version"), a year, a ticket or room number (`Analysis.identifiers`)."""
    versioned = bool(x.concepts & _VERSIONED)
    found = set()
    dates = {m.group(1) for m in _DAY_OF_MONTH.finditer(x.text)}
    for u in x.units:
        if u.kind != "value" or not u.key.startswith("num:"):
            continue
        n = u.key[4:]
        if (u.surface and _ORDINAL_SURFACE.fullmatch(u.surface)) or n.count(".") >= 2 or (versioned and "." in n):
            found.add(n)
    for word in OCCURRENCE_NUMBERED:
        pattern = rf"{word}\s*(\d+)" if _CJK_CHAR.search(word) else rf"\b{word}\s+(\d+)\b"
        found.update(m.group(1) for m in re.finditer(pattern, x.text, re.IGNORECASE))
    dates |= {m.group(1) or m.group(2) for m in _CJK_DAY_SAID.finditer(x.text)}
    return (found | x.identifiers) - dates


# "N号" that is a day of the month, not which one ("3号线", "5号楼"): after a month ("下个月8号"), or before a pause
# or a part of the day ("定了,15号,跟搬家公司确认过了", "22号上午")
_CJK_DAY_SAID = re.compile(r"(?<=月)(\d{1,2})\s*[号日]|(?<![0-9])(\d{1,2})\s*号(?=\s*(?:$|[，,。.！!？?；;、)）]"
                           r"|上午|下午|晚上|早上|中午|凌晨|那天|当天))")


@lru_cache(maxsize=4096)  # several rules of one pair ask it of both sides (another person, someone else's event...)
def people(x: Analysis) -> frozenset[str]:
    """The people other than the user that `x` names (the user's mother, a friend, 老婆, 表哥); "Mom and Dad" are
    the user's parents."""
    found = _named(x)
    if {"FATHER", "MOTHER"} <= found:
        return (found - {"FATHER", "MOTHER"}) | {"PARENTS"}
    return found


def holders(x: Analysis) -> frozenset[str]:
    """The `people` `x` names as whom it is about, not beside it as a companion, a recipient or whom a request is
    addressed to ("passing my old phone to my brother", "moved in with my sister", "text my mom"; `_beside`)."""
    return frozenset(key for key in people(x) if not _beside(x.text, key))


@lru_cache(maxsize=4096)
def _named(x: Analysis) -> frozenset[str]:
    """`people`, each parent apart: "我爸陪我去，我妈那天走不开" names two people, one in the other's place."""
    text = _NO_ONE.sub(" ", x.text)
    found = set((x.concepts if text == x.text else analyse(text).concepts) & KIN)
    for form in _PEOPLE_FORMS:
        if has_phrase(text, form):
            found.add(OCCURRENCE_PEOPLE[form])
            text = re.sub(re.escape(form), " ", text, flags=re.IGNORECASE)
    if _PARENT_SELF.said_in(x.text):
        found -= {"FATHER", "MOTHER"}  # "mom of 2 here": the user, a parent
    return frozenset(found)


_PARENT_SELF = Phrases(OCCURRENCE_PARENT_SELF)
# No one the text is about, masked before the people are read: a person named in a likeness ("像朋友聊天那样", "talk
# to me like a friend would", "the way a teacher explains") or in the name of a kind of event ("parent-teacher
# conference"; lexicon `occurrence.not_people`)
_NO_ONE = re.compile("|".join([r"像[^，,。.！!？?；;]{0,10}?(?:那样|一样|似的|那般)",
                               r"\b(?:like|as)\s+an?\s+\w+\s+(?:would|does|talks|speaks)\b",
                               r"\bthe\s+way\s+(?:an?|my|your)\s+\w+\s+(?:would|does|talks|speaks|explains)\b",
                               r"\blike\s+(?:talking|chatting)\s+(?:to|with)\s+(?:an?|my)\s+\w+"]
                              + [re.escape(p) for p in OCCURRENCE_NOT_PEOPLE]), re.IGNORECASE)
_PEOPLE_FORMS = tuple(sorted(OCCURRENCE_PEOPLE, key=len, reverse=True))  # 外甥女 before 外甥, 外婆 before 婆
