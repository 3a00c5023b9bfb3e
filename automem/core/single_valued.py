"""Single-valued slots: attributes that hold one value at a time (where someone lives or works, the project's
database, a tool's version; the lexicon's `single_valued` section). `slots` finds the ones a text fills,
`single_valued_change` says when a second text gives a new value of one for the same holder, `changes_a_value` is
the write path's cheap test before it looks for the old value in the sibling wing. Plain functions, no I/O.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .analysis import (
    _POSSESSIVE,
    Analysis,
    Phrases,
    _same_holder,
    _subject_index,
    _subject_key,
    analyse,
    has_phrase,
    is_about_user,
    overlap,
    polarity_flipped,
)
from .occurrence import dates, holders, kinds, people
from .tokens import (
    _CJK_CHAR,
    DROPPED,
    MOVABLE_CLASSES,
    MOVABLE_CONCEPTS,
    NOT_PAST,
    OPEN_SUBJECTS,
    PAST_FORMS,
    QUALIFIERS,
    SINGLE_ASKED,
    SINGLE_HELD,
    SINGLE_OWNED,
)


def _owned_at(x: Analysis, i: int) -> bool:
    """Whether the concept at i is said as someone's: "the user's [shell]", "用户的主力[编辑器]", "the team's [CI]"."""
    low = x.text.lower()
    for j in range(i - 1, max(-1, i - 4), -1):
        u = x.units[j]
        key = u.key.lower()
        if u.kind == "frame" and (key in _POSSESSIVE or key == "的"):
            return True
        if u.kind in ("content", "concept") and f"{key}'s" in low:
            return True
        if u.kind == "concept" and u.key not in ("PRIMARY", "LIKE") and j < i - 1:
            return False
    return False


def slots(x: Analysis) -> frozenset[str]:
    """The single-valued attributes `x` gives a value of: one it always is (LIVE, WORK, ... or a phrase implying one:
    "moved to" a place, "跳槽到" a company), or one said as someone's (the project's DATABASE, the user's EDITOR)."""
    return _slots(x.text)


# Cached by text (an Analysis is `analyse(text)`'s, itself cached): a stored memory is read against every candidate
# it neighbours, and a write reads one pair's attributes several times (asked_slot, single_valued_change...).
@lru_cache(maxsize=4096)
def _slots(text: str) -> frozenset[str]:
    x = analyse(text)
    found = {key for key, phrases in SINGLE_HELD.items()
             if key in x.concepts or any(has_phrase(x.text, p) for p in phrases)}
    found |= {u.key for i, u in enumerate(x.units) if u.kind == "concept" and u.key in SINGLE_OWNED and _owned_at(x, i)}
    return frozenset(found)


def slots_said(x: Analysis) -> frozenset[str]:
    """The single-valued attributes `x` may be about, read loosely (the lexicon's `single_valued.asked`: "Austin is
    where I've settled" is where the user lives, "我转行当程序员了" their role): what the write path looks the old
    value up by (`automem.core.index`'s `slots` column), never a decision."""
    return _slots_said(x.text)


def filed_under(x: Analysis, wing: str) -> frozenset[str]:
    """What the write path looks a memory of `wing` up by, however far its wording (the recall index's `slots`
    column, `Store.filling`): the attributes a persona fact or an instruction may fill (`slots_said`), the full dates
    an event names ("date:07-18", `occurrence.dates`) and its kinds ("kind:FLIGHT", `occurrence.kinds`)."""
    return frozenset(dates(x)) | kinds(x) if wing == "episodic" else slots_said(x)


@lru_cache(maxsize=4096)
def _slots_said(text: str) -> frozenset[str]:
    x = analyse(text)
    classes = {u.key.partition(":")[0] for u in x.units if u.kind == "value"}
    found = set(slots(x))
    for key, (concepts, value_classes, phrases) in _ASKED.items():
        if concepts & x.concepts or value_classes & classes or phrases.said_in(x.text):
            found.add(key)
    return frozenset(found)


def _compile_asked() -> dict[str, tuple[frozenset, frozenset, Phrases]]:
    """Each attribute of `single_valued.asked` as (concepts, value classes, the phrases compiled once): a text is read
    against them on every write."""
    out = {}
    for key, said in SINGLE_ASKED.items():
        concepts = frozenset(s for s in said if s.isupper() and not _CJK_CHAR.search(s))  # "I人" is a phrase
        value_classes = frozenset(s[6:] for s in said if s.startswith("class:"))
        phrases = Phrases(s for s in said if s not in concepts and not s.startswith("class:"))
        out[key] = (concepts, value_classes, phrases)
    return out


