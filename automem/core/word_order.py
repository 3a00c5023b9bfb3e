"""Order and roles: the same words in another order or role may say another fact ("I prefer vim over nano" /
"I prefer nano over vim", "Alice reports to Bob" / "Bob reports to Alice", "从北京飞上海" / "从上海飞北京").
`order_changed` and `roles_changed` compare two analysed texts (automem.core.analysis); the duplicate / update / new
rules (automem.core.dedup) read them. Plain functions, no I/O.
"""

from __future__ import annotations

import re
from collections import Counter

from .analysis import KIN, Analysis, same_wording
from .tokens import MOVABLE_CLASSES, MOVABLE_CONCEPTS, ROLE_MARKERS, ROLE_SKIP, _content_stem

_PERSONS = KIN
_USER_WORDS = frozenset({"用户", "我", "本人", "user", "user's", "users", "i", "i'm", "i've", "me", "my", "mine",
                         "myself"})


def _order_keys(x: Analysis, entities_only: bool = False) -> tuple[list[tuple[str, str]], Counter]:
    """(kind, key) of the text's words in order, every occurrence, kind one of entity (the user, a person, a name,
    a value), concept, word (a plain word) and number, and how often each word's key was said. Times, days and
    frequencies are left out (they stand anywhere); one word standing for two concepts keeps one place ("代码风格")."""
    keys: list[tuple[str, str]] = []
    seen: Counter = Counter()
    nots, prev_surface = 0, ""
    # times or days in two clauses each belong to their clause ("gym in the morning, study at night", "周一开会，
    # 周三写周报"): then they are not movable
    times = {u.key for u in x.units if _movable(u) and u.key != "EVERY"}
    movable = len(times) < 2 or not re.search(r"[,;，；、]", x.text)
    for u in x.units:
        kind = "entity"
        if u.kind == "frame":
            if u.key.lower() not in _USER_WORDS:
                continue
            k = "USER"
        elif u.kind in ("negation", "negchange"):
            nots += 1
            k = f"NOT{nots}"
        elif u.kind == "concept":
            if movable and u.key in MOVABLE_CONCEPTS:
                continue
            k, kind = u.key, ("entity" if u.key in _PERSONS else "concept")
        elif u.kind == "value":
            cls, _, val = u.key.partition(":")
            if movable and cls in MOVABLE_CLASSES:
                continue
            # a name is the same word as a plain one on the other side ("Alice reports ..." / "... to Alice")
            if cls == "name":
                k, kind = _content_stem(val), "entity"
            else:
                k, kind = u.key, ("number" if cls == "num" else "entity")
        elif u.kind == "content":
            if u.weight == 0.5:
                continue  # a character of a longer unknown word: its bigrams carry the order
            k, kind = u.key, "word"
        else:
            continue
        if entities_only and kind != "entity":
            continue
        seen[k] += 1
        if u.kind == "concept" and u.surface and keys and prev_surface == u.surface:
            keys[-1] = (keys[-1][0], f"{keys[-1][1]}+{k}")
        else:
            keys.append((kind, k))
        prev_surface = u.surface if u.kind == "concept" else ""
    return keys, seen


def _placed(keys: list[tuple[str, str]], seen: Counter) -> list[tuple[str, str]]:
    """The keys that have one place: a word said twice has none and is left out."""
    return [(kind, k) for kind, k in dict.fromkeys(keys) if all(seen[p] == 1 for p in k.split("+"))]


def _kinds(keys: list[tuple[str, str]]) -> dict[str, str]:
    """Each key's kind over both texts: a name opening a sentence is a plain word there, the other side says what
    it is."""
    kinds: dict[str, str] = {}
    for kind, k in keys:
        kinds[k] = kind if kinds.get(k) in (None, "word") else kinds[k]
    return kinds


def _movable(u) -> bool:
    return (u.kind == "concept" and u.key in MOVABLE_CONCEPTS) or (
        u.kind == "value" and u.key.partition(":")[0] in MOVABLE_CLASSES)


def _same_order(sa: list[tuple[str, str]], sb: list[tuple[str, str]]) -> bool:
    if sa == sb:
        return True
    n = len(sa)
    if n >= 3 and any(sa[i:] + sa[:i] == sb for i in range(1, n)):
        return True  # one stretch moved to the front or back: "Tom is the user's brother" / "The user's brother is Tom"
    diff = [i for i in range(n) if sa[i] != sb[i]]
    # a plain word and a neighbouring name or value trade places: a modifier ("speaks Mandarin fluently" / "speaks
    # fluent Mandarin"); two plain words or two names trading places trade roles ("小王是小李的上级" / "小李是小王的上级"),
    # and so do the user or a relative and a word the lexicon does not know (a name: "用户跟着小张学" / "小张跟着用户学")
    return (len(diff) == 2 and diff[1] == diff[0] + 1 and sa[diff[0]] == sb[diff[1]] and sa[diff[1]] == sb[diff[0]]
            and [sa[diff[0]][0], sa[diff[1]][0]].count("word") == 1
            and not {sa[diff[0]][1], sa[diff[1]][1]} & (_PERSONS | {"USER"}))


