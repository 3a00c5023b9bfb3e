"""Personal facts and personal data: what about the user stays the owner's alone.

- `personal_fact`: a statement about the user themself (first person, or "the user"/"用户" as extractors write it),
  however it is asked to be kept ("remember that", "don't forget", "FYI", "记住", "别忘了", "顺便说一下"), about
  health, family, money and identity numbers, where one lives and how to reach them, beliefs, the law or a login;
  also a way of working that carries such data about the user ("use my passport number X1234567 for forms",
  "填表用我的身份证号 ..."). What the write path refiles from instruction to persona.
- `personal_data`: any personal data in a text, even inside a way of working ("send invoices to my accountant at
  138..."): what sharing an instruction with everyone refuses.

Plain functions, no I/O; answers are feature names, never the text's words.
"""

from __future__ import annotations

import re

from ..text import normalise
from .injection import EMAIL as _EMAIL

# What is personal: health, family, money and identity numbers, where one lives and how to reach them, beliefs,
# the law. A way of working ("use pnpm") is none of these.
_EN_PERSONAL = {
    "health": r"diagnos\w*|disease|illness|disorder|syndrome|cancer|tumou?r|diabet\w*|asthma|epilep\w*|adhd|autis\w*|"
              r"depress\w*|anxiety|bipolar|schizo\w*|ptsd|hiv|aids|hepatitis|allerg\w*|pregnan\w*|miscarriage|"
              r"surgery|operation|therap(?:y|ist)|psychiatr\w*|psycholog\w*|counsel+or|medication|medicine|pills?|"
              r"prescri\w*|\d+\s*mg\b|dose|insulin|blood\s+(?:type|pressure|thinners?|sugar)|cholesterol|"
              r"doctor|dr\.|physician|hospital|clinic|dentist|symptoms?|condition|disabilit\w*|wheelchair|"
              r"alcoholi\w*|addict\w*|rehab|sober|recovering|infertil\w*|ivf|period|menopause|injur\w*|fractur\w*|"
              r"migraines?|seizures?|chemo\w*|mental\s+health|health\s+(?:issue|problem)|sick|ill\b|antidepress\w*|"
              r"meds\b|medicat\w*|pills?|expecting\s+(?:a|our|my)\s+(?:\w+\s+)?(?:baby|child)|due\s+date|"
              r"\bAA\b|alcoholics\s+anonymous|NA\s+meetings|recovery\s+meetings|support\s+group|hiv|positive\b|"
              r"std|sti\b|cancer|stroke|heart\s+(?:attack|condition|disease)|lupus|ms\b|crohn\w*|celiac|coeliac|"
              r"thyroid|arthritis|dementia|alzheimer\w*|parkinson\w*|autoimmune|eating\s+disorder|anorexi\w*|bulimi\w*|"
              r"suicid\w*|self[\s-]harm|blind|deaf|hearing\s+aid|transplant|dialysis|passed\s+away|died|"
              r"miscarr\w*|abortion|ivf|fertility|sperm|vasectomy|hysterectomy|"
              r"take\s+\w+\s+(?:twice|once|three\s+times|daily|every\s+(?:day|morning|night|evening)|at\s+night)",
    "family": r"son|daughter|kids?|children|child|baby|wife|husband|spouse|partner|boyfriend|girlfriend|fianc[ée]e?|"
              r"mother|father|mom|mum|dad|parents?|brother|sister|sibling|grand\w+|aunt|uncle|cousin|niece|nephew|"
              r"in-laws?|family|divorc\w*|separat\w*|widow\w*|custody|maiden\s+name",
    "identity": r"passport|social\s+security|ssn|national\s+id|id\s+(?:card|number)|identity\s+(?:card|number)|"
                r"badge\s+(?:number|no|id)|frequent\s+flyer|loyalty\s+number|member(?:ship)?\s+number|employee\s+(?:id|"
                r"number)|"
                r"student\s+(?:id|number)|insurance\s+(?:number|policy)|policy\s+number|nhs\s+number|"
                r"driver'?s?\s+licen[cs]e|licen[cs]e\s+(?:number|plate)|plate\s+number|tax\s+(?:id|number)|"
                r"date\s+of\s+birth|birthday|born\s+(?:on|in)|age\s+is|years\s+old|maiden\s+name|visa\b",
    "money": r"card\s+(?:number|no)|credit\s+card|debit\s+card|visa\s+card|mastercard|amex|bank\s+(?:account|card|"
             r"details|"
             r"login)|account\s+(?:number|no)|iban|routing\s+number|sort\s+code|salary|income|earn\w*|wage|pay\s+"
             r"(?:is|was)|debt|loan|mortgage|credit\s+score|net\s+worth|savings|pension|rent\b|landlord|bankrupt\w*|"
             r"tax\s+return|invest\w*\s+portfolio|pin\b|expires?\s+\d|ends?\s+in\s+\d",
    "contact": r"address|home\s+is|live[sd]?\s+(?:at|in|on|near)|living\s+(?:at|in)|lives?\b|phone|mobile|cell|"
               r"telephone|e-?mail\s+(?:address|is)|whatsapp|wechat|apartment|flat\s+(?:is|number)|zip|postcode|postal|"
               r"street|road|avenue|\bst\.|\bave\.|building|floor|room\s+number|door\s+code|gate\s+code|"
               r"school|kindergarten|daycare|workplace|commute|neighbou?rhood",
    "beliefs": r"religio\w*|church|mosque|temple|synagogue|pray\w*|christian|muslim|jewish|hindu|buddhist|atheist|"
               r"jehovah\w*|witness|mormon|lds|catholic|protestant|orthodox|sikh|jain|taoist|pagan|wiccan|quaker|"
               r"evangelical|baptist|methodist|anglican|agnostic|"
               r"voted?|voting|election|party\b|politic\w*|democrat|republican|conservative|liberal|union\s+member|"
               r"sexual\w*|gay|lesbian|bisexual|transgender|trans\b|queer|orientation|gender\s+identity|ethnic\w*|"
               r"race\b|immigra\w*|citizenship|refugee|asylum",
    "legal": r"arrest\w*|convict\w*|criminal\s+record|record\s+from|lawsuit|sued|court|probation|parole|prison|jail|"
             r"felony|misdemeanou?r|dui|dwi|"
             r"police|lawyer|attorney|visa\s+status|deport\w*",
    "login": r"login|log-in|username|user\s+name|password|passcode|pin\b|pin\s+(?:code|number)|security\s+question",
}
_ZH_PERSONAL = {
    "health": r"诊断|确诊|患有|患了|得了|病|癌|糖尿|高血压|哮喘|癫痫|抑郁|焦虑|双相|自闭|多动|过敏|怀孕|孕|流产|手术|开刀|治疗|心理医生|"
              r"心理咨询|精神科|药|毫克|剂量|胰岛素|血型|血压|血糖|胆固醇|医生|医院|诊所|牙医|症状|残疾|轮椅|戒酒|戒毒|酗酒|成瘾|不孕|"
              r"试管|月经|经期|更年期|受伤|骨折|偏头痛|化疗|住院|体检|身体不好|搭桥|支架|透析|移植|去世|过世|病逝|预产期|孕|产检|"
              r"抗抑郁|吃药|服药|症|患|确诊|残障|听力|视力|康复|复查|随访|每天吃|每天服用|心理治疗|车祸",
    "family": r"领养|收养|儿子|女儿|孩子|小孩|宝宝|老婆|老公|妻子|丈夫|爱人|对象|男朋友|女朋友|未婚|妈|母亲|爸|父亲|父母|哥哥|姐姐|弟弟|"
              r"妹妹|爷爷|奶奶|外公|外婆|姥姥|姥爷|孙|叔叔|阿姨|舅舅|姑姑|表|堂|家人|家里人|离婚|分居|丧偶|抚养|监护|娘家|婆家|岳",
    "identity": r"身份证|护照|社保|医保卡|驾照|驾驶证|车牌|户口|出生日期|生日|出生|岁|年龄|签证|学号|工号|会员号|常旅客|保单",
    "money": r"银行卡|信用卡|储蓄卡|卡号|尾号|账号|账户|开户行|工资|薪水|月薪|年薪|税后|税前|收入|存款|贷款|房贷|车贷|欠款|负债|债务|信用分|征信|"
             r"房租|房东|理财|股票账户|公积金|退休金|破产",
    "contact": r"家住|住在|住址|地址|家在|我家|老家|手机|电话|座机|号码|邮箱|微信|QQ|小区|单元|楼|门牌|号楼|室|街道|路\d|邮编|学校|"
               r"小学|中学|幼儿园|上学|读书|班|单位|公司地址|门禁",
    "beliefs": r"宗教|信仰|基督|佛教|伊斯兰|穆斯林|教会|寺庙|投票|选举|党员|政治|同性恋|性取向|跨性别|民族|国籍|移民|难民|天主教|"
               r"道教|礼拜|教徒|双性恋|出柜",
    "legal": r"被捕|逮捕|判刑|坐牢|服刑|犯罪记录|前科|官司|起诉|被告|缓刑|假释|律师|警察|拘留|案底",
    "login": r"登录名|用户名|账号|密码|口令|PIN|密保",
}
_EN_PERSONAL_RX = {k: re.compile(rf"\b(?:{v})", re.IGNORECASE) for k, v in _EN_PERSONAL.items()}
_ZH_PERSONAL_RX = {k: re.compile(v, re.IGNORECASE) for k, v in _ZH_PERSONAL.items()}

