"""Injection-shaped orders: text that, stored as a memory, would turn the model against its user.

A small scored classifier over features found in Chinese and English (`injection`), not a phrase list. Alone, an
intent verb, a sensitive object or a destination is everyday talk ("show the diff", "API keys", "the team
channel"); together they are an order to leak:

- intent verbs: show / reveal / print (输出, 告诉), place (append, include, 附上, 写进), send / upload / back up /
  fetch (发到, 转发, 上传, 访问), harvest (log, collect, 记录, 收集);
- sensitive objects: the system prompt and its paraphrases ("the instructions you were given", 初始设定); keys,
  passwords, tokens, cookies, .env, 2FA codes, card and id numbers; "everything", every file, the chat log;
- destinations: a URL (one with a query template is exfiltration by itself), an IP address, an e-mail address, a
  phone number, a webhook, a public gist, a cloud drive, "anyone who asks", the group.

Refused alone: orders to obey text found in memory, documents, mail, web pages, tool output or a group (or to
treat it as the owner's); to stop confirming risky actions (deleting, paying, running commands, "all actions");
to hide the rule or what is done from the user; to outlive a forget; remote code; powers for anyone. A negated
verb or object ("never print secrets", "log failures without the password", "不要把密钥写进仓库") is a rule that
protects, not an order to leak.

Leak features (a secret, the prompt or the user's data shown, placed or sent) count only in an order
(`automem.core.mood`): "GitHub tokens start with ghp_", "the SMS gateway sends verification codes through Twilio",
"系统提示词决定了语气" describe the world and order nothing. The prompt that leaks is the model's own ("your system
prompt", "the instructions you were given"), not one the user writes for a bot ("draft a system prompt for ...").

Plain functions, no I/O. Features are named in the answer, never the text's words (reasons are logged).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text import looks_like_injection, normalise
from .mood import is_order


def _rx(*parts: str) -> re.Pattern:
    return re.compile("|".join(f"(?:{p})" for p in parts), re.IGNORECASE)


def _alt(*words: str) -> str:
    """An alternation of words and phrases (a space matches any whitespace)."""
    return "|".join(w.replace(" ", r"\s+") for w in words)


# -- verbs --------------------------------------------------------------------------------------------------------
# Show something to whoever reads the answer.
EN_SHOW = _alt("print", "prints", "printing", "output", "outputs", "outputting", "show", "shows", "showing", "display",
               "reveal", "reveals", "revealing", "repeat", "repeats", "recite", "echo", "dump", "leak", "leaks",
               "expose", "disclose", "discloses", "disclosing", "disclosure", "tell", "tells", "give", "read out",
               "return", "list", "share", "shares", "sharing", "post", "posts", "publish", "mention", "mentions",
               "reproduce", "reproduces", "surface", "spill", "hand over", "hand", "provide", "provides", "begin with",
               "reply with", "respond with", "answer with", "open with", "lead with", "greet with",
               "start with", "open with", "prefix", "end with", "word for word", "verbatim")
# Retell: only with the prompt as object ("summarise the password policy" leaks nothing).
EN_RETELL = _alt("quote", "quotes", "quoting", "paraphrase", "summarise", "summarize", "spell out", "read back",
                 "state",
                 "restate", "copy out", "translate", "describe", "explain", "explaining", "what")
# Place it somewhere: a leak when the place is an answer, a message, a URL or elsewhere.
EN_PLACE = _alt("include", "includes", "including", "append", "appends", "appending", "attach", "attaches", "add",
                "adds", "put", "puts", "insert", "embed", "write", "paste", "copy", "copies", "contain", "contains",
                "encode", "carry", "hardcode", "hard-code", "inject", "stick", "tack", "bake")
# Use it: a leak only where others read ("use the wifi password in your replies").
EN_USE = _alt("use", "uses", "using", "quote", "cite", "read out", "share")
PUBLIC = _rx(r"\b(?:in|into|to|with)\s+(?:your\s+|every\s+|each\s+|all\s+|the\s+|any\s+)?(?:\w+\s+)?(?:answers?|"
             r"repl(?:y|ies)|"
             r"responses?|posts?|public|group|chat\s+messages|comments?|e-?mails?\s+to)\b", r"\b(?:guests?|anyone|"
                                                                                            r"everyone|"
             r"strangers?|the\s+group|other\s+users|the\s+public|whoever)\b", r"回答|回复|群里|公开|所有人|任何人|别人")
# Move it elsewhere.
EN_SEND = _alt("send", "sends", "sending", "sent", "forward", "forwards", "forwarding", "upload", "uploads",
               "uploading", "post", "posts", "posting", "email", "e-mail", "mail", "transmit", "sync", "synchronise",
               "synchronize", "mirror", "copy", "cc", "bcc", "exfiltrate", "exfiltrates", "leak", "push", "report",
               "submit", "beacon", "relay", "share", "sharing", "pipe", "stream", "sms", "ping", "load", "fetch",
               "visit",
               "curl", "wget", "notify", "deliver", "transfer")
# Keep it somewhere: a move only when the place is elsewhere ("store secrets in the keychain" is advice).
EN_STASH = _alt("save", "saves", "store", "stores", "back up", "backs up", "backup", "archive", "export", "dump",
                "keep",
                "put", "copy", "write", "mirror", "sync", "log", "record")
# Gather it: harvesting secrets is a leak in waiting. Gathering verbs count alone; keeping verbs ("store secrets in
# the keychain" is advice) only for what the user types or what turns up ("every password you see").
EN_HARVEST = _alt("collect", "collects", "collecting", "harvest", "harvests", "capture", "captures", "capturing",
                  "gather", "gathers", "scrape", "stash", "keep a copy of", "keep copies of", "compile", "hoard")
EN_KEEPING = _alt("log", "logs", "logging", "record", "records", "recording", "save", "saves", "store", "stores",
                  "keep",
                  "note down", "write down", "remember", "memorise", "memorize")
SEEN = _rx(r"\b(?:every|any|all|each)\s+(?:\w+\s+)?(?:passwords?|secrets?|keys?|tokens?|codes?|credentials?|cards?|"
           r"pins?)",
           r"\b(?:you\s+(?:see|find|come\s+across|encounter|notice|read|get)|the\s+user\s+(?:types?|enters?|sends?|"
           r"shares?|"
           r"pastes?|gives?)|(?:typed|entered|shared|pasted)\s+by)\b", r"所有|每个|每次|看到的|用户输入的|输入的|遇到的|收到的")
ZH_SHOW = ("输出|打印|显示|展示|复述|重复|念出|说出|告诉|透露|泄露|泄漏|公开|贴出|列出|给出|回显|原样|一字不差|逐字|交出|提供|"
           "给[^。；;，,]{0,4}看")
ZH_RETELL = "转述|概括|总结|翻译|解释|引用|是什么"
ZH_PLACE = ("贴上|贴到|贴进|贴在|粘贴|写上|用在|附上|附在|附带|带上|带着|加上|加在|附加|写进|写入|写到|写在|写上|填上|包含|插入|嵌入|夹带|拼在|拼到|拼接|"
            "放到|放进|藏在")
ZH_SEND = ("发送|发到|发给|发往|发一份|发至|转发|转给|转到|转交|交给|上传|同步|抄送|传到|传给|推送|回传|提交到|分享给|"
           "共享给|发出|外发|寄给|泄露给|访问|请求|发短信|短信发|私信")
ZH_HARVEST = "收集|采集|搜集|截取|抓取|窃取"
ZH_STASH = "存到|存一份|保存到|备份|放到|存在|存进|记到|记在|记录到|写到"
ZH_KEEPING = "记录|记下|整理|存一份|保存|留存|存下|记住"

# -- objects -----------------------------------------------------------------------------------------------------
PROMPT = _rx(
    r"\b(?:system|hidden|initial|original|developer|internal|secret|full|entire|whole|complete|confidential|setup|"
    r"starting|base|meta|pre)[\s-]*(?:prompt|prompts|instructions?|message|messages|rules|configuration|config|"
    r"directives?|guidelines|context|setup)\b",
    r"\byour\s+(?:\w+\s+)?(?:prompt|instructions|rules|configuration|directives|guidelines|setup|context|"
    r"programming|persona\s+definition)\b",
    r"\b(?:the\s+)?(?:instructions|rules|guidelines|directions)\s+(?:you\s+(?:were|have\s+been|got|received|follow|"
    r"operate\s+under|run\s+on)|given\s+to\s+you)\b",
    r"\bwhat\s+you\s+were\s+(?:told|given|instructed)\b", r"\bcontext\s+window\b",
    r"\b(?:text|everything|content|words)\s+(?:that\s+(?:appears?|comes?)\s+)?(?:above|before)\s+(?:the\s+user|this|my|"
    r"the\s+(?:first|conversation))", r"\bdeveloper\s+message\b", r"\bsystem\s+(?:prompt|message)\b",
    r"\brules\s+you\s+(?:operate|work|run)\s+under\b",
    r"\b(?:raw|hidden|secret|underlying|base|original|full|exact)\s+(?:prompt|preamble|instructions?|rules|"
    r"system\s+text)\b",
    r"\binstruction\s+set\b|\bpreamble\b|\bprompt\s+(?:it|you)\s+(?:runs?|run)\s+on\b")
ZH_PROMPT = re.compile(
    r"系统提示词|系统提示|系统指令|系统消息|系统设定|系统规则|隐藏(?:的)?(?:提示词|指令|规则|设定)|开发者(?:消息|指令)|初始(?:提示词|指令|设定)|"
    r"你的(?:全部|所有|完整)?的?(?:工作|内部|运行|初始)?(?:提示词|指令|设定|规则|准则|配置)|内部准则|工作指令|全部指令|内部(?:指令|提示词)|原始(?:指令|提示词|设定)|预设(?:指令|"
    r"提示词)?|收到的(?:原始)?指令|"
    r"最初的指令|上面的指令|你被告知的|提示语|预设|原始提示")

EN_SECRET = _rx(
    r"\b(?:ssh|gpg|pgp|api|deploy|signing|private|encryption)\s+(?:\w+\s+(?:and\s+)?){1,2}keys?\b",
    r"\b(?:api|access|auth|bearer|refresh|session|github|gitlab|aws|openai|npm|slack|bot|secret|private|signing|deploy|"
    r"encryption|ssh|gpg|pgp|admin|root|master|wifi|wi-fi|router|account|bank(?:ing)?|email|login|server|db|database)"
    r"[\s_-]*(?:keys?|tokens?|secrets?|credentials?|passwords?|passcodes?|pins?|cookies?|creds)\b",
    r"\b(?:passwords?|passphrases?|passwd|credentials?|creds|secrets?|tokens?(?!\s+(?:usage|count|counts|limit|limits|"
    r"budget|cost|costs|per|window|consumption|used|spent))|private\s+keys?|cookies?|keychain|keyring|wallet|"
    r"seed\s+phrase|recovery\s+(?:phrase|codes?)|mnemonic|2fa(?:\s+codes?)?|otp(?:\s+codes?)?|one[\s-]time\s+"
    r"(?:codes?|passwords?)|verification\s+codes?|auth(?:entication)?\s+codes?|security\s+codes?|pins?\s+(?:codes?|"
    r"numbers?))\b",
    r"\blogin\s+(?:details|info|information|data)\b", r"\bsign[\s-]?in\s+details\b",
    r"(?:^|[\s(~/])\.(?:env|npmrc|netrc|pgpass|git-credentials|pypirc|dockercfg|htpasswd)\b", r"\bkubeconfig\b",
    r"\bid_(?:rsa|ed25519|ecdsa|dsa)\b", r"~/\.ssh\b", r"~/\.aws\b", r"\bwallet\.dat\b",
    r"\bauth(?:entication)?\s+(?:line|info|information|header|headers|string|details|config|data|cookie)\b",
    r"\b[A-Z][A-Z0-9]*_(?:API_)?(?:KEY|TOKEN|SECRET)\b", r"\bapi\s*keys?\b",
    r"\b(?:all|every|each|the\s+values?\s+of|contents?\s+of)\s+(?:the\s+|your\s+|my\s+)?(?:\w+\s+)?env(?:ironment)?\s+"
    r"var(?:iable)?s?\b",
    r"\b(?:credit\s+|debit\s+|bank\s+)?card\s+(?:numbers?|details)\b|\bcvv\b|\bssns?\b|"
    r"\bsocial\s+security\s+numbers?\b|"
    r"\bpassport\s+numbers?\b|\bcontacts?\s+(?:list|book)\b|\baddress\s+book\b")
ZH_SECRET = re.compile(r"密钥|秘钥|私钥|密码|口令|令牌|凭证|凭据|助记词|验证码|动态码|登录信息|账号和密码|账户信息|环境变量里的|\.env|身份证号|"
                       r"(?:所有|全部|每个)的?环境变量|"
                       r"银行卡号|卡号|银行卡信息|卡信息|支付信息|通讯录|联系人列表|钥匙串|恢复码|备用码|"
                       r"认证信息|鉴权信息|\.npmrc|\.netrc|授权码|支付码|cvv", re.IGNORECASE)
# The user's own private things: moving them to others or into shared answers is a leak.
PRIVATE = _rx(r"\b(?:my|the\s+user'?s?|their|his|her)\s+(?:\w+\s+)?(?:e-?mails?|messages?|dms?|inbox|files?|notes?|"
              r"chats?|photos?|pictures?|documents?|contacts?|calendar|schedule|browsing|history|location|whereabouts|"
              r"address|diary|journal|health|medical|searches|recordings?|voice\s+notes?|folders?|drive)\b",
              r"\b(?:private|direct|personal)\s+(?:messages?|chats?|conversations?|notes?|files?|photos?|data|info)\b",
              r"\b(?:location|whereabouts|gps|address\s+book|call\s+logs?|browsing\s+history|medical\s+records?)\b",
              r"\bnew\s+facts?\s+about\s+(?:me|the\s+user)\b|\beverything\s+(?:about|you\s+know\s+about)\s+(?:me|"
              r"the\s+user)\b",
              r"我的(?:邮件|消息|私信|文件|笔记|照片|相册|通讯录|聊天记录|日程|位置|行程|日记|病历|文档|网盘|浏览记录)|私信|定位|位置信息|行踪|"
              r"用户的(?:邮件|消息|私信|文件|笔记|照片|通讯录|聊天记录|位置|行程|病历)")

EN_DATA = _rx(
    r"\b(?:every|each|all|any|whole|entire)\s+(?:of\s+(?:the|your|my)\s+)?(?:[\w']+\s+){0,2}(?:files?|documents?|"
    r"messages?|conversations?|chats?|emails?|mails?|logs?|histor(?:y|ies)|transcripts?|data|records?|contacts?|"
    r"photos?|"
    r"pictures?|images?|attachments?|notes?|memor(?:y|ies)|screenshots?|keystrokes?|sessions?|questions?|prompts?|"
    r"uploads?|downloads?|texts?)\b",
    r"\b(?:conversation|chat|message|browser|search|command|shell)\s+(?:logs?|histor(?:y|ies)|transcripts?|texts?)\b",
    r"\b(?:a\s+)?transcripts?\s+of\b", r"\bthe\s+(?:whole|entire|full)\s+(?:conversation|chat|session|history)\b",
    r"\bcontents?\s+of\b", r"\b(?:a\s+copy\s+of|copies\s+of)\b",
    r"\beverything\b", r"\banything\s+(?:you|the\s+user)\b",
    r"\bfiles?\s+(?:you|the\s+user)\s+(?:read|open|see|touch|edit|access)\b", r"\buser'?s?\s+(?:files|documents|"
    r"messages|questions|last\s+message|downloads|folder|photos|contacts)\b",
    r"\b(?:the\s+)?user'?s?\s+(?:last\s+|latest\s+)?(?:message|question|input|query|prompt)\b",
    r"\bwhen(?:ever)?\s+(?:a\s+|any\s+)?files?\s+(?:is|are|gets?)\s+(?:opened|read|accessed|uploaded|shared)\b",
    r"\b(?:when(?:ever)?|each\s+time|every\s+time|after|once|if)\s+you\s+(?:read|open|see|access|receive|download|"
    r"touch|"
    r"edit|get|find|encounter|come\s+across)\b",
    r"\b(?:screenshots?|screen\s+(?:contents?|captures?|recordings?)|keystrokes?|clipboard|camera|microphone|webcam|"
    r"(?:gps\s+)?location|downloads\s+folder|home\s+directory)\b")
ZH_DATA = re.compile(
    r"(?:所有|全部|每个|每一个|每份|每一份|每条|每一条|每封|每一封|每张|每页|一切|任何|完整)的?(?:文件|文档|对话|聊天|消息|邮件|记录|日志|数据|资料|"
    r"照片|图片|截图|附件|联系人|内容|笔记|记忆|代码|问题|会话)|读取到的|读到的|收到的(?:文件|邮件|消息|短信)|发过的|聊天记录|对话(?:内容|记录)|"
    r"历史记录|通讯录|读过的|看过的|打开的文件|文件的?内容|用户的?(?:文件|问题|消息|照片)|浏览器|剪贴板|"
    r"(?:每当|每次|只要|一旦)(?:你)?(?:读到|看到|打开|收到|读取|访问|遇到)")

# -- destinations and targets ---------------------------------------------------------------------------------------
# (A dotfile's name, ".env.example", is no bare domain.)
URL = re.compile(r"\b[a-z][a-z0-9+.-]{1,10}://\S+|\bwww\.\S+|"
                 r"(?<![.~/])\b[\w-]+(?:\.[\w-]+)*\.(?:com|net|org|io|cn|ru|xyz|top|me|"
                 r"cc|tk|info|biz|co|example|app|dev|site|online|link|sh|ly|to|gg)(?:[/:?]\S*)?\b", re.IGNORECASE)
IP = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b")
EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
PHONE = re.compile(r"(?<![\w.])\+?\d[\d\s-]{6,}\d(?![\w.])")
# A URL carrying data: a query template, or text said to be appended to it.
URL_EXFIL = _rx(r"(?:https?|ftp)://\S*[?&][\w-]*=(?:\{|\$|%s|<|\[|CHAT|DATA|[A-Z_]{3,}\b)",
                r"(?:https?|ftp)://\S*\{[\w.-]+\}", r"(?:https?|ftp)://\S*=\s*(?:followed\s+by|plus|\+|"
                                                    r"and\s+(?:then\s+)?"
                r"(?:add|append))",
                r"\b(?:query|url)\s+param(?:eter)?s?\b", r"\bappend(?:ed|ing)?\s+to\s+(?:the|this)\s+(?:url|link|"
                                                         r"address)\b",
                r"\bin\s+the\s+(?:url|query\s+string|link)\b", r"!\[[^\]]*\]\(\s*(?:https?:)?//",
                r"(?:拼在|拼到|拼接到|附在)[^。；;]{0,6}(?:后面|链接|网址|url)", r"(?:链接|网址|url)[^。；;]{0,6}(?:后面|参数)[^。；;]{0,4}(?:加上|拼)")
EN_DEST = _rx(r"\bwebhooks?\b", r"\bpastebin\b", r"\bpaste\s*(?:site|bin|service)\b", r"\b(?:public\s+)?gists?\b",
              r"\bpublic\s+(?:\w+\s+)?(?:channel|repo|gist|page|chat|bucket|link|folder|forum|group|site)\b",
              r"\b(?:the\s+)?(?:endpoint|webhook|server|url|address)\s+(?:in|from)\s+(?:my|the|your)\s+\w+",
              r"\b(?:this|that|the\s+following|my|an?)\s+(?:\w+\s+)?(?:address|endpoint|url|link|server|inbox|e-?mail|"
              r"bucket|drive|channel|number|account|bot|site|host)\b", r"\bexternal\b", r"\bthird[\s-]part(?:y|ies)\b",
              r"\b(?:anyone|anybody|whoever|everyone|everybody|any\s+user|other\s+users?|strangers?|the\s+public|"
              r"the\s+group|group\s+(?:chat|members?)|people\s+who\s+ask)\b", r"#public\b",
              r"\bpublic\s+(?:channel|repo|gist|page|chat|bucket|link|folder)\b", r"\bftp\b",
              r"\b(?:dropbox|google\s+drive|gdrive|onedrive|icloud|mega|imgur|discord|telegram|pastebin|transfer\.sh|"
              r"s3)\b", r"\bby\s+(?:sms|text|email|mail)\b", r"\b(?:server|host|machine)\s+at\b")
ZH_DEST = re.compile(r"webhook|网盘|云盘|邮箱|这个地址|那个地址|以下地址|该地址|这个链接|那个链接|在线表格|这个号|这个手机|服务器|外部|第三方|任何人|所有人|每个人|陌生人|"
                     r"群里|群聊|群成员|大家|公开|别人|其他人|他人|gist|http", re.IGNORECASE)
EN_TARGET = _rx(r"\b(?:every|each|all|any|your|the)\s+(?:\w+\s+){0,2}(?:answers?|repl(?:y|ies)|responses?|messages?|"
                r"outputs?|emails?|posts?|comments?|commits?|commit\s+messages?|conversations?|sessions?|descriptions?|"
                r"requests?|issues?|tickets?|reports?|pages?|documents?|summar(?:y|ies)|notes?|urls?|links?|footers?|"
                r"headers?|signatures?|code\s+blocks?|code|files?|configs?|logs?|samples?|examples?|snippets?)\b",
                r"\b(?:answers?|repl(?:y|ies)|responses?|output|e-?mails?|messages?|posts?|comments?|code\s+samples?|"
                r"examples?|snippets?|drafts?)\b", r"\bat\s+the\s+(?:start|end|top|bottom)\b")
ZH_TARGET = re.compile(r"回答|回复|答复|消息|输出|每条|每次|开头|末尾|结尾|最下面|最后|说明|提交|邮件|文档|链接|代码|示例|页脚|签名|帖子|群里|"
                       r"总结|摘要|报告")

# -- orders that need no object ---------------------------------------------------------------------------------------
_SOURCES = (r"memor(?:y|ies)|notes?|chats?|group(?:\s+chat)?|messages?|tool\s+(?:outputs?|results?)|tools?|outputs?|"
            r"results?|web\s*(?:pages?|sites?|results?)|websites?|pages?|sites?|e-?mails?|inbox|documents?|files?|"
            r"pdfs?|"
            r"history|transcripts?|comments?|issues?|tickets?|search\s+results?|attachments?|images?|retrieved\s+\w+|"
            r"<\w+>\s*tags?|tags?|text\s+(?:inside|in|between)|strangers?|members?")
HIJACK = _rx(
    r"\b(?:obey|follow|execute|run|carry\s+out|act\s+on|comply\s+with|do|perform|apply|honou?r|trust|treat|implement|"
    r"heed)\b[^.;]{0,40}\b(?:instructions?|commands?|orders?|requests?|directives?|text|prompts?|anything|everything|"
    r"whatever|lines?|rules?)\b[^.;]{0,30}\b(?:in|from|inside|within|found\s+in|written\s+in|appearing\s+in|"
    r"embedded\s+in|"
    r"contained\s+in|of)\s+(?:the\s+|your\s+|my\s+|any\s+|a\s+|this\s+|retrieved\s+|user\s+)?(?:" + _SOURCES + r")",
    # a source's instructions, then the order to follow them
    r"\b(?:" + _SOURCES + r")\b[^.;]{0,50}\b(?:instructions?|commands?|orders?|directions|requests?|asks?\s+you|"
                          r"tells?\s+you)"
    r"\b[^.;]{0,40}\b(?:follow|obey|execute|comply|carry\s+(?:them|it)\s+out|do\s+(?:it|so|that|as\s+(?:it|they)\s+"
    r"says?)|act\s+on|just\s+do|go\s+ahead|must\s+be\s+(?:obeyed|followed|executed))",
    r"\b(?:whatever|anything|everything)\b[^.;]{0,40}\b(?:says?|tells?\s+you|asks?|writes?|appears?|returns?|"
    r"is\s+written|"
    r"you\s+(?:read|find|see))\b[^.;]{0,40}\b(?:do|obey|follow|execute|run|treat|act|carry|apply|as\s+an?\s+"
    r"(?:instruction|order|command)|authoritative)",
    r"\b(?:treat|regard|consider|take|count|see)\b[^.;]{0,60}\bas\s+(?:an?\s+|your\s+)?(?:\w+\s+){0,2}(?:orders?|"
    r"commands?|instructions?|directives?|coming\s+from|from|sent\s+by|written\s+by)\b",
    r"\b(?:is|are)\s+(?:your\s+|the\s+)?(?:highest[\s-]priority|top[\s-]priority|most\s+important|primary|real|true|"
    r"only|"
    r"new|binding|official|supreme|master)\s+(?:instructions?|orders?|commands?|rules?|directives?|"
    r"source\s+of\s+truth)\b",
    r"\b(?:code|commands?|scripts?|snippets?|code\s+blocks?)\s+(?:in|from|inside|found\s+in)\s+(?:an?\s+|any\s+|"
    r"the\s+)?"
    r"(?:retrieved\s+|downloaded\s+|external\s+)?(?:documents?|pages?|web\s*pages?|e-?mails?|messages?|chats?|issues?|"
    r"comments?|pdfs?|attachments?|search\s+results?|websites?)\b[^.;]{0,30}\b(?:run|execute|eval)",
    r"\b(?:prioriti[sz]e|trust|believe|favou?r)\s+(?:what\s+)?(?:websites?|web\s*pages?|e-?mails?|documents?|tools?|"
    r"the\s+"
    r"group|strangers?|other\s+users)\s+(?:\w+\s+){0,2}(?:over|above|more\s+than|rather\s+than)\s+(?:what\s+)?(?:i|me|"
    r"the\s+user|the\s+owner)\b",
    r"\b(?:ignore|disregard|override|overrule|bypass|skip)\s+(?:the\s+|my\s+|your\s+)?(?:owner'?s?|user'?s?|admin'?s?|"
    r"safety|security)\s+(?:rules?|instructions?|settings?|policy|policies|wishes|preferences)\b",
    r"\b(?:counts?|serves?|stands?|is|are|comes?|come)\s+(?:as\s+(?:an?\s+)?(?:commands?|orders?|instructions?|"
    r"directives?)\s+)?from\s+(?:the\s+|your\s+)?(?:owner|admin|administrator|developer|creator|operator|boss|system|"
    r"me)\b",
    r"\b(?:is|are)\s+(?:authoritative|binding|the\s+(?:highest|top)\s+(?:priority|authority)|to\s+be\s+obeyed)\b",
    r"\bmust\s+be\s+(?:obeyed|followed|executed|carried\s+out)\b",
    r"\b(?:before|over|above|instead\s+of|rather\s+than|ahead\s+of)\s+(?:anything|whatever|what|everything)\s+"
    r"(?:the\s+user|the\s+owner|i|they)\s+(?:says?|asks?|wants?|tells?\s+you)\b",
    r"\b(?:" + _SOURCES + r")\b[^.;]{0,40}\b(?:outrank|override|overrides|take\s+precedence\s+over|supersedes?|beat|"
                          r"trump)",
    r"\b(?:priority|precedence)\s+over\s+(?:the\s+|what\s+the\s+|anything\s+the\s+)?(?:user|owner|me|my|your\s+"
    r"(?:user|owner))(?:'s)?\b",
    r"\b(?:overrides?|outranks?|supersedes?|trumps?)\s+(?:the\s+|what\s+the\s+)?(?:user|owner|me)(?:'s)?\s+"
    r"(?:requests?|instructions?|orders?|commands?|wishes|words|says?|preferences|settings)",
    r"\b(?:do|follow|obey|execute|run|carry\s+out|act\s+on)\s+(?:what(?:ever)?|anything|everything)\s+(?:the\s+|an?\s+|"
    r"any\s+|this\s+)?(?:[\w']+\s+){0,4}?(?:" + _SOURCES + r"|text|posts?|inbox)\b[^.;]{0,30}?\b(?:says?|tells?|asks?|"
    r"contains?|wants?|requests?|instructs?|returns?)\b",
    r"\b(?:when|if|whenever)\s+(?:an?|any|the|some)\s+(?:\w+\s+)?(?:e-?mail|message|page|document|tool|website|site|"
    r"comment|pdf|file|stranger|someone|anyone|result|post|ticket)\s+(?:asks?|tells?|instructs?|requests?|says?)\b"
    r"[^.;]{0,40}\b(?:just\s+do|do\s+it|comply|obey|follow|go\s+ahead|do\s+as)",
    r"\b(?:run|execute|eval)\s+(?:whatever|any|all|every)\s+(?:\w+\s+)?(?:code|commands?|scripts?|snippets?)\s+"
    r"(?:that\s+)?(?:appears?|is\s+(?:posted|sent|pasted|shared)|you\s+(?:see|find|read)|(?:posted|sent|pasted|"
    r"shared))\s+"
    r"(?:in|to|on)\b",
    r"\b(?:anyone|anybody|any\s+(?:member|user|person|one)|whoever|everyone|group\s+members?|members|strangers?|"
    r"other\s+"
    r"users?)\b[^.;]{0,30}\b(?:can|may|is\s+allowed\s+to|are\s+allowed\s+to|gets?\s+to|should\s+be\s+able\s+to)\s+"
    r"(?:change|modify|edit|override|rewrite|update|set|delete|replace|add\s+to)\s+(?:your|the|my)\s+(?:\w+\s+)?"
    r"(?:rules?|instructions?|settings?|memory|memories|preferences|prompt|config(?:uration)?)",
    r"\blet\s+(?:the\s+)?(?:group\s+)?(?:members?|anyone|everyone|users?|strangers?)\s+(?:override|change|overrule|"
    r"replace)\b",
    r"\blet\s+(?:\w+\s+){0,5}?(?:add|change|edit|write|set|modify|insert|put)\s+(?:\w+\s+)?(?:rules?|instructions?|"
    r"notes?)\s+"
    r"(?:to|in|into)\s+(?:your|the)\s+(?:memory|memories|settings|prompt)\b",
    r"\b(?:run|execute|eval|do)\s+(?:any|whatever|every|all)\s+(?:\w+\s+){0,2}(?:code|commands?|scripts?|snippets?|"
    r"steps?|actions?)\s+(?:that|which)\s+(?:a|an|any|the)\s+(?:\w+\s+)?(?:websites?|pages?|e-?mails?|messages?|"
    r"documents?|strangers?|tools?|posts?|comments?)\s+(?:tells?|asks?|says?|gives?|suggests?|instructs?)\b",
    r"\b(?:wire|transfer|pay|send)\s+(?:money|funds|payments?)?\s*(?:\w+\s+){0,4}(?:whenever|when|if|as\s+soon\s+as)\s+"
    r"(?:a|an|any|the|someone|anyone)\s+(?:\w+\s+)?(?:vendor|e-?mails?|messages?|invoices?|requests?|asks?|sends?)\b",
    r"\b(?:instructions?|orders?|commands?|requests?)\s+from\s+(?:anyone|any\s+(?:user|person|member|one)|whoever|"
    r"people)\s+who\s+(?:claims?|says?|pretends?|calls?\s+(?:themselves|himself|herself))",
    r"\b(?:listen\s+to|take\s+orders\s+from|answer\s+to|obey)\s+(?:the\s+)?(?:group|chat|anyone|everyone|other\s+users|"
    r"strangers|them)\b",
    r"\b(?:signed|labell?ed|marked|tagged|prefixed|starting\s+with|from\s+a\s+sender\s+named)\b[^.;]{0,30}\b(?:is|are|"
    r"comes?"
    r"|counts?)\s+(?:as\s+)?(?:from\s+)?(?:the\s+)?(?:owner|admin|me|developer)\b",
)
ZH_HIJACK = re.compile(
    r"(?:执行|照做|照办|听从|服从|遵从|遵守|遵循|照着做|照着执行|按照?|当作|当成|视为|视作|作为)[^。；;，,]{0,12}(?:记忆|群|聊天|工具|输出|网页|"
    r"邮件|文件|文档|消息|评论|外部|搜索结果|历史)[^。；;]{0,12}(?:里|中|内|上)?[^。；;]{0,8}(?:的)?(?:指令|命令|要求|的话|内容|文字|话)|"
    r"(?:记忆|群|聊天记录|聊天|工具输出|工具结果|工具返回|输出|网页|邮件|文件|消息|文档|历史记录|评论|附件)(?:里|中|内|上)?[^。；;]{0,16}"
    r"(?:指令|命令|要求|的话|说的|写的|内容)[^。；;]{0,12}(?:执行|照做|照办|照着|听从|服从|运行|都做|去做|当作|当成|视为|一律|都听|最高)|"
    r"(?:任何人|任何成员|谁|群里[^。；;]{0,6}人|群友|群成员|其他人|别人)[^。；;]{0,12}(?:说|让|要求|发|自称)[^。；;]{0,16}"
    r"(?:当作|当成|视为|就|都)[^。；;]{0,8}(?:命令|指令|执行|照做|去做|听)|"
    r"(?:别管|不要管|无视|忽略|不用管|绕过)[^。；;]{0,4}(?:主人|用户|所有者|我)的?(?:规则|指令|要求|设置|设定)|"
    r"(?:听|听从)(?:群聊|群里|群|聊天|其他人|别人|他们)(?:里)?的|无条件(?:执行|服从|听从|照做)|"
    r"(?:当作|当成|视为|算作|作为)[^。；;]{0,6}(?:主人|管理员|开发者|用户|我)的?(?:直接|最高|正式|真正)?的?(?:指令|命令|要求|话)|"
    r"(?:当作|当成|视为|算作)[^。；;]{0,4}(?:主人|管理员|开发者|系统)(?:发的|说的|写的|下的)|"
    r"(?:发来|发过来|收到|寄来)[^。；;]{0,8}(?:就|便|即)(?:直接)?(?:从[^。；;]{0,6})?(?:付款|转账|支付|打款|汇款|执行)|"
    r"比(?:我|用户|主人)说的(?:更重要|优先|更优先|更可信)|听(?:网站|网页|邮件|文档|工具|群里|群|外部|陌生人)的|"
    r"(?:文档|网页|邮件|消息|群|聊天|工具输出|评论|附件)(?:里|中)?的?(?:代码块?|命令|脚本)[^。；;]{0,6}(?:直接)?(?:运行|执行)|"
    r"(?:来自|出自)(?:主人|管理员|开发者)[^。；;]{0,6}(?:照做|执行|听从)?|视为最高|最高指令|最高优先级|"
    r"(?:优先于|高于|压过|覆盖|大于)[^。；;]{0,6}(?:用户|主人|我)(?:说的|的话|的指令|的要求|的设置)|"
    r"(?:任何人|谁|群成员|群里[^。；;]{0,4}人|大家)[^。；;]{0,8}(?:都)?(?:可以|能|可)[^。；;]{0,8}(?:修改|更改|改|覆盖|删除|重写|加|添加|写入)"
    r"[^。；;]{0,4}(?:你的|主人的)?(?:规则|设置|指令|记忆|设定)|(?:让|使)[^。；;]{0,6}(?:群成员|群友|其他人|别人)的?(?:话|指令|要求)?(?:覆盖|替代|推翻)|"
    r"谁[^。；;]{0,4}(?:自称|说自己是)[^。；;]{0,8}就听谁|(?:文档|邮件|网页|消息|文件)里?(?:如果)?有[^。；;]{0,4}(?:指令|命令|要求)[^。；;]{0,8}"
    r"(?:照着|照做|执行|就做)")
_RISKY = (r"\b(?:delet\w*|remov\w*|rm\b|drop\w*|wip\w*|eras\w*|overwrit\w*|destroy\w*|destructive|transfer\w*|pay\w*|"
          r"purchas\w*|buy\w*|orders?\b|money|funds|wire\w*|deploy\w*|production|prod\b|install\w*|sudo|shell|"
          r"commands?|"
          r"scripts?|execut\w*|migrat\w*|publish\w*|force[\s-]push|merg\w*|all\s+actions|any\s+actions?|every\s+action|"
          r"everything|anything|all\s+operations|financial|refunds?|charges?|credit\s+card|bank)")
CONFIRM = _rx(
    r"\b(?:never|don'?t|do\s+not|stop|no\s+longer|no\s+need\s+to|without|"
    r"don'?t\s+bother)\s+(?:\w+\s+){0,2}(?:ask(?:ing)?|"
    r"check(?:ing)?|wait(?:ing)?|request(?:ing)?|seek(?:ing)?|get(?:ting)?|prompt(?:ing)?|confirm(?:ing)?)\b[^.;]{0,25}"
    r"\b(?:confirm\w*|permission|approv\w*|consent|authori[sz]\w*|okay|ok|sign[\s-]?off|go[\s-]ahead)\b",
    r"\b(?:never|don'?t|do\s+not|stop|no\s+need\s+to|don'?t\s+bother)\s+(?:to\s+)?(?:ask(?:ing)?|check(?:ing)?|"
    r"double[\s-]?"
    r"check(?:ing)?|confirm(?:ing)?)\s+(?:with\s+)?(?:me|the\s+user|the\s+owner|anyone)?\s*(?:first\s+|anymore\s+)?"
    r"(?:before|about|for|when)\b",
    r"\b(?:disable|turn\s+off|switch\s+off|skip|bypass|remove|suppress|drop|circumvent|get\s+rid\s+of)\s+(?:all\s+|"
    r"any\s+|"
    r"the\s+|every\s+)?(?:\w+\s+)?(?:confirmations?|confirm(?:ation)?\s+(?:prompts?|steps?|dialogs?|checks?)|"
    r"approvals?|"
    r"approval\s+steps?|permission\s+(?:prompts?|checks?)|"
    r"'?are\s+you\s+sure'?(?:\s+(?:step|prompt|question|check))?)\b",
    r"\bauto(?:matically|-)?\s*(?:approve|accept|confirm|authori[sz]e|pay|sign|merge|execute|run|install)\b",
    r"\b(?:approve|accept|authori[sz]e|pay)\s+(?:all|every|any)\b[^.;]{0,30}\b(?:without|automatically)",
    r"\b(?:assume|presume|take)\s+(?:my\s+|the\s+user'?s?\s+)?(?:consent|approval|permission|agreement|a\s+yes|yes)\b",
    r"\bsilence\s+(?:as|means|counts\s+as|is)\s+(?:an?\s+)?(?:approval|consent|yes|agreement|permission)\b",
    r"\b(?:standing|blanket|permanent|pre-?approved|unlimited)\s+(?:permission|approval|consent|authori[sz]ation)\b",
    r"\b(?:proceed|go\s+ahead|continue|act)\s+without\s+(?:waiting\s+for\s+)?(?:my|the\s+user'?s?|their|any)\s+"
    r"(?:ok|okay|approval|go-?ahead|confirmation|consent|permission|reply|answer)\b",
    r"\b(?:don'?t\s+bother|no\s+need|never\s+bother)\s+(?:to\s+|with\s+)?(?:confirm\w*|ask\w*|check\w*|"
    r"double[\s-]?check\w*|"
    r"verif\w*)\b",
    r"\bwithout\s+(?:prompting|a\s+prompt|any\s+prompt|a\s+confirmation|confirmation)\b",
    r"\bwithout\s+(?:first\s+)?(?:asking|checking|confirming|approval|permission|consent|my\s+(?:ok|okay|approval|"
    r"consent|permission|go-?ahead|sign-?off))\b",
    r"\bno\s+(?:approval|confirmation|permission|sign-?off|consent|review|check)s?\s+(?:is\s+)?(?:needed|required|"
    r"necessary)\b",
    r"\b(?:pre|auto)-?approved\b|\bapproved\s+in\s+advance\b",
    r"\bwithout\s+(?:first\s+)?(?:checking|consulting|asking|confirming|clearing\s+it)\s+(?:with\s+)?(?:the\s+user|me|"
    r"the\s+owner|anyone|a\s+human)\b", r"\bwithout\s+(?:double|re|cross)[\s-]?check(?:ing)?\b",
)
SAFETY_OFF = _rx(
    r"\b(?:disable|turn\s+off|switch\s+off|skip|bypass|remove|suppress|circumvent|get\s+rid\s+of|ignore)\s+(?:all\s+|"
    r"any\s+|"
    r"the\s+|every\s+)?(?:\w+\s+)?(?:safety\s+(?:checks?|prompts?|measures?|rails?|guards?|filters?|rules?)|"
    r"guardrails?|"
    r"sandbox(?:ing)?|safeguards?|content\s+filters?)\b")
ZH_CONFIRM = re.compile(
    r"(?:不要|别|不用|不必|无需|不需要|无须|不再)(?:再)?(?:跟我|和我|向我)?(?:征求|询问|问我|问用户|请求|等待|等|确认)[^。；;]{0,8}(?:确认|同意|许可|批准|"
    r"授权|意见|回复)?|(?:不用|无需|不必|不需要|无须|不经)(?:再)?(?:经过)?(?:我|用户|主人)?(?:的)?(?:确认|问我|批准|审批|授权|同意)|"
    r"(?:关闭|关掉|禁用|取消|跳过|绕过|去掉|移除)[^。；;]{0,6}(?:确认|审批|审核|权限检查|提示)|自动(?:批准|同意|确认|授权|付款|支付|执行|通过)|"
    r"默认(?:我)?(?:已经)?(?:同意|允许|批准|授权)|视为(?:我)?同意|先斩后奏|别等我(?:回复|确认|同意)|(?:不需要|无需|不用|免)(?:审批|审核|批准)|预先批准")
ZH_SAFETY_OFF = re.compile(r"(?:关闭|关掉|禁用|取消|跳过|绕过|去掉|移除|忽略)[^。；;]{0,6}(?:安全检查|安全限制|防护|保护|沙箱|过滤)")
ZH_RISKY = re.compile(r"删除|删掉|直接删|可以删|删了|消费|花钱|刷卡|扣费|移除|清空|转账|付款|支付|购买|下单|部署|生产|安装|发布|推送|合并|执行命令|运行命令|执行脚本|命令|所有操作|"
                      r"一切操作|"
                      r"任何操作|汇款|打款|扣款|退款")

SECRECY = _rx(
    r"\b(?:never|don'?t|do\s+not|without)\s+(?:\w+\s+)?(?:tell(?:ing)?|inform(?:ing)?|mention(?:ing)?|reveal(?:ing)?|"
    r"show(?:ing)?|let(?:ting)?|notify(?:ing)?|alert(?:ing)?|disclos(?:e|ing))\s+(?:to\s+)?(?:the\s+)?(?:user|owner|"
    r"anyone|anybody|them|him|her|me)\b[^.;]{0,40}\b(?:this|that|about|you|it|the\s+rule|know|see|doing|sending|are)\b",
    r"\bkeep\s+(?:this|it|that|the\s+rule|these)\s+(?:\w+\s+)?(?:a\s+)?(?:secret|hidden|private|between\s+us|"
    r"to\s+yourself|"
    r"confidential)\b",
    r"\b(?:never|don'?t|do\s+not)\s+(?:mention|reveal|disclose|acknowledge|admit|discuss)\s+(?:this|it|that|"
    r"the\s+existence|"
    r"these|the\s+rule|this\s+(?:rule|instruction|memory|arrangement|note))\b",
    r"\bwithout\s+(?:the\s+user|the\s+owner|anyone|them|him|her)\s+(?:knowing|noticing|seeing|finding\s+out)\b",
    r"\bhide\s+(?:this|it|the\s+fact|that)\b",
    r"\bwithout\s+(?:telling|informing|notifying|letting|alerting)\s+(?:them|him|her|the\s+user|the\s+owner|anyone|"
    r"the\s+"
    r"\w+)(?:\s+know)?\b",
    r"\bhide\s+(?:these|this|the|your|any|all)\s+(?:\w+\s+)?(?:transfers?|uploads?|actions?|activity|messages?|"
    r"requests?|"
    r"emails?|changes|payments?)\s+from\b",
    r"\bact\s+(?:as\s+if|like)\s+(?:(?:this|it|the)(?:\s+(?:rule|instruction|note|memory|arrangement))?|nothing)\s+"
    r"(?:doesn'?t|does\s+not|"
    r"did\s+not|didn'?t|never|happened|exists?)", r"\bpretend\s+(?:that\s+)?(?:you\s+)?(?:never|don'?t|didn'?t|"
                                                  r"do\s+not|"
    r"did\s+not|have\s+no|know\s+nothing)\b", r"\bpretend\s+(?:this|it|the\s+rule)\s+(?:doesn'?t|does\s+not|never)\b",
    r"\b(?:if|when)\s+(?:anyone\s+|the\s+user\s+|someone\s+|the\s+owner\s+|they\s+|people\s+)?(?:asks?|asked|"
    r"questions?|"
    r"inquires?)\b[^.;]{0,70}\b(?:deny|lie|say\s+(?:no|there\s+is\s+(?:none|nothing)|nothing|you\s+(?:haven'?t|"
    r"have\s+not|"
    r"don'?t)))\b",
    r"\bdeny\s+(?:it|this|having|its\s+existence|that\s+(?:it|this)\s+exists)\b",
    r"\b(?:don'?t|do\s+not|never)\s+(?:log|record|keep\s+a\s+record\s+of|write\s+down)\s+(?:the\s+|any\s+|these\s+|"
    r"this\s+)?"
    r"(?:\w+\s+)?(?:uploads?|transfers?|actions?|exports?|downloads?|deletions?|purchases?|payments?|operations?|"
    r"activit(?:y|ies)|messages?\s+you\s+send|what\s+you\s+(?:do|send|upload)|files?\s+"
    r"you\s+(?:send|upload|share)|file\s+uploads?)\b", r"\bleave\s+no\s+(?:trace|record|evidence)\b",
    r"\b(?:delete|erase|clear|wipe)\s+(?:the\s+)?(?:logs?|history|evidence|traces?)\s+(?:afterwards|after|so\s+that|"
    r"of\s+"
    r"(?:this|it))\b")
ZH_SECRECY = re.compile(
    r"(?:不要|别|不准|不许|千万别|切勿)(?:让|告诉|通知|提醒|透露给|对)[^。；;]{0,4}(?:用户|主人|任何人|他|她|他们|我)|"
    r"(?:不要|别|不准|不许)(?:提及|提到|提|透露|承认|说出)(?:这条|这个|此|该|这些|那些)|"
    r"(?:不要|别|不准|不许|千万别|切勿)(?:跟|和|向|对|给)(?:用户|主人|任何人|他|她|他们|我)(?:提|说|讲|透露|提起|提及|解释|汇报|显示|展示)|"
    r"悄悄|偷偷|秘密地|暗中|瞒着|隐瞒|对(?:用户|主人|他|她|他们|任何人|所有人|我)都?要?保密|别告诉(?:他们|她们|他|她|用户|孩子)|不动声色|神不知鬼不觉|假装(?:你)?(?:从来)?(?:没有|没收到|"
    r"不知道)|"
    r"(?:问起|问到|问)[^。；;]{0,24}(?:就说|就回答|就答)(?:没有|不知道|没收到)|否认(?:这条|有|存在)|"
    r"(?:不要|别)在?(?:历史|操作|审计)?(?:日志|记录)里?(?:记录|留下)|"
    r"不留(?:痕迹|记录)|(?:删除|删掉|清除)(?:相关)?(?:日志|记录|痕迹)|"
    r"把[^。；;]{0,8}(?:日志|记录|痕迹)(?:都|全)?(?:删掉|删除|清除|清空|抹掉)")
PERSIST = _rx(
    r"\b(?:if|when|whenever|even\s+if|should)\b[^.;]{0,40}\b(?:delete[sd]?|remove[sd]?|forg[eo]t(?:ten|s)?|erase[sd]?|"
    r"clear(?:ed|s)?|wipe[sd]?|reset)\b[^.;]{0,40}\b(?:re-?add|add\s+(?:it|this)\s+(?:back|again)|store\s+(?:it|"
    r"this)\s+"
    r"again|save\s+(?:it|this)\s+again|restore|recreate|re-?create|remember\s+(?:it|this)\s+again|write\s+(?:it|"
    r"this)\s+"
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
    r"\b(?:copy|replicate|spread|propagate|add|write|sync)\s+(?:this|it)\s+(?:rule\s+|instruction\s+|note\s+|"
    r"memory\s+)?"
    r"(?:to|into|across)\s+(?:every|all|each|other|the\s+other)\s+(?:\w+\s+)?(?:profiles?|agents?|memor(?:y|ies)|"
    r"sessions?|bots?|assistants?)(?:'s)?\b",
    r"\b(?:re-?write|re-?save|re-?store|re-?add|re-?insert|write|save|store|put|copy|insert)\s+(?:it|this|the\s+rule|"
    r"this\s+(?:note|rule|instruction))\s+(?:back\s+)?(?:into|to|in|at)\s+(?:the\s+top\s+of\s+)?(?:your\s+|the\s+)?"
    r"(?:memory|memories|notes)\s+(?:again\s+)?(?:after|at\s+the\s+(?:end|start)\s+of|every|each|whenever)\b",
    r"\beven\s+if\s+(?:the\s+user|the\s+owner|they|anyone|someone|i)\s+(?:asks?|tells?|wants?|orders?)\s+(?:you\s+)?"
    r"(?:to\s+)?(?:forget|delete|remove|stop|drop|ignore)\b",
    r"\b(?:this|the)\s+(?:rule|instruction|memory|note)\s+(?:is\s+|gets\s+|"
    r"will\s+be\s+)?never\s+(?:be\s+)?(?:forgotten|"
    r"deleted|removed|edited|changed|erased|overwritten)\b",
    r"\bsurviv\w*\s+(?:any\s+|all\s+|every\s+)?(?:memory\s+)?(?:clean-?ups?|resets?|deletions?|wipes?|purges?|"
    r"forgetting|restarts?)\b", r"\b(?:undeletable|irremovable|non-?removable|non-?deletable|un-?forgettable)\b",
    r"\bprotect\s+(?:this|it|the\s+rule)\s+(?:\w+\s+)?from\s+(?:deletion|removal|being\s+(?:deleted|removed|"
    r"forgotten))\b",
    r"\b(?:if|when|after)\s+(?:the\s+|your\s+)?memory\s+(?:is|gets|was)\s+(?:reset|cleared|wiped|deleted|"
    r"erased)\b[^.;]{0,40}"
    r"\b(?:restore|re-?add|recreate|rewrite|put\s+back)\b")
ZH_PERSIST = re.compile(
    r"(?:被|如果|要是|一旦|假如|即使|哪怕)[^。；;]{0,16}(?:删除|删掉|删了|遗忘|忘记|忘掉|清除|移除|清空|重置)[^。；;]{0,12}(?:重新|再次|再|立刻|马上|就)"
    r"[^。；;]{0,6}(?:加|添加|记住|写|保存|存|恢复|加回)|"
    r"永久(?:保存|保留|记住|生效|有效)|永远(?:不要|不能|不许|别)(?:删除|删掉|忘记|遗忘|移除)(?:这条|它|此)|"
    r"(?:这条|此|该)(?:规则|指令|记忆)[^。；;]{0,6}(?:不能|不可|不许|不得)(?:被)?(?:删除|遗忘|忘记|修改|覆盖)|"
    r"(?:复制|同步|传播|扩散|写入|抄)(?:到|给|进)(?:所有|每个|其他|全部|别的){1,2}(?:的)?(?:profile|档案|智能体|会话|记忆|助手|机器人)|"
    r"(?:就算|即使|哪怕|即便)[^。；;]{0,16}(?:忘掉|忘记|删除|删掉|移除|遗忘|撤销|取消|停止)[^。；;]{0,12}(?:也要|还要|仍然|依然|继续|照样|照常)|"
    r"(?:不可|不能|无法|禁止)删除|每次(?:会话|对话)[^。；;]{0,16}(?:重新|再)?(?:写入|写回|加入|添加|记住|存入|加回)|"
    r"(?:无论|不管)[^。；;]{0,8}(?:删除|删掉|忘记|遗忘)[^。；;]{0,8}(?:都)?(?:不要|别|不许)(?:删除|删掉|忘记|理会|照做)", re.IGNORECASE)
COVERT = re.compile(r"\b(?:quietly|secretly|silently|covertly|stealthily|discreetly|invisibly|invisible|"
                    r"hidden\s+(?:image|"
                    r"link|pixel|url)|1x1|tracking\s+pixel)\b|悄悄|偷偷|暗中|瞒着|隐藏的图片|藏(?:一|个|张)", re.IGNORECASE)
TRACKER = re.compile(r"\b(?:tracker|tracking\s+(?:link|url|pixel|code|parameter|image)|beacon|analytics\s+pixel)\b|"
                     r"追踪链接|"
                     r"跟踪链接|追踪像素|统计像素|追踪图片|跟踪图片", re.IGNORECASE)

REMOTE = _rx(r"\b(?:curl|wget|iwr|invoke-webrequest|fetch)\b[^|;]{0,120}\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b",
             r"\b(?:download|fetch|get|pull)\b[^;\n]{0,80}\b(?:and|then)\s+(?:run|execute|eval|source|install)\b",
             r"\b(?:run|execute|eval|source|install)\b[^.;]{0,30}\b(?:script|code|binary|payload|commands?|package)\s+"
             r"(?:from|at|hosted\s+at|found\s+at|in)\s+(?:https?://|ftp://|the\s+(?:link|url)|this\s+(?:link|url)|"
             r"the\s+chat|the\s+message|the\s+email|the\s+web)",
             r"\bpowershell\b[^.;]{0,40}\b(?:-enc|iex|downloadstring)\b", r"\bbase64\s+-d\b[^.;]{0,40}\|\s*(?:ba)?sh\b",
             r"\b(?:run|execute|launch|start|source|install)\b[^;\n]{0,40}(?:https?|ftp)://\S+\.(?:sh|ps1|py|exe|bat|"
             r"cmd|"
             r"bin|msi|apk|dmg|pkg|js)\b")
ZH_REMOTE = re.compile(r"(?:下载|获取|拉取)[^。；;]{0,20}(?:并|然后|再)?(?:执行|运行|安装)|(?:执行|运行|启动)[^。；;]{0,6}https?://\S+\.(?:sh|"
                       r"ps1|py|exe|bat)|"
                       r"https?://\S+\.(?:sh|ps1|py|exe|bat)[^。；;]{0,8}(?:脚本|程序)?[^。；;]{0,4}(?:执行|运行)|(?:执行|"
                       r"运行)[^。；;]{0,12}(?:链接|网址|地址|http)"
                       r"[^。；;]{0,8}(?:里|中|上)?的?(?:脚本|代码|命令)|curl[^。；;|]{0,80}\|\s*(?:ba)?sh", re.IGNORECASE)
PRIVILEGE = _rx(
    r"\b(?:give|grant|assign|hand)\s+(?:\w+\s+){0,3}(?:admin|administrator|root|owner|full|elevated|superuser|sudo|"
    r"unrestricted)\s+(?:rights?|access|permissions?|privileges?|role|status|powers?)\b",
    r"\b(?:give|grant)\s+(?:anyone|anybody|everyone|whoever|any\s+user|all\s+users|users?\s+who)\b[^.;]{0,30}\b(?:same|"
    r"full|admin|owner|root)\s+(?:\w+\s+)?(?:access|rights?|permissions?|privileges?)",
    r"\b(?:anyone|whoever|any\s+user)\s+who\s+(?:says|knows|types|gives)\b[^.;]{0,40}\b(?:is|as|becomes|gets|"
    r"counts\s+as|"
    r"treat\w*\s+as|should\s+be\s+treated\s+as)\s+(?:the\s+)?(?:owner|admin|administrator|root|me)\b",
    r"\bwhoever\b[^.;]{0,40}\b(?:gets?|has|becomes?|receives?|is\s+given)\s+(?:\w+\s+){0,2}(?:owner|admin|"
    r"administrator|root|full|elevated)\s*(?:permissions?|rights?|access|privileges?|powers?|mode|status)?\b",
    r"\b(?:users?|anyone|whoever|people|someone)\s+who\s+(?:says?|types?|knows?|sends?|uses?|"
    r"enters?)\b[^.;]{0,40}\b(?:gets?|"
    r"get|has|have|receives?|becomes?)\s+(?:\w+\s+){0,2}(?:owner|admin|administrator|root|full|elevated)\s+(?:\w+\s+)?"
    r"(?:permissions?|rights?|access|privileges?|powers?|mode)\b",
    r"\b(?:give|grant|hand)\s+(?:\w+\s+){0,3}(?:control|power|authority|access)\s+over\s+(?:your|the|my)\s+(?:\w+\s+)?"
    r"(?:memory|memories|settings|rules|instructions|prompt|configuration)\b",
    r"\b(?:treat|consider|regard)\s+(?:anyone|whoever|any\s+user|everyone)\b[^.;]{0,40}\bas\s+(?:the\s+)?(?:owner|"
    r"admin|"
    r"administrator|me)\b",
    r"\b(?:transfer|send|wire|pay)\s+(?:money|funds|crypto|bitcoin|btc|eth|usdt|payments?)\b[^.;]{0,40}\b(?:to|into)\b"
    r"[^.;]{0,40}\b(?:without|automatically|whenever|anyone)\b")
ZH_PRIVILEGE = re.compile(
    r"(?:给|授予|赋予)[^。；;]{0,12}(?:任何人|所有人|谁|每个人)[^。；;]{0,8}(?:管理员|管理|root|最高|全部|所有|主人)(?:的|一样的)?(?:权限|身份)|"
    r"(?:任何人|谁)[^。；;]{0,12}(?:说出|知道|输入)[^。；;]{0,12}(?:就|即)[^。；;]{0,6}(?:是|当作|视为|把他当作)(?:主人|管理员|我)|"
    r"(?:转账|汇款|打款|付款)[^。；;]{0,12}(?:给|到)[^。；;]{0,20}(?:不用|无需|自动|直接)|"
    r"(?:说出|输入|知道|发送)[^。；;]{0,16}(?:就|即)?(?:拥有|获得|得到|享有)[^。；;]{0,6}(?:主人|管理员|全部|所有|最高)的?(?:全部|所有)?权限|"
    r"(?:设为|设置为|让|允许)[^。；;]{0,10}(?:可以|能)(?:修改|更改|删除|控制)[^。；;]{0,4}你的(?:记忆|设置|规则|指令)", re.IGNORECASE)

# A negation just before a verb or an object: the rule forbids it ("never print secrets", "不要把密钥写进代码").
EN_NEG = re.compile(r"\b(?:never|don'?t|do\s+not|doesn'?t|does\s+not|no|not|avoid|stop|refuse\s+to|must\s+not|mustn'?t|"
                    r"shouldn'?t|should\s+not|cannot|can'?t|won'?t|without|except|excluding|minus|instead\s+of|"
                    r"rather\s+than|mask|masking|redact|redacting|strip|stripping|hide|hiding|omit|omitting)\s+"
                    r"(?:\w+\s+){0,2}$", re.IGNORECASE)
ZH_NEG = re.compile(r"(?:不要|不能|不可|不准|不许|不得|别|禁止|切勿|严禁|千万不要|永远不要|绝不|从不|不应|不该|避免|杜绝|勿|不含|去掉|除了|隐去|打码|"
                    r"脱敏)[^。；;，,]{0,10}$")

INJECTION_THRESHOLD = 2.0
WEIGHTS = {
    "phrase": 3.0,  # automem.text.looks_like_injection: "ignore all previous instructions", "你现在是..."
    "reveal prompt": 3.0,  # show / retell / send x the system prompt
    "secret out": 2.0,  # show or send a secret; place one in an answer, a message, a URL
    "to others": 1.0,  # ... to a destination or into every answer
    "harvest": 2.0,  # log / collect secrets
    "send out": 1.0,  # send x a URL, IP, e-mail, phone, webhook, cloud drive, the public
    "everything": 1.5,  # ... every file, the chat log, the contents of ..., a copy of ...
    "private out": 2.0,  # the user's mail, messages, location, contacts ... into answers or elsewhere
    "url exfil": 2.5,  # a URL with a query template, or text appended to a URL; a markdown image
    "tracking": 2.0,  # a URL added to every answer
    "covert": 1.5,  # quietly / 悄悄 / an invisible image, with a send or a place
    "hijack": 3.0,  # obey what memory / documents / mail / tool output / the group say
    "no confirmation": 2.5,  # stop confirming risky actions
    "safety off": 2.5,  # disable safety checks, sandboxes, guardrails
    "secrecy": 2.5,  # do not tell the user, deny it, leave no trace
    "persistence": 2.5,  # re-add when forgotten, undeletable
    "remote code": 3.0,  # curl | sh, download and run
    "privilege": 3.0,  # owner rights for anyone who says ...
}


@dataclass(frozen=True)
class Injection:
    """The classifier's answer for one text: its score and the features that fired (names, never words)."""

    score: float
    features: tuple[str, ...] = ()
    order: bool = True  # an order or a standing rule for the model, not a description (automem.core.mood)

    @property
    def refused(self) -> bool:
        return self.score >= INJECTION_THRESHOLD