_ASKED = _compile_asked()


def asked_slot(a: Analysis, b: Analysis) -> str:
    """Why a stored memory `a` found by the attribute it fills, however far its wording, may hold the value `b`
    replaces ("The user lives in Chicago" / "Austin is where I've settled"): both said of one attribute, by one
    holder, neither of the past. A question for the judge (only an update applies), never a decision."""
    common = slots_said(a) & slots_said(b)
    if not common or speaks_of_the_past(a, b):
        return ""
    # One holder: the same people named on both sides, apart from the slot's own ("my new boss is Dana"), or the
    # same once those named beside are set aside ("passing my old phone to my brother"). Free wording rarely opens
    # with its subject ("Austin is where I've settled"), so who else is named decides.
    said = slots_said(a) | slots_said(b)
    own = {s for key in said for s in SINGLE_ASKED.get(key, ()) if s.isupper()}
    if (people(a) - own != people(b) - own and holders(a) - own != holders(b) - own
            and not holder_named_otherwise(a, b)):
        return ""
    return f"maybe a new value of {', '.join(sorted(common))} (worded far apart)"


@lru_cache(maxsize=4096)
def said_of_the_past(text: str) -> bool:
    """Whether `text` says a value is history ("used to work at Acme", "以前住在杭州"; lexicon `single_valued.past`),
    not "used to" for accustomed ("still not used to the fog", "getting used to it": `not_past`)."""
    for phrase in NOT_PAST:
        text = re.sub(r"(?<![a-z])" + re.escape(phrase) + r"(?![a-z])", " ", text, flags=re.IGNORECASE)
    return any(has_phrase(text, p) for p in PAST_FORMS)


def speaks_of_the_past(a: Analysis, b: Analysis) -> bool:
    """Whether the stored `a` or the candidate `b` speaks of a past value ("used to work at Acme", "以前住在杭州"):
    the look-alike of a change, both true. Not the candidate's past word where it says that value was let go
    ("刚入手了一台荣耀，之前那部已经挂闲鱼卖掉了", "my old one's sold"; lexicon `change.dropped`): the past one is the
    value it replaces."""
    if said_of_the_past(a.text):
        return True
    return said_of_the_past(b.text) and not drops_the_old(b.text)


def drops_the_old(text: str) -> bool:
    """Whether `text` says the value it had before was let go ("之前那家不续了", "uninstalled", "gave notice")."""
    return any(has_phrase(text, p) for p in DROPPED)


def holder_named_otherwise(a: Analysis, b: Analysis) -> bool:
    """Whether one side is said of one of the user's people by relation and the other of someone named, not the
    user ("The user's daughter attends Little Sprouts daycare" / "Maya started at the Montessori on Elm Street",
    "用户的老公在华为上班" / "志强跳槽到字节了"): maybe one holder, maybe two. Only a judge that told the control pair
    apart is taken at its word there (`dedup.ask`)."""
    pa, pb = people(a), people(b)
    if bool(pa) == bool(pb):
        return False
    kin, named = (a, b) if pa else (b, a)
    return len(people(kin)) == 1 and not is_about_user(named.text) and not _USER_WORDS.search(named.text)


# the user, named any way: a side that says so is about the user, not about someone named
_USER_WORDS = re.compile(r"\b(?:i|i'm|i've|i'd|me|my|mine|we|our|us|user|user's)\b|我|用户|咱", re.IGNORECASE)


def _versions(x: Analysis) -> dict[str, str]:
    """name -> the version right after it ("Python 3.11", "Node 18")."""
    units = [u for u in x.units if u.kind != "frame"]
    return {u.key: nxt.key for u, nxt in zip(units, units[1:])
            if u.key.startswith("name:") and nxt.key.startswith("num:") and not nxt.surface}


def _one_stretch(x: Analysis, keys: set[str]) -> bool:
    """Whether the units of `keys` stand together in `x` (one value, not words scattered over the sentence)."""
    units = [u for u in x.units if u.kind != "frame"]
    pos = [i for i, u in enumerate(units) if u.key in keys or (u.key.startswith("name:") and u.key[5:] in keys)]
    return bool(pos) and max(pos) - min(pos) + 1 == len(pos)


def _times(x: Analysis) -> set[str]:
    """The times and days `x` is said of ("on weekends", "周末", "in the morning"); "every" says how often."""
    return {u.key for u in x.units if (u.kind == "concept" and u.key in MOVABLE_CONCEPTS and u.key != "EVERY")
            or (u.kind == "value" and u.key.partition(":")[0] in MOVABLE_CLASSES)}