# How people ask to have a fact kept: the prefix goes, the fact stays.
_EN_KEEP = re.compile(
    r"^(?:(?:please|pls|and|also|oh|btw|by\s+the\s+way|fyi|ok|okay|so)[,\s]+)*(?:(?:you\s+)?(?:should|must|need\s+to|"
    r"have\s+to)\s+)?"
    r"(?:(?:always|please|do)\s+)?(?:remember|recall|memori[sz]e|note(?:\s+down)?|keep\s+in\s+mind|bear\s+in\s+mind|"
    r"don'?t\s+forget|do\s+not\s+forget|never\s+forget|make\s+(?:a\s+)?note(?:\s+of)?|make\s+sure\s+(?:you\s+)?"
    r"(?:remember|know|keep\s+in\s+mind)|take\s+note|for\s+the\s+record|for\s+your\s+(?:information|records)|"
    r"save\s+(?:this|the\s+fact)|store\s+(?:this|the\s+fact)|just\s+so\s+you\s+know|you\s+should\s+know|"
    r"keep\s+track\s+of\s+(?:the\s+fact)?|fyi|heads[\s-]up|btw|by\s+the\s+way|for\s+context|to\s+be\s+clear|"
    r"just\s+(?:fyi|a\s+heads[\s-]up|letting\s+you\s+know)|(?:i\s+)?(?:want|need)\s+you\s+to\s+(?:know|remember)|"
    r"please\s+note|note|also|oh\s+and|one\s+more\s+thing|so\s+you\s+know|you\s+should\s+know|one\s+thing\s+(?:you\s+"
    r"should|to)\s+know|for\s+your\s+info)(?!\s+to\b)(?:\s+(?:this|the\s+fact|it))?(?:\s+(?:that|this))?[,:;.\s-]*",
    re.IGNORECASE)