def _roles(x: Analysis) -> dict[str, tuple[str, ...]]:
    """Each word's role markers: the frame words before it that say what it does in the sentence ("managed [by]
    Bob", "flies [from] Beijing", "[跟]着小张学"), keyed as `_order_keys` keys it. A word said twice is left out."""
    out: dict[str, tuple[str, ...]] = {}
    seen: dict[str, int] = {}
    pending: list[str] = []
    for u in x.units:
        if u.kind == "frame":
            low = u.key.lower()
            if low in ROLE_MARKERS:
                pending.append(low)
                continue
            if low in ROLE_SKIP:
                continue
            if low not in _USER_WORDS:
                pending = []
                continue
            k = "USER"
        elif u.kind in ("content", "concept", "value"):
            if u.kind == "content" and u.weight == 0.5:
                continue  # a character of a longer unknown word: the word itself follows
            cls, _, val = u.key.partition(":")
            k = _content_stem(val) if u.kind == "value" and cls == "name" else u.key
        else:
            pending = []
            continue
        seen[k] = seen.get(k, 0) + 1
        out[k], pending = tuple(pending), []
        last = (u.surface or "").lower().split()[-1:] if u.kind == "concept" else []
        if last and last[0] in ROLE_MARKERS:
            pending = last  # a phrase that ends in one ("works for" is WORK): it marks the next word
    return {k: v for k, v in out.items() if seen[k] == 1}


def roles_changed(a: Analysis, b: Analysis) -> bool:
    """A word both texts say has another role marker before it ("Alice manages Bob" / "Alice is managed [by] Bob",
    "flies [to] Beijing" / "flies [from] Beijing", "works [with] Tom" / "works [for] Tom"). Same language only. In
    other words a marker comes and goes with the wording ("Never use tabs [for] indentation" / "Always indent with
    spaces"): there only one marker traded for another counts."""
    if a.lang != b.lang:
        return False
    ra, rb = _roles(a), _roles(b)
    reworded = not same_wording(a, b)
    return any(ra[k] != rb[k] and not (reworded and not (ra[k] and rb[k])) for k in ra.keys() & rb.keys())


def order_changed(a: Analysis, b: Analysis) -> bool:
    """The same words in another order or role: "I prefer vim over nano" / "I prefer nano over vim", "从北京飞上海" /
    "从上海飞北京", "Alice reports to Bob" / "Bob reports to Alice", "tabs, not spaces" / "spaces, not tabs", "Alice
    manages Bob" / "Alice is managed by Bob" (`roles_changed`). Numbers
    keep their order among themselves ("from 5 to 10"). Across languages only the user, people, names and values are
    compared (each language puts its other words where it likes)."""
    entities_only = a.lang != b.lang
    (fa, seen_a), (fb, seen_b) = _order_keys(a, entities_only), _order_keys(b, entities_only)
    ka, kb = _placed(fa, seen_a), _placed(fb, seen_b)
    kinds = _kinds(ka + kb)
    shared = {k for _, k in ka} & {k for _, k in kb}
    na = [k for _, k in ka if k in shared and kinds[k] == "number"]
    nb = [k for _, k in kb if k in shared and kinds[k] == "number"]
    sa = [(kinds[k], k) for _, k in ka if k in shared and kinds[k] != "number"]
    sb = [(kinds[k], k) for _, k in kb if k in shared and kinds[k] != "number"]
    return na != nb or not _same_order(sa, sb) or roles_changed(a, b) or _repeats_moved(fa, fb)


def _repeats_moved(fa: list[tuple[str, str]], fb: list[tuple[str, str]]) -> bool:
    """Words said twice, each in the other's place: the same words, another fact ("Of Vim and Emacs, the user uses
    Vim" / "... uses Emacs", "Go is easier than Rust, and Rust is faster than Go" / the other way round,
    "用户把周报发给老王，老王再转给老李" / "...发给老李，老李再转给老王"): one word said more often on one side and
    another on the other, or both said as often in other places."""
    fa = [(kind, k) for kind, k in fa if kind != "number"]
    fb = [(kind, k) for kind, k in fb if kind != "number"]
    ca, cb = Counter(k for _, k in fa), Counter(k for _, k in fb)
    if fa == fb or (max(ca.values(), default=0) < 2 and max(cb.values(), default=0) < 2):
        return False
    shared = ca.keys() & cb.keys()
    if any(ca[k] > cb[k] for k in shared) and any(cb[k] > ca[k] for k in shared):
        return True  # "Of Vim and Emacs, the user uses Vim" / "... uses Emacs": the word said twice is the fact
    if ca != cb:
        return False
    kinds = _kinds(fa + fb)
    return not _same_order([(kinds[k], k) for _, k in fa], [(kinds[k], k) for _, k in fb])