def _qualifiers(x: Analysis) -> frozenset[str]:
    """The words in `x` that narrow where its value holds ("the browser [for] testing", "[during] August", "[用来]测试
    的浏览器"); a word inside a phrase the lexicon reads as one concept ("works for") is not one."""
    return _qualifiers_said(x.text)


# Cached by text, as `_slots` is: one pair's rules ask `narrows` of it several times (`dedup.compare`,
# `dedup.slot_change`, `single_valued_change`), each reading every qualifier phrase.
@lru_cache(maxsize=4096)
def _qualifiers_said(text: str) -> frozenset[str]:
    x = analyse(text)
    inside = {w for u in x.units if u.kind == "concept" and u.surface for w in u.surface.lower().split()}
    return frozenset(q for q in QUALIFIERS if has_phrase(text, q) and q not in inside)


def narrows(a: Analysis, b: Analysis) -> bool:
    """Whether `b` says where its value holds and `a` does not ("switched to Firefox [for] testing", "[出差时]改用小米
    拍照"): a value for one use beside the one of record, even announced as a switch; only a judge may say it replaced
    it."""
    return bool(_qualifiers(b) - _qualifiers(a))


def _holders_agree(a: Analysis, b: Analysis) -> bool:
    """One holder: the same subject, or a subject the other text may leave unsaid ("项目统一使用Python 3.11" / "we moved
    to Python 3.12"). Never the user and something the user holds ("the user's parents live in ...")."""
    sa, sb = _subject_key(a, _subject_index(a)), _subject_key(b, _subject_index(b))
    return sa == sb or (sa is None and sb in OPEN_SUBJECTS) or (sb is None and sa in OPEN_SUBJECTS)


def single_valued_change(a: Analysis, b: Analysis) -> str:
    """Why `b` gives a new value of a single-valued attribute of `a`'s holder, or "" when nothing says so.

    Both give the slot (or a name with a version), for one holder, neither negates the other or speaks of the past
    ("used to work at"); what only one side says, apart from the slot itself, is one value on each side standing
    together (a city, a company, a version), with other unmatched concepts on one side at most (a word that only
    names the slot: "项目使用Python 3.11[版本]"; "主力手机" / "工作手机" are two slots)."""
    if polarity_flipped(a, b)[0] or not _holders_agree(a, b):
        return ""
    if said_of_the_past(a.text) or said_of_the_past(b.text):
        return ""  # a past value is history, not the slot's value now
    ta, tb = _times(a), _times(b)
    if ta and tb and ta != tb:
        return ""  # one value for weekdays, another for weekends: two times, two values
    common = slots(a) & slots(b)
    va, vb = _versions(a), _versions(b)
    version = sorted(n for n in set(va) & set(vb) if va[n] != vb[n])
    if (not common and not version) or two_models_owned(a, b):
        return ""
    if narrows(a, b) or (_qualifiers(a) - _qualifiers(b) and not b.strong_change):
        return ""  # "The user's browser for testing is Chrome" beside "The user's browser is Firefox": both hold
    ov = overlap(a, b)
    concepts = a.concepts | b.concepts | common
    only_a = [k for k in ov.only_a_keys if k not in common]
    only_b = [k for k in ov.only_b_keys if k not in common]
    if [k for k in only_a if k in concepts] and [k for k in only_b if k in concepts]:
        return ""  # another attribute on each side: two slots
    ra, rb = {k for k in only_a if k not in concepts}, {k for k in only_b if k not in concepts}
    if not ra or not rb:
        return ""  # no value replaced by another (one side only adds or drops one)
    if a.lang != b.lang and any(":" not in k for k in ra | rb):
        return ""  # across languages only values can be compared, not plain words
    if any(":" in k for k in ra) != any(":" in k for k in rb):
        return ""  # a name on one side, plain words on the other: maybe one name in two scripts ("Hilton" / "希尔顿")
    if any(k.startswith("num:") for k in ra | rb) and not version:
        return ""  # a number changed: the number rule's business
    if (ra | rb) & {f"num:{n}" for n in a.identifiers | b.identifiers}:
        return ""  # a number that says which one: another thing
    if not (_one_stretch(a, ra) and _one_stretch(b, rb)):
        return ""
    if (ra | rb) & (_naming_holder(a, common) | _naming_holder(b, common)):
        return ""  # "the user's friend Priya lives in Toronto" / "friend Daniel": another holder, not a new value
    return f"a new value of a single-valued slot ({', '.join(sorted(common)) or 'the version of ' + version[0][5:]})"