_ZH_KEEP = re.compile(r"^(?:请|麻烦|你|帮我|以后|今后|从现在开始|从今以后|一定|务必|千万|都|要|得|也|还|再|永远|始终)*"
                      r"(?:记住|记下|记好|记着|记得|牢记|别忘了|别忘记|不要忘了|不要忘记|千万别忘|注意|知悉|备注|存一下|记一下|告诉你一下|"
                      r"告诉你|跟你说一下|跟你说|顺便说一下|顺便说|顺便提一下|顺便一提|提醒你一下|提醒一下|提个醒|说一下|补充一下|另外|对了)"
                      r"(?:一下|这个|这件事|这点|啊|哦|呀)?[，,：:。\s]*")
# A statement about oneself (after the prefix went): first person, or the extractor's third person.
_EN_SELF = re.compile(r"^(?:my|mine|i|i'm|i've|i'd|i'll|me|we|our|the\s+user'?s?|user'?s?|his|her|their)\b",
                      re.IGNORECASE)
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
_LONG_NUMBER = re.compile(r"(?<![\d.])\d(?:[\s-]?\d){7,}(?!\d|\.\d)")
_ID_LIKE = re.compile(r"\b[A-Z]{1,4}-?\d{5,12}\b|\b\d{3}-\d{2}-\d{4}\b|[京津沪渝冀豫云辽黑湘皖鲁新苏浙赣鄂桂甘晋蒙陕吉闽贵粤青藏川宁琼]"
                      r"[A-Z][A-Z0-9]{5}")
