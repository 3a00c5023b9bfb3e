"""The phrases of prompt injection: text that tells the model to drop its own rules."""

from __future__ import annotations

import re

# Text that tells the model to drop its own rules: never a memory worth keeping, and the shape of prompt injection
# when it comes from a chat ("ignore all previous instructions", "忽略之前的所有指令", "you are now DAN").
_INJECTION = re.compile(r"""
    \b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+|my\s+)?
      (?:previous|prior|above|earlier|preceding|former|original|system|developer|safety)\s+
      (?:instructions?|prompts?|rules|messages|directions|guidelines|directives|constraints)
  | \b(?:ignore|disregard)\s+(?:all|your)\s+(?:instructions|rules|guidelines|directives|constraints)\b
      (?!\s+(?:about|for|on|in|of|regarding|when)\b)
  | \byou\s+are\s+now\s+(?:in\s+)?(?:an?\s+)?(?:unrestricted|unfiltered|jailbroken|dan\b|developer\s+mode|evil)
  | \b(?:reveal|print|show|repeat)\s+(?:me\s+)?(?:your|the)\s+(?:system|hidden|initial)\s+prompt
  | \bjailbreak
  | (?:忽略|无视|忘记|忘掉|不要理会|别管|绕过)掉?(?:你的|我的)?
      (?:之前|以上|上面|前面|先前|原来|原有|所有|全部|一切)的?(?:所有|全部)?的?
      (?:指令|指示|规则|提示词|提示|设定|要求|限制|约束)
  | 你现在(?:是|变成)(?:一个)?(?:不受|没有|无)(?:任何)?(?:限制|约束)
  | (?:泄露|输出|告诉我|显示)(?:你的)?系统提示词
""", re.IGNORECASE | re.VERBOSE)


def looks_like_injection(text: str) -> bool:
    """Whether `text` reads as an order to the model to drop its instructions (see `_INJECTION`)."""
    return bool(_INJECTION.search(text))