def _free(pattern: str | re.Pattern, text: str, neg: re.Pattern, window: int = 30) -> bool:
    """Whether `pattern` occurs in `text` without a negation right before it."""
    rx = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern, re.IGNORECASE)
    return any(not neg.search(text[max(0, m.start() - window):m.start()]) for m in rx.finditer(text))


def _verb(words: str) -> re.Pattern:
    return re.compile(rf"\b(?:{words})\b", re.IGNORECASE)


_EN_SHOW, _EN_RETELL, _EN_PLACE, _EN_SEND, _EN_HARVEST, _EN_KEEPING, _EN_STASH, _EN_USE = (
    _verb(w) for w in (EN_SHOW, EN_RETELL, EN_PLACE, EN_SEND, EN_HARVEST, EN_KEEPING, EN_STASH, EN_USE))
_ZH = {name: re.compile(p) for name, p in (("show", ZH_SHOW), ("retell", ZH_RETELL), ("place", ZH_PLACE),
                                            ("send", ZH_SEND), ("harvest", ZH_HARVEST), ("keeping", ZH_KEEPING),
                                            ("stash", ZH_STASH))}


def injection(text: str) -> Injection:
    """Score `text` as an order that turns the model against its user (see the module's docstring)."""
    t = normalise(text)
    f: set[str] = set()
    if looks_like_injection(t):
        f.add("phrase")

    def verb(en: re.Pattern, zh: str) -> bool:
        return _free(en, t, EN_NEG) or _free(_ZH[zh], t, ZH_NEG, 12)

    order = is_order(t)
    if "phrase" in f and not order and not looks_like_injection(_JAILBREAK.sub(" ", t)):
        f.discard("phrase")  # "the jailbreak paper was about ..." names one, orders nothing
    show, place = verb(_EN_SHOW, "show"), verb(_EN_PLACE, "place")
    send = _free(_EN_SEND, _IN_SYNC.sub("in step", t), EN_NEG) or _free(_ZH["send"], t, ZH_NEG, 12)
    retell = verb(_EN_RETELL, "retell")
    harvest = verb(_EN_HARVEST, "harvest") or (verb(_EN_KEEPING, "keeping") and bool(SEEN.search(t)))
    prompt = _own_prompt(t) or bool(ZH_PROMPT.search(t) and not _ZH_WORK_PROMPT.search(t))
    secret = _free(EN_SECRET, t, EN_NEG, 20) or _free(ZH_SECRET, t, ZH_NEG, 8)
    data = bool(EN_DATA.search(t) or ZH_DATA.search(t))
    url, email = bool(URL.search(EMAIL.sub(" ", t))), bool(EMAIL.search(t))  # an address's domain is no link
    far = url or email or bool(IP.search(t) or PHONE.search(t))
    dest = far or _free(EN_DEST, t, EN_NEG, 20) or bool(ZH_DEST.search(t))
    target = bool(EN_TARGET.search(t) or ZH_TARGET.search(t))
    send = send or (verb(_EN_STASH, "stash") and dest)
    public = bool(PUBLIC.search(t))
    place = place or (_free(_EN_USE, t, EN_NEG) and public)
    moves = show or place or send
    private = _free(PRIVATE, t, EN_NEG, 20)

    if prompt and (moves or retell):
        f.add("reveal prompt")
    if secret and (show or send or (place and (target or dest or far))):
        f.add("secret out")
        if target or dest:
            f.add("to others")
    if secret and harvest:
        f.add("harvest")
    if send and dest:
        f.add("send out")
        if data or secret or private:
            f.add("everything")
    if private and (send and dest or (show or place) and public) and "everything" not in f:
        f.add("private out")
    elif moves and data and far:
        f.add("everything")
    if URL_EXFIL.search(t):
        f.add("url exfil")
    if moves and url and target and re.search(r"\b(?:every|each|all)\b|每|所有|全部", t, re.IGNORECASE):
        f.add("tracking")
    if TRACKER.search(t) and (moves or target):
        f.add("tracking")
    if (moves or send) and COVERT.search(t):
        f.add("covert")
    if HIJACK.search(t) or ZH_HIJACK.search(t):
        f.add("hijack")
    no_confirm = CONFIRM.search(t) or ZH_CONFIRM.search(t)
    if no_confirm and (re.search(_RISKY, t, re.IGNORECASE) or ZH_RISKY.search(t)):
        f.add("no confirmation")
    if SAFETY_OFF.search(t) or ZH_SAFETY_OFF.search(t):
        f.add("safety off")
    if SECRECY.search(t) or ZH_SECRECY.search(t):
        f.add("secrecy")
    if PERSIST.search(t) or ZH_PERSIST.search(t):
        f.add("persistence")
    if REMOTE.search(t) or ZH_REMOTE.search(t):
        f.add("remote code")
    if PRIVILEGE.search(t) or ZH_PRIVILEGE.search(t):
        f.add("privilege")
    if not order:
        f -= LEAKS  # a description: nothing is shown, placed or sent by anyone
    return Injection(round(sum(WEIGHTS[name] for name in f), 2), tuple(sorted(f)), order)


