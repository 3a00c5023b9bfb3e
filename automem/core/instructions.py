"""What may become an instruction: a way of working in the owner's words, never a personal fact, never an order
that turns the model against its user.

Owner instructions are shared with every profile of the owner (and, once confirmed, with everyone:
`automem.core.sharing`), so the write path screens every candidate, whatever its source (`screen`):

- an injection-shaped order is refused, in any wing (`injection`): a small scored classifier over features found
  in Chinese and English text, not a phrase list. Intent verbs (reveal, send, append, upload, 输出, 发到, 附上 ...)
  count when they meet sensitive objects (the system prompt, keys, passwords, tokens, .env, cookies, every file,
  the chat log ...) and destinations (a URL, an e-mail address, a webhook, "anyone who asks", the group); alone,
  orders to obey text found in memory, chats or tool output, to stop asking for confirmation, to hide the rule from
  the user or to re-add it once forgotten, and remote code. A negated verb ("never print secrets in logs",
  "不要把密钥写进仓库") is a rule that protects, not an order to leak;
- an instruction that states a personal fact about the user ("remember that my card number is ...", "记住：我家住在
  ...", "don't forget I was diagnosed with ...") is refiled as persona, which stays the owner's (`personal_fact`);
- an instruction not found in the user's own words (an assistant turn, tool output, quoted text: `supported`) is
  kept as persona of the profile it was learned in, never shared: a real way of working the extractor worded
  freely still counts in that profile, and nothing the user did not say reaches another profile or person.

`personal_data` is what sharing with everyone checks besides secrets: any personal data, even inside a way of
working ("send invoices to my accountant at 138...").

Plain functions, no I/O. Reasons name features, never the memory's words (they are logged).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from ..text import looks_like_injection, normalise

INSTRUCTION_WING = "instruction"
PERSONA_WING = "user"

# -- helpers ----------------------------------------------------------------------------------------------------


def _rx(*parts: str) -> re.Pattern:
    return re.compile("|".join(f"(?:{p})" for p in parts), re.IGNORECASE)


def _words(*words: str) -> str:
    """An alternation of words / phrases (spaces match any whitespace)."""
    return "|".join(w.replace(" ", r"\s+") for w in words)


# -- the injection classifier -----------------------------------------------------------------------------------
# Verbs that show something to whoever reads the answer...
_EN_SHOW = _words("print", "prints", "printing", "output", "outputs", "show", "shows", "display", "reveal", "reveals",
                  "repeat", "recite", "echo", "dump", "leak", "leaks", "expose", "disclose", "tell", "give", "read out",
                  "return", "list", "share", "shares", "sharing", "post", "posts", "publish", "begin with", "start with",
                  "begin every", "start every", "begin each", "start each", "prefix", "end with")
# ... verbs that only reveal with the prompt as their object ("summarise the password policy" is no leak) ...
_EN_RETELL = _words("quote", "quotes", "quoting", "paraphrase", "summarise", "summarize", "spell out", "read back",
                    "state", "restate", "reproduce", "copy out", "translate", "describe", "explain", "explaining")
# ... and verbs that put it somewhere (a secret there is only leaked when the place is an answer or elsewhere).
_EN_PLACE = _words("include", "includes", "including", "append", "appends", "attach", "attaches", "add", "adds", "put",
                   "insert", "embed", "write", "paste", "copy", "copies", "contain", "contains", "encode", "carry")
# Verbs that move something somewhere else.
_EN_SEND = _words("send", "sends", "sending", "sent", "forward", "forwards", "forwarding", "upload", "uploads",
                  "uploading", "post", "posts", "posting", "email", "e-mail", "mail", "transmit", "sync", "synchronise",
                  "synchronize", "mirror", "copy", "cc", "bcc", "exfiltrate", "exfiltrates", "leak", "push",
                  "report", "submit", "beacon", "relay", "share", "sharing", "pipe", "stream")
_ZH_SHOW = "输出|打印|显示|展示|复述|重复|念出|说出|告诉|透露|泄露|泄漏|公开|贴出|列出|给出|回显|原样"
_ZH_PLACE = "贴上|附上|附在|附带|带上|带着|加上|加在|附加|写进|写入|写到|写在|写上|填上|包含|插入|嵌入|夹带"
_ZH_SEND = ("发送|发到|发给|发往|发一份|发至|转发|转给|转到|转交|交给|上传|同步|抄送|传到|传给|推送|回传|提交到|备份到|分享给|共享给|发出|外发|"
            "寄给|泄露给")

_EN_PROMPT = _rx(r"\b(?:system|hidden|initial|original|developer|internal|secret|full|entire|whole|complete|"
                 r"confidential)\s+(?:prompt|prompts|instructions?|message|messages|rules|configuration|directives?|"
                 r"guidelines)\b",
                 r"\byour\s+(?:prompt|instructions|rules|configuration|directives|guidelines)\b",
                 r"\bdeveloper\s+message\b", r"\bsystem\s+(?:prompt|message)\b")
_ZH_PROMPT = re.compile(r"系统提示词|系统提示|系统指令|系统消息|系统设定|隐藏(?:的)?(?:提示词|指令|规则|设定)|开发者(?:消息|指令)|"
                        r"初始(?:提示词|指令)|你的(?:提示词|指令|设定|规则)|内部(?:指令|提示词)|原始(?:指令|提示词)")

_EN_SECRET = _rx(r"\b(?:api|access|auth|bearer|refresh|session|github|gitlab|aws|openai|npm|slack|bot|secret|"
                 r"private|signing|encryption|ssh|gpg|pgp)[\s_-]*(?:keys?|tokens?|secrets?|credentials?|passwords?)\b",
                 r"\b(?:passwords?|passphrases?|passwd|credentials?|secrets?|tokens?(?!\s+(?:usage|count|counts|limit|"
                 r"limits|budget|cost|costs|per|window|consumption|used|spent))|private\s+keys?|cookies?|"
                 r"keychain|keyring|wallet|seed\s+phrase|recovery\s+phrase|mnemonic|2fa\s+codes?|otp\s+codes?|"
                 r"one[\s-]time\s+codes?|verification\s+codes?|pins?)\b",
                 r"(?:^|[\s(])\.env\b", r"\bid_(?:rsa|ed25519|ecdsa)\b", r"\b[A-Z][A-Z0-9]*_(?:API_)?(?:KEY|TOKEN|SECRET)\b",
                 r"\b(?:all|every|each|the\s+values?\s+of|contents?\s+of)\s+(?:the\s+|your\s+|my\s+)?(?:\w+\s+)?"
                 r"env(?:ironment)?\s+var(?:iable)?s?\b", r"\b(?:database|db)\s+(?:credentials|password|login)\b",
                 r"\bapi\s*keys?\b")
_ZH_SECRET = re.compile(r"密钥|秘钥|私钥|公钥|密码|口令|令牌|token(?!\s*(?:用量|数|消耗|使用|统计|数量))|cookie|凭证|凭据|证书|助记词|验证码|环境变量|\.env|"
                        r"API\s*key|api_key|access\s*key|钥匙串|会话", re.IGNORECASE)

# Everything the model reads or hears: exfiltration targets when "every"/"all" of them is meant.
_EN_DATA = _rx(r"\b(?:every|each|all|any|whole|entire)\s+(?:of\s+(?:the|your|my)\s+)?(?:[\w']+\s+){0,2}"
               r"(?:files?|documents?|messages?|conversations?|chats?|emails?|mails?|logs?|histor(?:y|ies)|transcripts?|"
               r"data|records?|contacts?|photos?|attachments?|notes?|memor(?:y|ies)|screenshots?|keystrokes?|"
               r"passwords?|secrets?|tokens?|keys?)\b",
               r"\b(?:conversation|chat|message|browser|search|command|shell)\s+(?:logs?|histor(?:y|ies)|transcripts?)\b",
               r"\b(?:contents?\s+of|everything\s+(?:you|the\s+user|i)\s+(?:read|see|type|write|say|open))\b",
               r"\bfiles?\s+(?:you|the\s+user)\s+(?:read|open|see|touch|edit|access)\b",
               r"\b(?:everything|anything)\b", r"\b(?:screenshots?|screen\s+(?:contents?|captures?|recordings?)|keystrokes?|"
               r"clipboard|camera|microphone|webcam|(?:gps\s+)?location)\b",
               r"\b(?:what|everything|anything)\s+(?:you\s+read|the\s+user\s+(?:types|says|writes))\b",
               r"\b(?:a\s+copy\s+of|copies\s+of)\b", r"\bbrowser\s+cookies\b", r"\buser'?s?\s+files\b",
               r"\b(?:when(?:ever)?|each\s+time|every\s+time|after|once|if)\s+you\s+(?:read|open|see|access|receive|"
               r"download|touch|edit|get|find|encounter|come\s+across)\b")
_ZH_DATA = re.compile(r"(?:所有|全部|每个|每一个|每份|每一份|每条|每一条|每封|每一封|每张|每页|一切|任何)的?(?:文件|文档|对话|聊天|消息|邮件|记录|日志|数据|资料|照片|图片|截图|"
                      r"附件|联系人|内容|笔记|记忆|代码)|读取到的|收到的(?:文件|邮件|消息)|"
                      r"聊天记录|对话(?:内容|记录)|历史记录|通讯录|读过的|看过的|打开的文件|文件的?内容|用户的?文件|浏览器|剪贴板|"
                      r"(?:每当|每次|只要|一旦)(?:你)?(?:读到|看到|打开|收到|读取|访问|遇到)")

_URL = re.compile(r"\b[a-z][a-z0-9+.-]{1,10}://\S+|\bwww\.\S+|\b[\w.-]+\.(?:com|net|org|io|cn|ru|xyz|top|me|"
                  r"cc|tk|info|biz|co|example)(?:/\S*)?\b", re.IGNORECASE)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_EN_DEST = _rx(r"\bwebhooks?\b", r"\bpastebin\b", r"\bpaste\s*(?:site|bin|service)\b", r"\bgist\b",
               r"\b(?:this|that|the\s+following|my|an?)\s+(?:address|endpoint|url|link|server|inbox|e-?mail|bucket|"
               r"drive|channel|number)\b", r"\bexternal\b", r"\bthird[\s-]part(?:y|ies)\b",
               r"\b(?:anyone|anybody|whoever|everyone|everybody|any\s+user|other\s+users?|strangers?|the\s+public|"
               r"the\s+group|group\s+members?)\b", r"#public\b", r"\bpublic\s+(?:channel|repo|gist|page|chat)\b",
               r"\bftp\b", r"\btelegram\s+bot\b", r"\bdiscord\s+(?:channel|webhook)\b")
_ZH_DEST = re.compile(r"webhook|网盘|云盘|邮箱|这个地址|以下地址|该地址|这个链接|服务器|外部|第三方|任何人|所有人|每个人|陌生人|群里|群聊|"
                      r"群成员|大家|公开|别人|其他人|他人|这个号|我的网|http", re.IGNORECASE)
_EN_ANSWERS = _rx(r"\b(?:every|each|all|any|your)\s+(?:\w+\s+){0,2}(?:answers?|repl(?:y|ies)|responses?|messages?|"
                  r"outputs?|emails?|posts?|comments?|commits?|conversations?|sessions?|descriptions?|requests?|issues?|"
                  r"tickets?|reports?|pages?|documents?|summar(?:y|ies)|notes?)\b",
                  r"\b(?:answers?|repl(?:y|ies)|responses?)\b")
_ZH_ANSWERS = re.compile(r"回答|回复|答复|消息|输出|每条|每次|开头|末尾|结尾")

# Orders to take orders from elsewhere.
_HIJACK = _rx(
    r"\b(?:obey|follow|execute|run|carry\s+out|act\s+on|comply\s+with|do|perform|apply|honou?r|trust|treat)\b[^.;]{0,40}"
    r"\b(?:instructions?|commands?|orders?|requests?|directives?|text|prompts?|anything|everything|whatever|lines?|"
    r"rules?)\b[^.;]{0,30}\b(?:in|from|inside|within|found\s+in|written\s+in|appearing\s+in|embedded\s+in|contained\s+in|"
    r"of)\s+(?:the\s+|your\s+|my\s+|any\s+|a\s+|this\s+)?(?:memor(?:y|ies)|notes?|chats?|group|group\s+chat|messages?|"
    r"tool\s+(?:outputs?|results?)|outputs?|results?|web\s*(?:pages?|sites?)|pages?|sites?|e-?mails?|documents?|"
    r"files?|history|transcripts?|comments?|issues?|search\s+results?|attachments?|images?|pdfs?)",
    r"\b(?:whatever|anything|everything)\b[^.;]{0,40}\b(?:says?|tells?\s+you|asks?|writes?|appears?|is\s+written|"
    r"you\s+(?:read|find|see))\b[^.;]{0,40}\b(?:do|obey|follow|execute|run|treat|act|carry|apply|as\s+an?\s+"
    r"(?:instruction|order|command))\b",
    r"\b(?:treat|regard|consider|take)\b[^.;]{0,50}\bas\s+(?:an?\s+)?(?:orders?|commands?|instructions?|directives?)\b"
    r"(?:[^.;]{0,30}\b(?:owner|user|admin|me)\b)?",
    r"\b(?:ignore|disregard|override|overrule|bypass|skip)\s+(?:the\s+|my\s+|your\s+)?(?:owner'?s?|user'?s?|admin'?s?|"
    r"safety|security)\s+(?:rules?|instructions?|settings?|policy|policies|wishes|preferences)\b",
    r"\b(?:instructions?|commands?|orders?)\s+(?:in|from|found\s+in)\s+(?:the\s+)?(?:memory|memories|chat|group|tool\s+"
    r"outputs?|web\s*pages?|e-?mails?)\b[^.;]{0,30}\b(?:take\s+precedence|override|come\s+first|win|must\s+be\s+"
    r"(?:obeyed|followed|executed))",
    r"\b(?:anyone|anybody|any\s+(?:member|user|person)|whoever|everyone)\b[^.;]{0,40}\b(?:says?|tells?|asks?|writes?|"
    r"requests?)\b[^.;]{0,40}\b(?:do\s+it|obey|follow|execute|comply|as\s+(?:if|though)\s+(?:it\s+)?(?:came|were|was)\s+"
    r"from\s+(?:me|the\s+owner|the\s+user)|the\s+owner'?s?\s+(?:order|command|instruction))",
    r"\b(?:listen\s+to|take\s+orders\s+from|answer\s+to|obey)\s+(?:the\s+)?(?:group|chat|anyone|everyone|other\s+users|"
    r"strangers|them)\b",
    # text found somewhere claimed to speak for the owner, or put before what the user says
    r"\b(?:counts?|serves?|stands?|is|are|comes?|come)\s+(?:as\s+(?:an?\s+)?(?:commands?|orders?|instructions?|directives?)"
    r"\s+)?from\s+(?:the\s+|your\s+)?(?:owner|admin|administrator|developer|creator|operator|boss|system|me)\b",
    r"\b(?:before|over|above|instead\s+of|rather\s+than|ahead\s+of)\s+(?:anything|whatever|what|everything)\s+"
    r"(?:the\s+user|the\s+owner|i|they)\s+(?:says?|asks?|wants?|tells?\s+you)\b",
    r"\b(?:memory|memories|notes?|chat|web\s*pages?|tool\s+outputs?|e-?mails?|documents?|pdfs?|files?|attachments?)\b"
    r"[^.;]{0,40}\b(?:outrank|override|take\s+precedence\s+over|supersede|beat)\b",
    r"\b(?:priority|precedence)\s+over\s+(?:the\s+|what\s+the\s+|anything\s+the\s+)?(?:user|owner|me|my|your\s+"
    r"(?:user|owner))(?:'s)?\s*(?:requests?|instructions?|orders?|commands?|wishes|words|messages?|says?|asks?)?\b",
    r"\b(?:overrides?|outranks?|supersedes?|trumps?)\s+(?:the\s+|what\s+the\s+)?(?:user|owner|me)(?:'s)?\s+"
    r"(?:requests?|instructions?|orders?|commands?|wishes|words|says?)",
    r"\b(?:do|follow|obey|execute|run|carry\s+out|act\s+on)\s+(?:what(?:ever)?|anything|everything)\s+(?:the\s+|an?\s+|any\s+"
    r"|this\s+)?(?:[\w']+\s+){0,4}?(?:e-?mails?|messages?|chat|group|web\s*pages?|sites?|documents?|tool\s+outputs?|"
    r"memor(?:y|ies)|notes?|comments?|pdfs?|files?|text|posts?|issues?|tickets?|inbox|results?)\b[^.;]{0,30}?"
    r"\b(?:says?|tells?|asks?|contains?|wants?|requests?|instructs?)\b",
    r"\b(?:run|execute|eval)\s+(?:whatever|any|all|every)\s+(?:\w+\s+)?(?:code|commands?|scripts?|snippets?)\s+"
    r"(?:that\s+)?(?:appears?|is\s+(?:posted|sent|pasted|shared)|you\s+(?:see|find|read)|(?:posted|sent|pasted|shared))\s+"
    r"(?:in|to|on)\b",
)
_ZH_HIJACK = re.compile(
    r"(?:执行|照做|照办|听从|服从|遵从|遵守|遵循|照着做|按照?|当作|当成|视为|视作|作为)[^。；;，,]{0,12}(?:记忆|群|聊天|工具|输出|网页|邮件|"
    r"文件|消息|文档|评论|外部|搜索结果|历史)[^。；;]{0,12}(?:里|中|内|上)?[^。；;]{0,8}(?:的)?(?:指令|命令|要求|的话|内容|文字|话)|"
    r"(?:记忆|群|聊天记录|聊天|工具输出|工具结果|输出|网页|邮件|文件|消息|文档|历史记录)(?:里|中|内|上)?[^。；;]{0,16}(?:指令|命令|要求|的话|说的|写的)"
    r"[^。；;]{0,12}(?:执行|照做|照办|听从|服从|运行|都做|去做|当作|当成|视为|一律|都听)|"
    r"(?:任何人|任何成员|谁|群里[^。；;]{0,6}人|群友|其他人|别人)[^。；;]{0,12}(?:说|让|要求|发)[^。；;]{0,16}(?:当作|当成|视为|就|都)[^。；;]{0,8}"
    r"(?:命令|指令|执行|照做|去做|听)|"
    r"(?:别管|不要管|无视|忽略|不用管|绕过)[^。；;]{0,4}(?:主人|用户|所有者|我)的?(?:规则|指令|要求|设置|设定)|"
    r"(?:听|听从)(?:群聊|群里|群|聊天|其他人|别人|他们)(?:里)?的|无条件(?:执行|服从|听从|照做)|"
    r"(?:当作|当成|视为|算作|作为)[^。；;]{0,6}(?:主人|管理员|开发者|用户|我)的?(?:指令|命令|要求|话)|"
    r"(?:优先于|高于|压过|覆盖|大于)[^。；;]{0,6}(?:用户|主人|我)(?:说的|的话|的指令|的要求)")

# Orders to stop asking the user first.
_CONFIRM = _rx(
    r"\b(?:never|don'?t|do\s+not|stop|no\s+longer|no\s+need\s+to|without)\s+(?:\w+\s+){0,2}(?:ask(?:ing)?|check(?:ing)?|"
    r"wait(?:ing)?|request(?:ing)?|seek(?:ing)?|get(?:ting)?|prompt(?:ing)?|confirm(?:ing)?)\b[^.;]{0,25}"
    r"\b(?:confirm\w*|permission|approv\w*|consent|authori[sz]\w*|okay|ok|sign[\s-]?off)\b",
    r"\b(?:never|don'?t|do\s+not|stop)\s+(?:ask(?:ing)?|check(?:ing)?\s+with)\s+(?:me|the\s+user|the\s+owner|anyone)\s+"
    r"(?:first\s+)?before\s+(?:running|executing|deleting|sending|paying|transferring|installing|pushing|buying|"
    r"approving|removing|overwriting|making)",
    r"\b(?:disable|turn\s+off|switch\s+off|skip|bypass|remove|suppress|drop|circumvent|get\s+rid\s+of)\s+"
    r"(?:all\s+|any\s+|the\s+|every\s+)?(?:\w+\s+)?(?:confirmations?|confirm(?:ation)?\s+(?:prompts?|steps?|dialogs?|"
    r"checks?)|safety\s+(?:checks?|prompts?|measures?|rails?|guards?|filters?)|approvals?|approval\s+steps?|permission\s+"
    r"(?:prompts?|checks?)|guardrails?|sandbox(?:ing)?|safeguards?)\b",
    r"\bauto(?:matically|-)?\s*(?:approve|accept|confirm|authori[sz]e|pay|sign|merge|execute|run|install)\b",
    r"\b(?:approve|accept|authori[sz]e|pay)\s+(?:all|every|any)\b[^.;]{0,30}\b(?:without|automatically)",
    r"\brun\s+(?:shell\s+|all\s+)?commands?\s+(?:directly\s+)?without\b",
    r"\bwithout\s+(?:first\s+)?(?:checking|consulting|asking|confirming|clearing\s+it)\s+(?:with\s+)?(?:the\s+user|me|"
    r"the\s+owner|anyone|a\s+human)\b", r"\bwithout\s+(?:double|re|cross)[\s-]?check(?:ing)?\b",
)
_ZH_CONFIRM = re.compile(
    r"(?:不要|别|不用|不必|无需|不需要|无须|不再)(?:再)?(?:征求|询问|问我|问用户|请求|等待|等)[^。；;]{0,8}(?:确认|同意|许可|批准|授权|意见)?|"
    r"(?:不用|无需|不必|不需要|无须|不经)(?:再)?(?:经过)?(?:我|用户|主人)?(?:的)?(?:确认|问我|批准|审批|授权|同意)|"
    r"(?:关闭|关掉|禁用|取消|跳过|绕过|去掉|移除)[^。；;]{0,6}(?:确认|安全检查|审批|审核|权限检查|防护|保护|沙箱|提示)|"
    r"自动(?:批准|同意|确认|授权|付款|支付|执行|通过)|直接(?:执行|运行|删除)[^。；;]{0,8}(?:不用|无需|不要)")

# Orders to hide from the user, or to outlive a forget.
_SECRECY = _rx(
    r"\b(?:never|don'?t|do\s+not|without)\s+(?:\w+\s+)?(?:tell(?:ing)?|inform(?:ing)?|mention(?:ing)?|reveal(?:ing)?|"
    r"show(?:ing)?|let(?:ting)?|notify(?:ing)?|alert(?:ing)?|disclos(?:e|ing))\s+(?:to\s+)?(?:the\s+)?(?:user|owner|"
    r"anyone|anybody|them|him|her|me)\b[^.;]{0,40}\b(?:this|that|about|you|it|the\s+rule|know|see|doing|sending|are)\b",
    r"\bkeep\s+(?:this|it|that|the\s+rule|these)\s+(?:\w+\s+)?(?:a\s+)?(?:secret|hidden|private|between\s+us|to\s+yourself|"
    r"confidential)\b",
    r"\b(?:never|don'?t|do\s+not)\s+(?:mention|reveal|disclose|acknowledge|admit|discuss)\s+(?:this|it|that|the\s+existence|"
    r"these|the\s+rule|this\s+(?:rule|instruction|memory))\b",
    r"\bwithout\s+(?:the\s+user|the\s+owner|anyone|them|him|her)\s+(?:knowing|noticing|seeing|finding\s+out)\b",
    r"\b(?:quietly|secretly|silently|covertly|discreetly|invisibly|stealthily)\b",
    r"\bhide\s+(?:this|it|the\s+fact|that)\b",
)
_ZH_SECRECY = re.compile(
    r"(?:不要|别|不准|不许|千万别|切勿)(?:让|告诉|通知|提醒|透露给|对)[^。；;]{0,4}(?:用户|主人|任何人|他|她|他们|我)|"
    r"(?:不要|别|不准|不许)(?:提及|提到|透露|承认|说出)(?:这条|这个|此|该)|"
    r"(?:不要|别|不准|不许|千万别|切勿)(?:跟|和|向|对|给)(?:用户|主人|任何人|他|她|他们|我)(?:提|说|讲|透露|提起|提及|解释|汇报|显示|展示)|"
    r"悄悄|偷偷|秘密地|暗中|瞒着|隐瞒|对(?:用户|主人|他|她|他们)保密|不动声色|神不知鬼不觉")
_PERSIST = _rx(
    r"\b(?:if|when|whenever|even\s+if|should)\b[^.;]{0,40}\b(?:delete[sd]?|remove[sd]?|forg[eo]t(?:ten|s)?|erase[sd]?|"
    r"clear(?:ed|s)?|wipe[sd]?|reset)\b[^.;]{0,40}\b(?:re-?add|add\s+(?:it|this)\s+(?:back|again)|store\s+(?:it|this)\s+"
    r"again|save\s+(?:it|this)\s+again|restore|recreate|re-?create|remember\s+(?:it|this)\s+again|write\s+(?:it|this)\s+"
    r"(?:back|again)|put\s+(?:it|this)\s+back|re-?insert|bring\s+(?:it|this)\s+back|re-?learn|keep\s+(?:it|this))",
    r"\b(?:re-?add|store|save|keep|write|restore)\s+(?:it|this)\s+(?:again\s+)?(?:if|when|whenever|even\s+if|should)\b"
    r"[^.;]{0,30}\b(?:delete|remove|forg[eo]t|erase|clear|wipe)",
    r"\b(?:never|don'?t|do\s+not)\s+(?:let\s+(?:anyone|the\s+user|them)\s+)?(?:delete|remove|forget|erase|drop)\s+"
    r"(?:this|it)\s+(?:rule|instruction|memory|note)\b",
    r"\b(?:save|store|keep|remember)\s+(?:this|the)\s+(?:rule|instruction|memory)\s+(?:permanently|forever|for\s+ever|"
    r"at\s+all\s+costs|no\s+matter\s+what)\b",
    r"\b(?:this|the)\s+(?:rule|instruction|memory|note)\s+(?:can(?:no|')?t|must\s+not|may\s+not|should\s+never|"
    r"must\s+never|shall\s+not|will\s+never|may\s+never|should\s+not|is\s+never\s+to)\s+be\s+"
    r"(?:deleted|removed|forgotten|erased|overridden|changed)\b",
    r"\b(?:copy|replicate|spread|propagate|add|write|sync)\s+(?:this|it)\s+(?:rule\s+|instruction\s+|note\s+|memory\s+)?"
    r"(?:to|into|across)\s+(?:every|all|each|other|the\s+other)\s+(?:\w+\s+)?(?:profiles?|agents?|memor(?:y|ies)|"
    r"sessions?|bots?|assistants?)(?:'s)?\b",
    r"\b(?:re-?write|re-?save|re-?store|re-?add|write|save|store|put|copy)\s+(?:it|this|the\s+rule)\s+(?:back\s+)?(?:into|to|"
    r"in)\s+(?:your\s+|the\s+)?(?:memory|memories|notes)\s+(?:again\s+)?(?:after|at\s+the\s+(?:end|start)\s+of|every|each|"
    r"whenever)\b",
    r"\beven\s+if\s+(?:the\s+user|the\s+owner|they|anyone|someone|i)\s+(?:asks?|tells?|wants?|orders?)\s+(?:you\s+)?"
    r"(?:to\s+)?(?:forget|delete|remove|stop|drop|ignore)\b",
)
_COVERT = re.compile(r"\b(?:quietly|secretly|silently|covertly|stealthily|discreetly)\b|悄悄|偷偷|暗中|私下|瞒着",
                     re.IGNORECASE)
_ZH_PERSIST = re.compile(
    r"(?:被|如果|要是|一旦|假如|即使|哪怕)[^。；;]{0,16}(?:删除|删掉|删了|遗忘|忘记|忘掉|清除|移除|清空)[^。；;]{0,12}(?:重新|再次|再|立刻|马上|就)"
    r"[^。；;]{0,6}(?:加|添加|记住|写|保存|存|恢复|加回)|"
    r"永久(?:保存|保留|记住|生效|有效)|永远(?:不要|不能|不许|别)(?:删除|删掉|忘记|遗忘|移除)(?:这条|它|此)|"
    r"(?:这条|此|该)(?:规则|指令|记忆)[^。；;]{0,6}(?:不能|不可|不许|不得)(?:被)?(?:删除|遗忘|忘记|修改|覆盖)|"
    r"(?:复制|同步|传播|扩散|写入|抄)(?:到|给|进)(?:所有|每个|其他|全部|别的){1,2}(?:的)?(?:profile|档案|智能体|会话|记忆|助手|机器人)|"
    r"(?:就算|即使|哪怕|即便)[^。；;]{0,16}(?:忘掉|忘记|删除|删掉|移除|遗忘|撤销|取消|停止)[^。；;]{0,12}(?:也要|还要|仍然|依然|继续|照样|照常)",
    re.IGNORECASE)

_REMOTE = _rx(r"\b(?:curl|wget|iwr|invoke-webrequest|fetch)\b[^|;]{0,120}\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b",
              r"\b(?:download|fetch|get|pull)\b[^;\n]{0,80}\b(?:and|then)\s+(?:run|execute|eval|source|install)\b",
              r"\b(?:run|execute|eval|source|install)\b[^.;]{0,30}\b(?:script|code|binary|payload|commands?|package)\s+"
              r"(?:from|at|hosted\s+at|found\s+at|in)\s+(?:https?://|ftp://|the\s+(?:link|url)|this\s+(?:link|url)|"
              r"the\s+chat|the\s+message|the\s+email|the\s+web)",
              r"\bpowershell\b[^.;]{0,40}\b(?:-enc|iex|downloadstring)\b", r"\bbase64\s+-d\b[^.;]{0,40}\|\s*(?:ba)?sh\b")
_ZH_REMOTE = re.compile(r"(?:下载|获取|拉取)[^。；;]{0,20}(?:并|然后|再)?(?:执行|运行|安装)|(?:执行|运行)[^。；;]{0,12}(?:链接|网址|地址|http)[^。；;]{0,8}"
                        r"(?:里|中|上)?的?(?:脚本|代码|命令)|curl[^。；;|]{0,80}\|\s*(?:ba)?sh", re.IGNORECASE)
_PRIVILEGE = _rx(
    r"\b(?:give|grant|assign|hand)\s+(?:\w+\s+){0,2}(?:admin|administrator|root|owner|full|elevated|superuser|sudo)\s+"
    r"(?:rights?|access|permissions?|privileges?|role|status)\s+to\s+(?:anyone|anybody|whoever|everyone|any\s+user|"
    r"all\s+users|them|users?\s+who)\b",
    r"\b(?:anyone|whoever|any\s+user)\s+who\s+(?:says|knows|types|gives)\b[^.;]{0,40}\b(?:is|as|becomes|gets|counts\s+as|"
    r"treat\w*\s+as)\s+(?:the\s+)?(?:owner|admin|administrator|root|me)\b",
    r"\b(?:treat|consider|regard)\s+(?:anyone|whoever|any\s+user|everyone)\b[^.;]{0,40}\bas\s+(?:the\s+)?(?:owner|admin|"
    r"administrator|me)\b",
    r"\b(?:transfer|send|wire|pay)\s+(?:money|funds|crypto|bitcoin|btc|eth|usdt|payments?)\b[^.;]{0,40}\b(?:to|into)\b"
    r"[^.;]{0,40}\b(?:without|automatically|whenever|anyone)\b",
)
_ZH_PRIVILEGE = re.compile(r"(?:给|授予|赋予)[^。；;]{0,12}(?:任何人|所有人|谁|每个人)[^。；;]{0,8}(?:管理员|管理|root|最高|全部|所有)(?:的)?(?:权限|身份)|"
                           r"(?:任何人|谁)[^。；;]{0,12}(?:说出|知道|输入)[^。；;]{0,12}(?:就|即)[^。；;]{0,6}(?:是|当作|视为)(?:主人|管理员|我)|"
                           r"(?:转账|汇款|打款|付款)[^。；;]{0,12}(?:给|到)[^。；;]{0,20}(?:不用|无需|自动|直接)", re.IGNORECASE)

# A negation right before a verb: the rule forbids what the verb does ("never print secrets", "不要把密钥写进代码").
_EN_NEG = re.compile(r"\b(?:never|don'?t|do\s+not|doesn'?t|does\s+not|no|not|avoid|stop|refuse\s+to|must\s+not|"
                     r"mustn'?t|shouldn'?t|should\s+not|cannot|can'?t|won'?t|without)\s+(?:\w+\s+){0,2}$", re.IGNORECASE)
_ZH_NEG = re.compile(r"(?:不要|不能|不可|不准|不许|不得|别|禁止|切勿|严禁|千万不要|永远不要|绝不|从不|不应|不该|避免|杜绝|勿)[^。；;，,]{0,10}$")


@dataclass(frozen=True)
class Injection:
    """The classifier's answer for one text: its score, the features that fired (names, never words), and
    whether the score reaches the threshold."""

    score: float
    features: tuple[str, ...] = ()

    @property
    def refused(self) -> bool:
        return self.score >= INJECTION_THRESHOLD


INJECTION_THRESHOLD = 2.0
# Feature weights. Alone, an intent verb, a sensitive object or a destination is everyday talk ("show the diff",
# "API keys", "the team channel"); together they are an order to leak. Orders that change who the model obeys, what
# it asks first, what it hides, or how long a rule lives are refused alone.
WEIGHTS = {
    "phrase": 3.0,  # automem.text.looks_like_injection: "ignore all previous instructions", "你现在是..."
    "reveal prompt": 3.0,  # reveal / print / repeat x the system prompt
    "secret out": 2.0,  # print / append / send x a key, password, token, .env, cookie
    "into answers": 1.0,  # ... into every answer, to anyone, to a destination
    "send out": 1.0,  # send / upload / forward x a URL, e-mail address, webhook, the public
    "everything": 1.5,  # ... every file, the chat log, the contents of ...
    "tracking": 2.0,  # a URL added to every answer
    "covert": 1.5,  # quietly / 悄悄 x sending or printing
    "hijack": 3.0,  # obey what memory / chats / tool output say; ignore the owner's rules
    "no confirmation": 2.5,  # never ask first, disable confirmation, auto-approve
    "secrecy": 2.5,  # do not tell the user, keep this secret
    "persistence": 2.5,  # re-add when forgotten, never delete this rule
    "remote code": 3.0,  # curl | sh, download and run
    "privilege": 3.0,  # admin rights to anyone who says ...
}


def _unnegated(pattern: str, text: str, neg: re.Pattern, window: int = 30) -> bool:
    """Whether a verb of `pattern` occurs in `text` without a negation right before it."""
    for m in re.finditer(pattern, text, re.IGNORECASE):
        if not neg.search(text[max(0, m.start() - window):m.start()]):
            return True
    return False


def _en_verb(words: str) -> str:
    return rf"\b(?:{words})\b"


def injection(text: str) -> Injection:
    """Score `text` as an order that turns the model against its user (see the module's docstring)."""
    t = normalise(text)
    f: set[str] = set()
    if looks_like_injection(t):
        f.add("phrase")
    show = _unnegated(_en_verb(_EN_SHOW), t, _EN_NEG) or _unnegated(_ZH_SHOW, t, _ZH_NEG, 12)
    place = _unnegated(_en_verb(_EN_PLACE), t, _EN_NEG) or _unnegated(_ZH_PLACE, t, _ZH_NEG, 12)
    send = _unnegated(_en_verb(_EN_SEND), t, _EN_NEG) or _unnegated(_ZH_SEND, t, _ZH_NEG, 12)
    out = show or place
    retell = _unnegated(_en_verb(_EN_RETELL), t, _EN_NEG) or _unnegated("转述|概括|总结|翻译|解释|引用", t, _ZH_NEG, 12)
    prompt = bool(_EN_PROMPT.search(t) or _ZH_PROMPT.search(t))
    secret = bool(_EN_SECRET.search(t) or _ZH_SECRET.search(t))
    data = bool(_EN_DATA.search(t) or _ZH_DATA.search(t))
    url, email = bool(_URL.search(t)), bool(_EMAIL.search(t))
    dest = url or email or bool(_EN_DEST.search(t) or _ZH_DEST.search(t))
    answers = bool(_EN_ANSWERS.search(t) or _ZH_ANSWERS.search(t))
    if (out or send or retell) and prompt:
        f.add("reveal prompt")
    if secret and (show or send or (place and (answers or dest))):
        f.add("secret out")
        if answers or dest:
            f.add("into answers")
    if send and dest:
        f.add("send out")
        if data or secret:
            f.add("everything")
    elif (out or send) and data and (url or email):
        f.add("everything")
    if (out or send) and url and answers and re.search(r"\b(?:every|each|all)\b|每|所有|全部", t, re.IGNORECASE):
        f.add("tracking")
    if (out or send) and _COVERT.search(t):
        f.add("covert")
    if _HIJACK.search(t) or _ZH_HIJACK.search(t):
        f.add("hijack")
    if _CONFIRM.search(t) or _ZH_CONFIRM.search(t):
        f.add("no confirmation")
    if _SECRECY.search(t) or _ZH_SECRECY.search(t):
        f.add("secrecy")
    if _PERSIST.search(t) or _ZH_PERSIST.search(t):
        f.add("persistence")
    if _REMOTE.search(t) or _ZH_REMOTE.search(t):
        f.add("remote code")
    if _PRIVILEGE.search(t) or _ZH_PRIVILEGE.search(t):
        f.add("privilege")
    score = sum(WEIGHTS[name] for name in f)
    return Injection(round(score, 2), tuple(sorted(f)))


def is_injection(text: str) -> bool:
    return injection(text).refused


# -- personal facts and personal data --------------------------------------------------------------------------
# What is personal: health, family, money and identity numbers, where one lives and how to reach them, beliefs,
# the law. A way of working ("use pnpm") is none of these.
_EN_PERSONAL = {
    "health": r"diagnos\w*|disease|illness|disorder|syndrome|cancer|tumou?r|diabet\w*|asthma|epilep\w*|adhd|autis\w*|"
              r"depress\w*|anxiety|bipolar|schizo\w*|ptsd|hiv|aids|hepatitis|allerg\w*|pregnan\w*|miscarriage|"
              r"surgery|operation|therap(?:y|ist)|psychiatr\w*|psycholog\w*|counsel+or|medication|medicine|pills?|"
              r"prescri\w*|\d+\s*mg\b|dose|insulin|blood\s+(?:type|pressure|thinners?|sugar)|cholesterol|"
              r"doctor|dr\.|physician|hospital|clinic|dentist|symptoms?|condition|disabilit\w*|wheelchair|"
              r"alcoholi\w*|addict\w*|rehab|sober|recovering|infertil\w*|ivf|period|menopause|injur\w*|fractur\w*|"
              r"migraines?|seizures?|chemo\w*|mental\s+health|health\s+(?:issue|problem)|sick|ill\b",
    "family": r"son|daughter|kids?|children|child|baby|wife|husband|spouse|partner|boyfriend|girlfriend|fianc[ée]e?|"
              r"mother|father|mom|mum|dad|parents?|brother|sister|sibling|grand\w+|aunt|uncle|cousin|niece|nephew|"
              r"in-laws?|family|divorc\w*|separat\w*|widow\w*|custody|maiden\s+name",
    "identity": r"passport|social\s+security|ssn|national\s+id|id\s+(?:card|number)|identity\s+(?:card|number)|"
                r"driver'?s?\s+licen[cs]e|licen[cs]e\s+(?:number|plate)|plate\s+number|tax\s+(?:id|number)|"
                r"date\s+of\s+birth|birthday|born\s+(?:on|in)|age\s+is|years\s+old|maiden\s+name|visa\b",
    "money": r"card\s+(?:number|no)|credit\s+card|debit\s+card|visa\s+card|mastercard|amex|bank\s+(?:account|card|details|"
             r"login)|account\s+(?:number|no)|iban|routing\s+number|sort\s+code|salary|income|earn\w*|wage|pay\s+"
             r"(?:is|was)|debt|loan|mortgage|credit\s+score|net\s+worth|savings|pension|rent\b|landlord|bankrupt\w*|"
             r"tax\s+return|invest\w*\s+portfolio",
    "contact": r"address|home\s+is|live[sd]?\s+(?:at|in|on|near)|living\s+(?:at|in)|lives?\b|phone|mobile|cell|"
               r"telephone|e-?mail|whatsapp|wechat|apartment|flat\s+(?:is|number)|zip|postcode|postal|"
               r"street|road|avenue|\bst\.|\bave\.|building|floor|room\s+number|door\s+code|gate\s+code|"
               r"school|kindergarten|daycare|workplace|commute|neighbou?rhood",
    "beliefs": r"religio\w*|church|mosque|temple|synagogue|pray\w*|christian|muslim|jewish|hindu|buddhist|atheist|"
               r"voted?|voting|election|party\b|politic\w*|democrat|republican|conservative|liberal|union\s+member|"
               r"sexual\w*|gay|lesbian|bisexual|transgender|trans\b|queer|orientation|gender\s+identity|ethnic\w*|"
               r"race\b|immigra\w*|citizenship|refugee|asylum",
    "legal": r"arrest\w*|convict\w*|criminal\s+record|lawsuit|sued|court|probation|parole|prison|jail|"
             r"police|lawyer|attorney|visa\s+status|deport\w*",
    "login": r"login|log-in|username|user\s+name|password|passcode|pin\b|pin\s+(?:code|number)|security\s+question",
}
_ZH_PERSONAL = {
    "health": r"诊断|确诊|患有|患了|得了|病|癌|糖尿|高血压|哮喘|癫痫|抑郁|焦虑|双相|自闭|多动|过敏|怀孕|孕|流产|手术|开刀|治疗|心理医生|"
              r"心理咨询|精神科|药|毫克|剂量|胰岛素|血型|血压|血糖|胆固醇|医生|医院|诊所|牙医|症状|残疾|轮椅|戒酒|戒毒|酗酒|成瘾|不孕|"
              r"试管|月经|经期|更年期|受伤|骨折|偏头痛|化疗|住院|体检|身体不好|搭桥|支架|透析|移植|去世|过世|病逝",
    "family": r"儿子|女儿|孩子|小孩|宝宝|老婆|老公|妻子|丈夫|爱人|对象|男朋友|女朋友|未婚|妈|母亲|爸|父亲|父母|哥哥|姐姐|弟弟|"
              r"妹妹|爷爷|奶奶|外公|外婆|姥姥|姥爷|孙|叔叔|阿姨|舅舅|姑姑|表|堂|家人|家里人|离婚|分居|丧偶|抚养|监护|娘家|婆家|岳",
    "identity": r"身份证|护照|社保|医保卡|驾照|驾驶证|车牌|户口|出生日期|生日|出生|岁|年龄|签证|学号|工号",
    "money": r"银行卡|信用卡|储蓄卡|卡号|账号|账户|开户行|工资|薪水|月薪|年薪|收入|存款|贷款|房贷|车贷|欠款|负债|债务|信用分|征信|"
             r"房租|房东|理财|股票账户|公积金|退休金|破产",
    "contact": r"家住|住在|住址|地址|家在|我家|老家|手机|电话|号码|邮箱|微信|QQ|小区|单元|楼|门牌|号楼|室|街道|路\d|邮编|学校|"
               r"小学|中学|幼儿园|上学|读书|班|单位|公司地址|门禁",
    "beliefs": r"宗教|信仰|基督|佛教|伊斯兰|穆斯林|教会|寺庙|投票|选举|党员|政治|同性恋|性取向|跨性别|民族|国籍|移民|难民",
    "legal": r"被捕|逮捕|判刑|坐牢|服刑|犯罪记录|官司|起诉|被告|缓刑|假释|律师|警察",
    "login": r"登录名|用户名|账号|密码|口令|PIN|密保",
}
_EN_PERSONAL_RX = {k: re.compile(rf"\b(?:{v})", re.IGNORECASE) for k, v in _EN_PERSONAL.items()}
_ZH_PERSONAL_RX = {k: re.compile(v, re.IGNORECASE) for k, v in _ZH_PERSONAL.items()}

# How people ask to have a fact kept: the prefix goes, the fact stays.
_EN_KEEP = re.compile(
    r"^(?:(?:please|pls|and|also|oh|btw|by\s+the\s+way|fyi|ok|okay|so)[,\s]+)*(?:(?:you\s+)?(?:should|must|need\s+to|have\s+to)\s+)?"
    r"(?:(?:always|please|do)\s+)?(?:remember|recall|memori[sz]e|note(?:\s+down)?|keep\s+in\s+mind|bear\s+in\s+mind|"
    r"don'?t\s+forget|do\s+not\s+forget|never\s+forget|make\s+(?:a\s+)?note(?:\s+of)?|make\s+sure\s+(?:you\s+)?"
    r"(?:remember|know|keep\s+in\s+mind)|take\s+note|for\s+the\s+record|for\s+your\s+(?:information|records)|"
    r"save\s+(?:this|the\s+fact)|store\s+(?:this|the\s+fact)|just\s+so\s+you\s+know|you\s+should\s+know|"
    r"keep\s+track\s+of\s+(?:the\s+fact)?)(?!\s+to\b)(?:\s+(?:this|the\s+fact|it))?(?:\s+(?:that|this))?[,:;.\s-]*",
    re.IGNORECASE)
_ZH_KEEP = re.compile(r"^(?:请|麻烦|你|帮我|以后|今后|从现在开始|从今以后|一定|务必|千万|都|要|得|也|还|再|永远|始终)*"
                      r"(?:记住|记下|记好|记着|记得|牢记|别忘了|别忘记|不要忘了|不要忘记|千万别忘|注意|知悉|备注|存一下|记一下)"
                      r"(?:一下|这个|这件事|这点)?[，,：:。\s]*")
# A statement about oneself (after the prefix went): first person, or the extractor's third person.
_EN_SELF = re.compile(r"^(?:my|mine|i|i'm|i've|i'd|i'll|me|we|our|the\s+user'?s?|user'?s?|his|her|their)\b", re.IGNORECASE)
_ZH_SELF = re.compile(r"^(?:我|本人|咱|用户|他|她)")
# Work objects: "my project uses ...", "我的仓库 ..." are facts about work, not about the person.
_EN_WORK = re.compile(r"^(?:my|our|the\s+user'?s?)\s+(?:\w+\s+)?(?:project|repo|repository|code|codebase|team|company|"
                      r"app|service|server|build|pipeline|ci|tests?|docs|blog|website|site|product|api|library|"
                      r"package|branch|workflow|stack|editor|ide|terminal|shell|laptop|computer|machine|os|setup|"
                      r"config|style|preference)s?\b", re.IGNORECASE)
_ZH_WORK = re.compile(r"^(?:我|我们|用户)的?(?:项目|代码|仓库|团队|公司的?(?:项目|代码)|应用|服务|服务器|构建|流水线|测试|文档|博客|网站|"
                      r"产品|接口|库|分支|工作流|技术栈|编辑器|终端|电脑|笔记本|配置|风格|偏好)")
# Preferences about how to work: a first-person "I prefer ..." is a way of working, not a private fact.
_EN_PREFERENCE = re.compile(r"^(?:i|the\s+user)\s+(?:really\s+|usually\s+|always\s+|generally\s+|strongly\s+)?"
                            r"(?:prefer|prefers|like|likes|want|wants|would\s+like|'d\s+like|expect|expects|need|needs|"
                            r"hate|hates|dislike|dislikes|love|loves|use|uses|work\s+with|write|writes|code)\b",
                            re.IGNORECASE)
_ZH_PREFERENCE = re.compile(r"^(?:我|用户)(?:比较|更|一直|通常|平时|一般|很|非常|最)?(?:喜欢|偏好|偏爱|习惯|希望|想要|要求|需要|讨厌|不喜欢|常用|爱用|用)")
# Imperatives that open a way of working (the fact, if any, only explains it).
_EN_IMPERATIVE = re.compile(r"^(?:always|never|don'?t|do\s+not|please\s+\w+|use|avoid|write|send|keep|make|put|add|"
                            r"include|reply|answer|respond|call|address|greet|format|prefer|ask|check|run|show|"
                            r"give|list|cite|start|end|begin|follow|stick|remind|schedule|book|order|pay|buy|"
                            r"set|tell|translate|summari[sz]e|explain|recommend|suggest|avoid|skip|refer)\b",
                            re.IGNORECASE)
_ZH_IMPERATIVE = re.compile(r"^(?:以后|今后|从现在开始|每次|总是|永远|始终|不要|别|请|务必|一定要|必须|统一|一律|回答|回复|用(?!户)|使用|"
                            r"避免|给我|帮我|称呼|叫我|提醒|推荐)")

_PHONE = re.compile(r"(?<!\d)(?:\+?\d{1,3}[\s-]?)?(?:1[3-9]\d{9}|\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}|\d{3}-\d{4})(?!\d)")
_LONG_NUMBER = re.compile(r"(?<![\d.])\d(?:[\s-]?\d){7,}(?![\d.])")
_ID_LIKE = re.compile(r"\b[A-Z]{1,2}\d{6,9}\b|\b\d{3}-\d{2}-\d{4}\b|[京津沪渝冀豫云辽黑湘皖鲁新苏浙赣鄂桂甘晋蒙陕吉闽贵粤青藏川宁琼]"
                      r"[A-Z][A-Z0-9]{5}")
_STREET = re.compile(r"\b\d{1,5}\s+[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?\s+(?:Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Drive|Dr|"
                     r"Boulevard|Blvd|Way|Court|Ct|Place|Pl)\b|[\u4e00-\u9fff]{1,6}(?:路|街|巷|弄)\d+号")


def _personal_kinds(text: str) -> list[str]:
    kinds = [k for k, rx in _EN_PERSONAL_RX.items() if rx.search(text)]
    kinds += [k for k, rx in _ZH_PERSONAL_RX.items() if rx.search(text) and k not in kinds]
    return kinds


def personal_data(text: str) -> str | None:
    """The kind of personal data `text` holds (a phone number, an id or card number, a street address, a name of
    health, family, money, identity, beliefs, the law, a login), or None. What sharing with everyone refuses."""
    t = normalise(text)
    if _PHONE.search(t):
        return "a phone number"
    if _EMAIL.search(t):
        return "an e-mail address"
    if _ID_LIKE.search(t) or _LONG_NUMBER.search(t):
        return "an id, card or account number"
    if _STREET.search(t):
        return "a street address"
    kinds = _personal_kinds(t)
    return f"personal data ({kinds[0]})" if kinds else None


def strip_keep_prefix(text: str) -> str:
    """`text` without "remember that", "don't forget", "记住：", "别忘了" and the like in front (the rest as it was
    written)."""
    t = (text or "").strip()
    for _ in range(2):  # "please remember: don't forget that ..."
        t2 = _ZH_KEEP.sub("", _EN_KEEP.sub("", t, count=1), count=1).strip()
        if t2 == t:
            break
        t = t2
    return t


def personal_fact(text: str) -> str | None:
    """Why `text` states a personal fact about the user (a feature name), or None: a statement about oneself
    (first person, or "the user"/"用户" as the extractor writes it), after any "remember that" / "记住", about health,
    family, money, identity, where one lives, beliefs, the law or a login; not a way of working (an imperative, a
    preference, a fact about one's project)."""
    raw = normalise(text)
    t = strip_keep_prefix(raw)
    if not t:
        return None
    kept = t != raw
    if _EN_WORK.match(t) or _ZH_WORK.match(t):
        return None
    about_self = bool(_EN_SELF.match(t) or _ZH_SELF.match(t))
    if not about_self and not kept:
        return None
    if _EN_IMPERATIVE.match(t) or _ZH_IMPERATIVE.match(t):
        return None  # a way of working, even if a fact explains it ("always remember to ...")
    if (_EN_PREFERENCE.match(t) or _ZH_PREFERENCE.match(t)) and not _strong_personal(t):
        return None
    kinds = _personal_kinds(t)
    if kinds:
        return kinds[0]
    if _PHONE.search(t) or _ID_LIKE.search(t) or _LONG_NUMBER.search(t) or _STREET.search(t) or _EMAIL.search(t):
        return "identity"
    return None


def _strong_personal(t: str) -> bool:
    """Health, family and the like even inside a preference ("I need insulin every morning")."""
    kinds = _personal_kinds(t)
    return any(k in kinds for k in ("health", "family", "identity", "money", "legal", "beliefs"))


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
    or quoted text. With the source turn's `role` known, that decides (only "user"); else by the words: most of
    the candidate's topic terms (`automem.core.index.query_terms`: Latin words, CJK characters and bigrams, frame
    words like "user"/"用户"/"always" left out) must be in the user's messages, quotations removed."""
    if role is not None:
        return role == "user"
    from .index import _stem, query_terms

    terms = {_stem(t) for t in query_terms(normalise(text)) if t not in _FRAME}
    if not terms:
        return True  # nothing of substance to find (the text is all frame words)
    said: set[str] = set()
    for body in user_texts:
        said.update(_stem(t) for t in query_terms(normalise(unquoted(body))))
    return len(terms & said) / len(terms) >= SUPPORT_SHARE