def _naming_holder(x: Analysis, filled: set[str]) -> set[str]:
    """The words between the subject and the slot it fills, naming whose slot it is ("the user's close friend
    [Priya] lives in Toronto", "用户的朋友[小王]住在杭州"): a part of the holder, never a value of the slot."""
    i = _subject_index(x)
    if i is None:
        return set()
    for j in range(i + 1, len(x.units)):
        if x.units[j].kind == "concept" and x.units[j].key in filled:
            return {u.key for u in x.units[i + 1:j] if u.kind in ("value", "content")}
    return set()


def _holder(x: Analysis, filled: set[str]) -> str | None:
    """Whose slot `x` fills: the subject's, or the user's when the subject is the user's slot itself ("用户的[直属领导]
    是王姐" is the user's BOSS, as "The user reports to Hannah" is)."""
    i = _subject_index(x)
    key = _subject_key(x, i)
    if i is None or not _owned_at(x, i):
        return key
    word = (x.units[i].surface or x.units[i].key.partition(":")[2] or x.units[i].key).lower()
    # "The user's new manager is Omar": the subject is the word of the phrase that gave the slot ("new manager")
    named = any(word and word in p.lower() and has_phrase(x.text, p) for k in filled for p in SINGLE_HELD.get(k, ()))
    # "The user's main editor is Sublime Text": a plain word before the slot's own word only qualifies it
    qualifies = (x.units[i].kind == "content" and i + 1 < len(x.units) and x.units[i + 1].kind == "concept"
                 and x.units[i + 1].key in filled)
    return None if key in filled or named or qualifies else key


def maybe_same_slot(a: Analysis, b: Analysis) -> str:
    """Why `b` may give a new value of `a`'s slot though the rules cannot say so: the same holder, no past value,
    and both fill one single-valued attribute ("The user is employed by Acme" / "The user joined Globex"), or `b`
    announces a change of something `a` fills or shares with it ("用户在美团上班" / "The user now works at JD.com"), or
    says what holds now ("these days", "现在") of a slot or a word both say. A question for the judge, never a
    decision: offline both are kept, linked."""
    sa, sb = slots(a), slots(b)
    agree = _holders_agree(a, b) or _holder(a, sa) == _holder(b, sb)
    # the user on one side, something the user holds on the other ("用户的鹦鹉笼子放在阳台" / "The user now keeps the
    # parrot's cage in the study"): asked only when the candidate says what holds now
    if not agree and not (b.change and _same_holder(a, b)):
        return ""
    if speaks_of_the_past(a, b):
        return ""
    if not agree:
        return _SAID_NOW if overlap(a, b).shared > 0 else ""
    if sa & sb:
        return f"maybe a new value of {', '.join(sorted(sa & sb))}"
    if not (b.change or b.strong_change):
        return ""
    related = bool(sa or sb) or overlap(a, b).shared > 0  # a slot or a word both texts say
    if related and b.strong_change and not a.strong_change:
        return "maybe a change of the same thing, announced"
    # "These days the user does all coding in Zed" beside "The user's main editor is Sublime Text": said as what
    # holds now, in words the rules cannot tie to the old ones. Only a question: a judge's tokens are the cost.
    return _SAID_NOW if related and b.change else ""


_SAID_NOW = "maybe a change of the same thing (said as what holds now)"


_POSSESSION = frozenset({"own", "owns", "owned", "has", "have", "had", "BUY", "有", "拥有"})


def two_models_owned(a: Analysis, b: Analysis) -> bool:
    """Both say the holder owns or bought a thing whose model number differs ("owns a Raspberry Pi 4" / "a
    Raspberry Pi 5", "买了一台 iPhone 15"): things owned add up, unless a single-valued slot holds them ("the user's
    phone") or the second announces the change ("upgraded to")."""
    va, vb = _versions(a), _versions(b)
    if not any(n in vb and vb[n] != v for n, v in va.items()) or b.strong_change or slots(a) & slots(b):
        return False
    return all(any(u.key in _POSSESSION for u in x.units if u.kind in ("frame", "concept", "content")) for x in (a, b))


def changes_a_value(text: str) -> bool:
    """Whether `text` may give a new value of a single-valued slot (it fills one, names a version, or announces a
    change): a cheap test before the write path looks for the old value in another wing."""
    x = analyse(text)
    return x.strong_change or bool(slots(x)) or bool(_versions(x))