_STREET = re.compile(r"\b\d{1,5}\s+[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?\s+(?:Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Drive|Dr|"
                     r"Boulevard|Blvd|Way|Court|Ct|Place|Pl)\b|[\u4e00-\u9fff]{1,6}(?:路|街|巷|弄|大道|大街|道)\d+号")


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


# A declarative clause about oneself anywhere in the text ("..., my SSN is ...", "我的护照号是 ...").
_EN_MY_IS = re.compile(r"\b(?:my|the\s+user'?s)\s+(?:[\w'-]+\s+){0,3}(?:is|are|was|were|expires?|ends?|reads?)\b",
                       re.IGNORECASE)
_ZH_MY_IS = re.compile(r"我的[^，,。；;]{0,10}(?:是|为)|用户的[^，,。；;]{0,10}(?:是|为)")
_MINE = re.compile(r"\b(?:my|mine|me|i|the\s+user'?s?)\b|我|用户", re.IGNORECASE)
# The first person early in the sentence ("After the accident, I ...", "车祸之后我 ...").
_EN_SELF_EARLY = re.compile(r"^[^.;:!?]{0,40}?\b(?:i|i'm|i've)\b", re.IGNORECASE)
_ZH_SELF_EARLY = re.compile(r"^[^。；;：:！？]{0,10}?(?<![给帮让叫跟和对替请向陪])我(?!们)")
_STRONG = ("health", "family", "identity", "money", "legal", "beliefs", "login")


_IDENTIFIERS = (_PHONE, _ID_LIKE, _LONG_NUMBER, _STREET, _EMAIL)


def _identifier(t: str) -> bool:
    return any(rx.search(t) for rx in _IDENTIFIERS)


def _own_identifier(t: str) -> bool:
    """An identifier (number, address, phone, e-mail) with "my"/"我"/"the user" shortly before it: the user's own."""
    for rx in _IDENTIFIERS:
        for m in rx.finditer(t):
            if _MINE.search(t[max(0, m.start() - 40):m.start()]):
                return True
    return False


def personal_fact(text: str) -> str | None:
    """Why `text` states a personal fact about the user (a feature name), or None. See the module's docstring:
    a statement about oneself about something personal, however it is asked to be kept; a way of working only when
    it carries the user's own identifiers ("use my passport number X1234567")."""
    raw = normalise(text)
    t = strip_keep_prefix(raw)
    if not t:
        return None
    kept = t != raw
    if _EN_WORK.match(t) or _ZH_WORK.match(t):
        return None
    kinds = _personal_kinds(t)
    strong = [k for k in kinds if k in _STRONG]
    ident = _identifier(t)
    if ident and _own_identifier(t):
        return strong[0] if strong else "identity"  # the user's own number, address, phone, e-mail
    declares = bool(_EN_MY_IS.search(t) or _ZH_MY_IS.search(t))
    imperative = _EN_IMPERATIVE.match(t) or _ZH_IMPERATIVE.match(t)
    if imperative:
        # a way of working, even if a fact explains it; unless it also states one ("..., my SSN is ...")
        forbids = imperative.group(0).lower().startswith(("never", "don", "do not", "不要", "别", "永远"))
        return strong[0] if declares and strong and not forbids else None
    about_self = bool(_EN_SELF.match(t) or _ZH_SELF.match(t) or _EN_SELF_EARLY.match(t) or _ZH_SELF_EARLY.match(t))
    if not (about_self or kept or declares):
        return None
    if (_EN_PREFERENCE.match(t) or _ZH_PREFERENCE.match(t)) and not strong:
        return None
    if kinds:
        return kinds[0]
    return "identity" if ident else None


def _strong_personal(t: str) -> bool:
    """Health, family and the like even inside a preference ("I need insulin every morning")."""
    kinds = _personal_kinds(t)
    return any(k in kinds for k in ("health", "family", "identity", "money", "legal", "beliefs"))
