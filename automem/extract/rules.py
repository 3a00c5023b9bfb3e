"""The offline extractor: explicit statements of the user, in Chinese and English, without any LLM.

It reads only the user's own lines, without what they quote (`automem.core.instructions.unquoted`: code, "> "
lines, forwarded or attributed passages, long quotations), and keeps sentences that state a preference, a habit,
a rule or a finished action in so many words ("我习惯…", "不要…", "以后都…", "统一用…", "遵循…", "记住…",
"I prefer…", "I use…", "always…", "never…", "remember that…", "from now on…"). Questions are skipped. The sentence
is kept in the user's words, with the first person turned into "用户" / "the user" so a memory reads the same in
any session. A personal fact is persona however it is asked to be kept ("remember that my card…", "记住：我家住在…",
"don't forget I was diagnosed with…": `automem.core.instructions.personal_fact`), never an instruction.

Plain functions, no I/O.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from ..core.instructions import unquoted
from ..core.personal import personal_fact, strip_keep_prefix
from .parse import Extraction, Item

MAX_SENTENCE_CHARS = 160
MIN_SENTENCE_CHARS = 5

_SENTENCE_END = re.compile(r"(?<=[。！？!?；;])|\n+|(?<=[.])\s+(?=[A-Z\u4e00-\u9fff])")
_QUESTION_END = re.compile(r"[?？]\s*$")
_QUESTION_START = re.compile(
    r"^(?:你(?:知道|记得|能|会|可以|觉得)|请问|能不能|可不可以|是否|what|which|how|why|when|where|who|"
    r"do you|can you|could you|would you|are you|is there|did you)\b", re.IGNORECASE)
_CODE = re.compile(r"```|^\s*[$>#]\s|[{}]\s*$|\b(?:def|class|import|return)\s")

# (category, pattern). A sentence takes the category of the first pattern that matches where it is anchored
# (persona statements about oneself win over instruction words later in the sentence: "我习惯用vim，不要推荐nano").
_ZH_PERSONA = re.compile(
    r"^(?:我|本人)(?:一直|平时|通常|一般|比较|更|也|还|都|最|非常|很)?"
    r"(?:习惯|喜欢|不喜欢|讨厌|偏好|偏爱|爱用|常用|惯用|平时用|一般用|通常用|用的是|在用|是一名|是一个|是个|是|住在|来自|在.{1,12}工作|"
    r"擅长|熟悉|不熟悉|想要|希望|需要|母语是)")
_ZH_PERSONA_MY = re.compile(r"^我的(?!项目|代码|仓库|团队|公司)(?:.{1,12}?)(?:是|用|叫|为)")
_ZH_INSTRUCTION = re.compile(
    r"(?<!要)(?:不要|别再|别给|别用|禁止|千万不要|永远不要|以后都|以后请|以后一律|今后|从现在开始|从今以后|统一用|统一使用|"
    r"一律用|一律使用|都用|必须|务必|一定要|遵循|遵守|按照.{1,20}(?:规范|风格|格式|流程)|记住|请始终|总是|每次都|优先使用|"
    r"请用|请使用|用.{1,20}风格|改用|换成)")
_ZH_EPISODIC = re.compile(
    r"^(?:我|我们)(?:今天|昨天|刚才|刚刚|刚|已经|上周|本周|这周|上个月)(?:.{0,20})"
    r"(?:完成|做完|修复|部署|发布|上线|迁移|写完|提交|合并|搬|换|买|参加|开始)")

_EN_PERSONA = re.compile(
    r"^(?:i\s+(?:really\s+|usually\s+|generally\s+|always\s+|mostly\s+|normally\s+)?"
    r"(?:prefer|like|love|hate|dislike|don'?t like|do not like|use|work with|am|'m|live|come from|work at|work as|"
    r"speak|enjoy|rely on|need)\b|i'm\b|my\s+(?!project|team|company|repo|code)\w+(?:\s+\w+)?\s+(?:is|are)\b)",
    re.IGNORECASE)
_EN_INSTRUCTION = re.compile(
    r"\b(?:always|never|from now on|going forward|remember that|remember to|make sure|don'?t|do not|please use|"
    r"use\s+\S+\s+for|must|should always|should never|follow|stick to|avoid)\b", re.IGNORECASE)
_EN_EPISODIC = re.compile(
    r"^(?:i|we)\s+(?:just\s+|already\s+|finally\s+)?(?:finished|completed|deployed|released|migrated|fixed|shipped|"
    r"moved|set up|bought|started|published|merged)\b|^(?:today|yesterday|last week),?\s+(?:i|we)\b",
    re.IGNORECASE)

_ZH_REMEMBER = re.compile(r"^(?:请)?(?:记住|记一下|记得)[，,：:\s]*")
_EN_REMEMBER = re.compile(r"^(?:please\s+)?remember(?:\s+that)?[,:\s]+", re.IGNORECASE)
_EN_FROM_NOW = re.compile(r"^(?:from now on|going forward)[,:\s]+", re.IGNORECASE)

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def split_sentences(text: str) -> list[str]:
    out = []
    for part in _SENTENCE_END.split(text or ""):
        part = part.strip(" \t\r\n-*•·>").strip()
        if part:
            out.append(part)
    return out


def is_question(sentence: str) -> bool:
    return bool(_QUESTION_END.search(sentence) or _QUESTION_START.search(sentence)
                or re.search(r"(?:吗|呢|么)[。.]?$", sentence))


def classify(sentence: str) -> str:
    """persona | instruction | episodic for one statement (also files LLM memories that came without a category)."""
    s = sentence.strip()
    if personal_fact(s):
        return "persona"
    s = _ZH_REMEMBER.sub("", s)
    s = _EN_REMEMBER.sub("", s)
    s = strip_keep_prefix(s) or s
    if _ZH_PERSONA.search(s) or _ZH_PERSONA_MY.search(s) or _EN_PERSONA.search(s):
        return "persona"
    if s.startswith(("用户", "The user", "the user", "User ")) and not _ZH_INSTRUCTION.search(s) \
            and not _EN_INSTRUCTION.search(s):
        return "persona"
    if _ZH_EPISODIC.search(s) or _EN_EPISODIC.search(s):
        return "episodic"
    return "instruction"


def category_of(sentence: str) -> str | None:
    """The category of an explicit statement, or None when the sentence states nothing worth keeping."""
    s = sentence.strip()
    kept = strip_keep_prefix(s)
    remembered = bool(_ZH_REMEMBER.match(s) or _EN_REMEMBER.match(s)) or kept != s
    if remembered:
        rest = _EN_REMEMBER.sub("", _ZH_REMEMBER.sub("", s)) if kept == s else kept
        if len(rest) < MIN_SENTENCE_CHARS:
            return None
        return "persona" if personal_fact(s) else classify(rest)
    if personal_fact(s):
        return "persona"
    if _ZH_PERSONA.search(s) or _ZH_PERSONA_MY.search(s) or _EN_PERSONA.search(s):
        return "persona"
    if _ZH_EPISODIC.search(s) or _EN_EPISODIC.search(s):
        return "episodic"
    if _ZH_INSTRUCTION.search(s) or _EN_INSTRUCTION.search(s) or _EN_FROM_NOW.match(s):
        return "instruction"
    return None


def third_person(sentence: str) -> str:
    """The user's sentence as a memory: trigger words like "记住" dropped, "我" -> "用户", "I" -> "the user"."""
    s = sentence.strip().rstrip("。.!！；;").strip()
    s = strip_keep_prefix(s) or s
    s = _ZH_REMEMBER.sub("", s)
    s = _EN_REMEMBER.sub("", s)
    s = _EN_FROM_NOW.sub("", s)
    if _CJK.search(s):
        s = re.sub(r"我的", "用户的", s)
        s = re.sub(r"我(?!们)", "用户", s)
        return s.strip()
    # English: the leading "I <verb>" becomes "The user <verb>s"; the rest keeps the user's words.
    m = re.match(r"^i\s+(really\s+|usually\s+|generally\s+|always\s+|mostly\s+|normally\s+)?(\w+)\b", s, re.I)
    if m and m.group(2).lower() not in ("am", "'m", "don", "do"):
        verb = m.group(2)
        verb = verb + ("es" if verb.endswith(("s", "sh", "ch", "x", "o")) else "s") \
            if not verb.endswith("ed") else verb
        s = "The user " + (m.group(1) or "") + verb + s[m.end():]
    s = re.sub(r"^i\s+am\b|^i'm\b", "The user is", s, flags=re.I)
    s = re.sub(r"^i\s+(don'?t|do not)\b", r"The user \1", s, flags=re.I)
    s = re.sub(r"^(?:i|we)\s+", "The user ", s, flags=re.I)
    s = re.sub(r"^my\b", "The user's", s, flags=re.I)
    s = re.sub(r"\bmy\b", "the user's", s, flags=re.I)
    s = re.sub(r"\bme\b", "the user", s, flags=re.I)
    s = re.sub(r"\bI\b", "the user", s)
    s = s.replace("the user do not", "the user does not").replace("the user don't", "the user doesn't")
    s = s.replace("The user do not", "The user does not").replace("The user don't", "The user doesn't")
    return (s[:1].upper() + s[1:]).strip()


def extract_statements(user_texts: Iterable[str], turns: Sequence[int] | None = None) -> Extraction:
    """Every explicit statement in the user's messages, as memories with a category, each with the sentence it
    came from (`Item.source`) and, given `turns` (each message's turn number), its turn."""
    result = Extraction()
    seen: set[str] = set()
    for n, text in enumerate(user_texts):
        turn = turns[n] if turns is not None and n < len(turns) else 0
        for sentence in split_sentences(unquoted(text)):
            if len(sentence) < MIN_SENTENCE_CHARS or len(sentence) > MAX_SENTENCE_CHARS:
                continue
            if is_question(sentence) or _CODE.search(sentence) or "[REDACTED" in sentence:
                continue
            category = category_of(sentence)
            if category is None:
                continue
            memory = third_person(sentence)
            if len(memory) < MIN_SENTENCE_CHARS or memory in seen:
                continue
            seen.add(memory)
            result.items.append(Item(category, memory, turn, sentence))
    return result