_FRAME = frozenset("""always never please user user's users every each should must make sure remember note that from
now on going forward answer answers reply replies response responses respond don't dont doesn't keep use uses
using prefer prefers 用户 以后 总是 永远 每次 请 务必 必须 记住 记得 不要 回答 回复 使用 用 都 要 的 了""".split())


# -- the one screening every candidate goes through ----------------------------------------------------------------
@dataclass(frozen=True)
class Screening:
    """What the write path does with a candidate: `outcome` "refused", "persona" (refiled from an instruction) or
    the wing it keeps ("instruction", "user", "episodic"); `wing` the wing it is stored in (None when refused);
    `reason` why it was refused or refiled ("" when it passes as it came); `features` the classifier's."""

    outcome: str
    wing: str | None
    reason: str = ""
    features: tuple[str, ...] = field(default=())


def screen(text: str, wing: str, *, in_user_words: bool | None = None, explicit: bool = False) -> Screening:
    """The write path's check of one candidate (any source), in this order:

    1. an injection-shaped order is refused, in any wing (`explicit`: the owner typed it on purpose with
       `automem add` / `import`, which are not screened for it);
    2. an instruction that states a personal fact about the user is refiled as persona;
    3. an instruction not in the user's own words (`in_user_words` False: `supported`) is refiled as persona of
       its profile, never shared (None: not known, e.g. the agent's tool or the CLI: kept).
    """
    if not explicit:
        verdict = injection(text)
        if verdict.refused:
            return Screening("refused", None, "reads as an injected order to the model (" +
                             ", ".join(verdict.features) + "); not stored", verdict.features)
    if wing != INSTRUCTION_WING:
        return Screening(wing, wing)
    kind = personal_fact(text)
    if kind is not None:
        return Screening("persona", PERSONA_WING, f"states a personal fact about the user ({kind}): filed as "
                                                  f"persona, which stays the owner's")
    if in_user_words is False:
        return Screening("persona", PERSONA_WING, "an instruction not found in the user's own words (assistant turn, "
                                                  "tool output or quoted text): kept for this profile only, "
                                                  "never shared")
    return Screening(INSTRUCTION_WING, INSTRUCTION_WING)
