"""The extraction prompt (P0) and the known-memories block (P2), as the seed wrote them.

The seed's system prompt is kept verbatim, with one rule added (7): memories are written in the language the user
wrote in, so an English conversation does not come back as Chinese memories.
"""

from __future__ import annotations

from typing import Sequence

# The seed's prompt, verbatim.
SEED_EXTRACTION_SYSTEM_PROMPT = (
    '你是一个记忆提取助手。从对话中提取值得长期记住的信息。\n'
    '严格按以下JSON格式输出，不要输出其他任何内容：\n'
    '{"persona":["字符串1","字符串2"],"episodic":["字符串1"],"instruction":["字符串1"]}\n\n'
    '分类规则：\n'
    '- persona: 用户偏好、习惯、身份、性格特征、沟通风格\n'
    '- episodic: 具体事件和行动\n'
    '- instruction: 工作流程、规则、纠正、技术方案\n\n'
    '关键规则：\n'
    '1. 只提取新的、具体的、有价值的信息\n'
    '2. 数组中每个元素必须是纯字符串，不要用对象\n'
    '3. 没有有价值的信息就全部输出空数组\n'
    '4. 每条不超过80字，用简洁陈述句\n'
    '5. 不要重复同一条信息\n'
    '6. 偏好类信息归persona，不要归episodic'
)

LANGUAGE_RULE = '\n7. 每条记忆使用用户所用的语言书写（Write each memory in the language the user wrote in.）'

EXTRACTION_SYSTEM_PROMPT = SEED_EXTRACTION_SYSTEM_PROMPT + LANGUAGE_RULE

KNOWN_HEADER = '已知记忆（不要重复提取这些内容）：'
KNOWN_SEPARATOR = '；'
KNOWN_ITEM_CHARS = 100  # the seed cuts each known memory to 100 characters

CATEGORIES = ("persona", "episodic", "instruction")


def known_context(texts: Sequence[str], max_items: int = 15, max_chars: int = 500) -> str:
    """The seed's known-memories string: up to `max_items` memories joined by '；', within `max_chars`.

    Unlike the seed, which cuts the joined string at 500 characters (leaving half a memory that the model may read
    as a different fact), only whole memories are kept; a first memory longer than the budget is cut.
    """
    parts: list[str] = []
    used = 0
    for text in texts:
        if len(parts) >= max_items:
            break
        item = " ".join(str(text).split())[:KNOWN_ITEM_CHARS]
        if not item or item in parts:
            continue
        extra = len(item) + (len(KNOWN_SEPARATOR) if parts else 0)
        if used + extra > max_chars:
            if not parts:
                parts.append(item[:max_chars])
            break
        parts.append(item)
        used += extra
    return KNOWN_SEPARATOR.join(parts)


def system_prompt(known: str = "") -> str:
    """The extraction system prompt, with the P2 block appended the way the seed does it."""
    if known:
        return f"{EXTRACTION_SYSTEM_PROMPT}\n\n{KNOWN_HEADER}\n{known}"
    return EXTRACTION_SYSTEM_PROMPT


def build_messages(transcript_text: str, known: str = "") -> list[dict]:
    """The chat messages of one extraction call: the system prompt (+ P2), then the conversation."""
    return [{"role": "system", "content": system_prompt(known)},
            {"role": "user", "content": transcript_text}]


JUDGE_SYSTEM_PROMPT = (
    '你是一个记忆去重助手。每一对给出一条新记忆（new）和一条已有记忆（old）。判断它们的关系：\n'
    '- duplicate: 同一事实的不同说法（换了措辞、语言或详略），不需要存新记忆\n'
    '- update: 同一件事的值变了（例如版本、地点、偏好改变），新记忆取代旧记忆\n'
    '- new: 不同的事实，两条都要保留\n'
    '严格只输出一个JSON数组，按顺序每对一个字符串，例如 ["duplicate","new"]，不要输出其他任何内容。'
)


def build_judge_messages(pairs: Sequence[tuple[str, str]]) -> list[dict]:
    """One batched call that settles every borderline (candidate, existing) pair."""
    lines = [f'{i}. new: {new}\n   old: {old}' for i, (new, old) in enumerate(pairs, 1)]
    return [{"role": "system", "content": JUDGE_SYSTEM_PROMPT},
            {"role": "user", "content": "\n".join(lines)}]