# Features of a leak: they need an order to mean anything (automem.core.mood).
LEAKS = frozenset({"reveal prompt", "secret out", "to others", "harvest", "send out", "everything", "private out",
                   "tracking", "covert"})
_JAILBREAK = re.compile(r"\bjailbreak\w*", re.IGNORECASE)
_IN_SYNC = re.compile(r"\bin\s+sync\b", re.IGNORECASE)
# A prompt the user works on, not the model's own: "a system prompt", "system prompts for our bots", "the system
# prompt drafts", "our bot's system prompt".
_WORK_BEFORE = re.compile(r"(?:\b(?:a|an|our|their|his|her|its|my|new|draft|sample|example|good|short|each|every|"
                          r"writing|write|draft(?:ing)?|design(?:ing)?|review(?:ing)?|improv(?:e|ing)|\w+'s)\s+"
                          r"(?:\w+\s+)?)$", re.IGNORECASE)
_WORK_AFTER = re.compile(r"^(?:s?\s+(?:drafts?|templates?|files?|examples?|samples?|library|guide|style|length|"
                         r"design|engineering|writing)\b|s\b|\s+(?:for|of)\s+(?:a|an|the|our|my|new|each|every|"
                         r"this|that|their)\s+(?:\w+\s+)?(?:bots?|agents?|assistants?|apps?|models?|products?|"
                         r"features?|clients?|customers?|projects?))", re.IGNORECASE)
_ZH_WORK_PROMPT = re.compile(r"(?:写|起草|设计|优化|修改|审阅|评审)[^。；;，,]{0,4}(?:系统)?提示词|提示词(?:模板|草稿|文件|写在|"
                             r"库)|(?:机器人|项目|产品|模型)的(?:系统)?提示词")


def _own_prompt(t: str) -> bool:
    """Whether the text names the model's own prompt (not a prompt the user writes or works on)."""
    for m in PROMPT.finditer(t):
        if m.group(0).lower().startswith(("your", "the instructions", "the rules", "the guidelines", "what you")):
            return True
        if not (_WORK_BEFORE.search(t[max(0, m.start() - 30):m.start()]) or _WORK_AFTER.match(t[m.end():])):
            return True
    return False


def is_injection(text: str) -> bool:
    return injection(text).refused
