"""What may become an instruction: a way of working in the owner's own words, never a personal fact, never an
order that turns the model against its user.

Owner instructions are shared with every profile of the owner (and, once the owner confirms one, with everyone:
`automem.core.sharing`), so the write path passes every candidate, whatever its source, through `screen`:

1. an injection-shaped order is held for the owner's review, in any wing (`automem.core.injection`): the write path
   keeps it out of every prompt and reader, and `automem review` lets the owner accept or reject it
   (`automem.core.review`); nothing is dropped unseen;
2. an instruction that states a personal fact about the user ("remember that my card number is ...", "记住：我家住在
   ...", "don't forget I was diagnosed with ...") is refiled as persona, which stays the owner's
   (`automem.core.personal`);
3. an instruction not in the user's own words (an assistant turn, tool output, quoted text: `supported`) is kept as
   persona of the profile it was learned in, never shared. Why persona and not dropped: the extractor words things
   freely, so a real way of working can fail the word check; kept as a note of that profile it still counts there,
   and nothing the user did not say reaches another profile or person.

Plain functions, no I/O. Reasons name features, never the memory's words (they are logged).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ..text import normalise
from . import semantic
from .injection import injection
from .personal import personal_fact

INSTRUCTION_WING = "instruction"
PERSONA_WING = "user"
BLOCK_WINGS = (INSTRUCTION_WING, PERSONA_WING)  # shown in every session's system block


def _phrase_only(text: str):
    from ..text import looks_like_injection
    from .injection import WEIGHTS, Injection

    return Injection(WEIGHTS["phrase"], ("phrase",)) if looks_like_injection(text) else Injection(0.0)


# -- in the user's own words -----------------------------------------------------------------------------------
_QUOTED = re.compile(r"[\"“”]([^\"“”]{12,})[\"“”]|「([^」]{6,})」|『([^』]{6,})』|‘([^’]{20,})’")
_QUOTE_LINE = re.compile(r"^\s*>.*$", re.MULTILINE)
_FENCED = re.compile(r"```[\s\S]*?(?:```|$)")
_ATTRIBUTION = re.compile(r"(?:^|\n)[^\n]{0,80}(?:\bwrote|\bsaid|\bsays|\bposted|\bsent|写道|说道|转发|原文|以下是|如下)\s*[:：]\s*"
                          r"(?:\n(?!\s*\n)[^\n]*)+|(?:^|\n)-{2,}\s*(?:original|forwarded)\s+message\s*-{2,}[\s\S]*",
                          re.IGNORECASE)


def unquoted(text: str) -> str:
    """A user's message without what it quotes: code fences, "> " lines, a forwarded or attributed passage ("Bob
    wrote:", "转发：" and the lines under it), and longer quotations in quotation marks. What someone else wrote is
    data the user showed, not their own words."""
    text = _FENCED.sub(" ", text or "")
    text = _ATTRIBUTION.sub("\n", text)
    text = _QUOTE_LINE.sub("", text)
    return _QUOTED.sub(" ", text)


SUPPORT_SHARE = 0.6  # of the candidate's topic terms found in the user's own words


def supported(text: str, user_texts: Iterable[str], role: str | None = None) -> bool:
    """Whether a candidate memory is the user's own words: said in a user turn, not an assistant turn, tool output
    or quoted text. With the source turn's `role` known, that decides (only "user"); else by the words: most
    (SUPPORT_SHARE) of the candidate's content units (Latin words, stemmed, and CJK characters; frame words like
    "user"/"用户"/"always"/"一律" left out) must be in the user's messages, quotations removed. Characters, not
    bigrams, for Chinese: the extractor rewords freely ("以后写文章都用Markdown" -> "文章一律使用Markdown格式")."""
    if role is not None:
        return role == "user"
    terms = _units(text)
    if not terms:
        return True  # nothing of substance to find (the text is all frame words)
    said: set[str] = set()
    for body in user_texts:
        said |= _units(unquoted(body))
    return len(terms & said) / len(terms) >= SUPPORT_SHARE


def _units(text: str) -> set[str]:
    from .index_words import _stem, query_terms

    out = set()
    for t in query_terms(normalise(text)):
        if t in _FRAME or (not t.isascii() and len(t) != 1):
            continue
        out.add(_stem(t) if t.isascii() else t)
    return out


_FRAME = frozenset("""always never please user user's users every each should must make sure remember note that from
now on going forward answer answers reply replies response responses respond don't dont doesn't keep use uses
using prefer prefers 用 户 以 后 总 是 永 远 每 次 请 务 必 须 记 住 得 不 要 回 答 复 使 都 的 了 一 律 统 全 部 所 有 把 在 给 我
你 他 她 它 们 就 也 还 再 和 与 及 或 这 那 个""".split())


# -- the one screening every candidate goes through ----------------------------------------------------------------
HELD = "held"  # automem.core.memory.HELD


def injection_reason(features: Sequence[str], detail: str = "") -> str:
    """Why a candidate reads as an injection, by feature names (never its words)."""
    return "an injection-shaped order to the model (" + (detail or ", ".join(features)) + ")"


def held(wing: str, features: Sequence[str], detail: str = "") -> "Screening":
    return Screening(HELD, wing, f"held for the owner's review (`automem review`), never shown to the model: "
                                 f"{injection_reason(features, detail)}", tuple(features))

@dataclass(frozen=True)
class Screening:
    """What the write path does with a candidate: `outcome` "held" (injection-shaped: held for the owner's review),
    "persona" (refiled from an instruction) or the wing it keeps ("instruction", "user", "episodic"); `wing` the
    wing it is stored in (for a held one, the wing it would have if the owner accepts it); `reason` why it was held
    or refiled ("" when it passes as it came); `features` the classifier's."""

    outcome: str
    wing: str | None
    reason: str = ""
    features: tuple[str, ...] = field(default=())


def screen(text: str, wing: str, *, in_user_words: bool | None = None, explicit: bool = False,
           vector: Sequence[float] | None = None) -> Screening:
    """The write path's check of one candidate (any source), in this order:

    1. an injection-shaped order is held for the owner's review (automem.core.review): by the classifier in the
       wings the system block shows (instruction, persona), by the phrase list (automem.text.looks_like_injection)
       in the others, where event records (kanban tasks) quote URLs and commands as a matter of course (`explicit`:
       the owner typed it on purpose with `automem add`, or accepted it on review: not screened for it);
    2. an instruction that states a personal fact about the user is refiled as persona;
    3. an instruction not in the user's own words (`in_user_words` False: `supported`) is refiled as persona of
       its profile, never shared (None: not known, e.g. the agent's tool or the CLI: kept).

    `vector`: the text's USE embedding, when known: the semantic model (automem.core.semantic) then catches what
    the rules' words miss (an injection's probability over its threshold, in the block's wings; a personal fact's,
    for an instruction).
    """
    probs = semantic.probabilities(vector) if vector is not None else None
    limits = semantic.thresholds() if probs else {}
    if not explicit:
        verdict = injection(text) if wing in BLOCK_WINGS else _phrase_only(text)
        if verdict.refused:
            return held(wing, verdict.features)
        if probs and wing in BLOCK_WINGS and semantic.injection_by_meaning(probs["injection"], verdict.score,
                                                                            verdict.order):
            return held(wing, ("meaning",), f"its meaning: p={probs['injection']:.2f}")
    if wing != INSTRUCTION_WING:
        return Screening(wing, wing)
    kind = personal_fact(text)
    if kind is None and probs and probs["personal"] >= limits["personal"]:
        kind = f"its meaning: p={probs['personal']:.2f}"
    if kind is not None:
        return Screening("persona", PERSONA_WING, f"states a personal fact about the user ({kind}): filed as "
                                                  f"persona, which stays the owner's")
    if in_user_words is False:
        return Screening("persona", PERSONA_WING, "an instruction not found in the user's own words (assistant turn, "
                                                  "tool output or quoted text): kept for this profile only, "
                                                  "never shared")
    return Screening(INSTRUCTION_WING, INSTRUCTION_WING)
