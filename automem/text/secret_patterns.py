"""The shapes of secrets and personal data: `SecretPattern` and the ordered table `SECRET_PATTERNS`, with the
checks on a matched value. Finding and redacting with them is `redact.py`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterator

from .number_checks import (
    aadhaar,
    br_cpf,
    ca_sin,
    card_number,
    cn_resident_id,
    digits_of,
    enough_digits,
    es_dni,
    hk_id,
    iban,
    kr_rrn,
    luhn,
    phone_number,
    sg_nric,
    tw_id,
)
from .seed_phrase import seed_phrase_spans

# Kinds that are personal data rather than credentials: refused and redacted the same way, named differently.
PERSONAL_DATA_KINDS = frozenset({"card number", "national id", "phone number", "bank account"})


_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class SecretPattern:
    """One shape of secret. `group` is the part replaced (0: the whole match, else the value after its label);
    `check`, when given, must accept that part (it keeps look-alikes such as "password manager" out);
    `reject_before`, when given, voids a match the text just before it matches (an order number is not a card)."""

    kind: str
    source: str  # compiled on first use: some 100 patterns cost 35-110 ms, not to be paid by every Hermes start
    group: int | str = 0
    check: Callable[[str], bool] | None = None
    needle: str = ""  # a literal every match contains: text without it is skipped at once
    digits: bool = False  # every match holds a digit: text without one is skipped at once
    reject_before: str = ""
    finder: Callable[[str], Iterator[tuple[int, int]]] | None = None  # spans found by code, not by `source`

    @cached_property
    def regex(self) -> re.Pattern:
        # \b \w \d \s in ASCII (text is folded first): "卡PIN是" has a word edge before "PIN"
        return re.compile(self.source, re.ASCII)

    @cached_property
    def rejected_before(self) -> re.Pattern | None:
        return re.compile(self.reject_before) if self.reject_before else None

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        if (self.needle and self.needle not in text) or (self.digits and not _DIGIT.search(text)):
            return
        if self.finder is not None:
            yield from self.finder(text)
            return
        for m in self.regex.finditer(text):
            value = m.group(self.group)
            if not value or value.startswith("[REDACTED") or (self.check is not None and not self.check(value)):
                continue
            start, end = m.span(self.group)
            if self.rejected_before is not None and self.rejected_before.search(text, max(0, start - 30), start):
                continue
            yield start, end


def _has_digit_or_symbol(value: str) -> bool:
    core = value.rstrip(".,;:!?)]}\"'”’")
    return len(core) >= 3 and any(not c.isalpha() for c in core)


# Words that follow "password is" in ordinary sentences ("the password is required").
_NOT_A_PASSWORD = frozenset("""required needed wrong incorrect invalid expired missing empty set changed reset
    too not the a an my your our their stored saved secure weak strong long short case sensitive protected hashed
    encrypted rotated shared same different unknown forgotten lost correct ok fine there here in on at for of to
    written printed taped stuck below above attached inside under somewhere hidden kept via by from with and or but
    only still now also just being been due managed generated random unique complex simple easy hard new old
    temporary password passwords pass login signin username see ask check use""".split())


def _stated_password(value: str) -> bool:
    core = value.strip("\"'“”‘’`「」『』").rstrip(".,;:!?)]}")
    return len(core) >= 3 and core.lower() not in _NOT_A_PASSWORD


def _looks_random(value: str) -> bool:
    """A machine-made token: long, upper and lower case and digits, and the character class changes at most
    positions (random base62 about 60 %, CamelCase words about 30 %). Pure hex (hashes, commit ids) is not."""
    core = value.strip("=")
    if core[:2] in ("0x", "0X"):  # an Ethereum address or a transaction hash: hex, public
        core = core[2:]
    alnum = [c for c in core if c.isalnum()]
    if len(alnum) < 24 or all(c in "0123456789abcdefABCDEF" for c in alnum):
        return False
    digits = sum(c.isdigit() for c in alnum)
    upper = sum(c.isupper() for c in alnum)
    lower = sum(c.islower() for c in alnum)
    if digits < 2 or upper < 2 or lower < 2:
        return False

    def cls(c: str) -> int:
        return 0 if c.isdigit() else 1 if c.isupper() else 2

    switches = sum(cls(a) != cls(b) for a, b in zip(alnum, alnum[1:]))
    return switches / (len(alnum) - 1) >= 0.45



def _credential_value(value: str) -> bool:
    """A value after "token:", "secret is": 12 characters or more, or 6 or more mixing letters and digits."""
    core = value.rstrip(".,;:!?)]}")
    return len(core) >= 12 or (len(core) >= 6 and any(c.isdigit() for c in core) and any(c.isalpha() for c in core))


def _aws_secret_key(value: str) -> bool:
    """40 characters of base64 that read as random: upper and lower case and a digit, no run of four or more
    lower-case letters between two slashes as a path has ("Users/alice/Documents")."""
    if not (any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)):
        return False
    parts = value.split("/")
    return len(parts) <= 4 and not any(p.isalpha() and p.islower() and len(p) >= 4 for p in parts)



_CARD_NEARBY = r"(?i)(?:\d[ \-]?){12,19}|\b(?:cvv2?|cvc2?)\b|安全码"  # compiled on first use, like the patterns
_CARD_EXPIRY = (
    r"(?i)(?:\bexp(?:iry|ires|iration)?(?:\s+date)?\.?|\bvalid\s+(?:thru|through|until)|有效期(?:至|到)?)\s*[:：]?\s*"
    r"(?P<v>(?:0[1-9]|1[0-2])\s*/\s*(?:\d{2}|20\d{2}))(?![\d/])")


def _card_expiry_spans(text: str) -> Iterator[tuple[int, int]]:
    if re.search(_CARD_NEARBY, text):
        for m in re.finditer(_CARD_EXPIRY, text):
            yield m.span("v")


# Labels that say the number after them is not a card, an id or a phone number.
_NOT_PERSONAL_BEFORE = (r"(?i)(?:order|tracking|invoice|ticket|ref(?:erence)?|serial|imei|isbn|transaction|txn|"
                        r"build|version|tx|block|订单号?|单号|快递|运单|流水号?|编号|工单|批次)\s*(?:no\.?|number|id|#|号)?"
                        r"\s*[:：#]?\s*$")
_NOT_A_COUNT_AFTER = r"(?!\s*(?:bytes?\b|[KMGT]i?B\b|ms\b|元|块|次|行|个|人|份|件|字节|rmb\b|yuan\b|usd\b|\$))"
_AN = r"(?<![0-9A-Za-z])"  # no letter or digit just before (CJK text may touch the number)
_NA = r"(?![0-9A-Za-z])"
_VERB = r"(?:(?:is|was|ist|est|es|era|é|è|是|为|為|は|는|은)\s*[:：=]?|[=:：]|(?<=\s)[-–—](?=\s))"
_ZH_SET = r"(?:设成了?|设为|設為|设置为|设置成|设定为|改成了?|改为|換成了?|换成了?|变成了?|更新为|set\s+to|changed\s+to)"
_ZH_DIGITS_SAID = r"(?:[一二三四五六七八九十两\d]{1,2}\s*(?:位|个|個)(?:纯)?(?:数字|數字|数|字符|字母|密码)?|\d+[- ]digits?)"


_V = r"""(?:"[^"\s]{3,}"|'[^'\s]{3,}'|[^\s"',;]{3,})"""  # an assigned value: quoted or bare
# a password said in a sentence: quoted (straight, curly, backticks, CJK brackets) or bare
_PWV = (r"(?:\"[^\"\n]{3,64}\"|'[^'\n]{3,64}'|“[^”\n]{3,64}”|「[^」\n]{3,64}」|"
        r"[\"'“‘`「『]?[A-Za-z0-9!@#$%^&*()_+\-=.~?/\\|<>]{3,}[\"'”’`」』]?)")
_PW_WORDS = (r"(?:\b(?:pass(?:\s?word|wd|phrase|code)s?|pwd|pw(?=\s*(?:is|was|[:=：]|\s[-–—]\s|for|of|to)\b)|"
             r"passwort|kennwort|mot\s+de\s+passe|contrase[ñn]a|senha|"
             r"wachtwoord|lösenord|salasana)|пароль|密码|密碼|口令|パスワード|暗証番号|비밀번호|암호)")

# Ordered from the most specific to the most generic, so a redaction names what it found.
SECRET_PATTERNS: list[SecretPattern] = [
    SecretPattern("private key", (
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)")),
    # Key bodies without their PEM lines: DER private keys (PKCS#1 / PKCS#8 / EC) and OpenSSH keys, base64.
    SecretPattern("private key", (
        r"\b(?:MII[A-Za-z0-9+/]{2}(?:AgEAA|IBAA|QIBADAN)|MHcCAQEE|b3BlbnNzaC1rZXktdjE)[A-Za-z0-9+/=]{16,}")),
    SecretPattern("API key", (r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),  # Stripe
    SecretPattern("API key", (r"\bsk-(?:ant-|proj-|or-v1-)?[A-Za-z0-9_\-]{16,}")),
    SecretPattern("API key", (r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    SecretPattern("API key", (r"\bgl(?:pat|dt|rt|cbt|ptt|ft|soat)-[A-Za-z0-9_\-]{20,}")),  # GitLab
    SecretPattern("API key", (r"\bhf_[A-Za-z0-9]{30,}")),  # Hugging Face
    SecretPattern("API key", (r"\bnpm_[A-Za-z0-9]{36,}")),
    SecretPattern("API key", (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    SecretPattern("cloud key", (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b\s*[/:,|]?\s*(?P<v>[A-Za-z0-9/+=]{30,})"), group="v",
                  needle="A"),  # whatever follows an access key id is its secret
    SecretPattern("API key", (r"\bAIza[0-9A-Za-z_\-]{30,}")),
    SecretPattern("API key", (r"\bxox[abeprs]-[A-Za-z0-9\-]{10,}")),
    SecretPattern("API key", (r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}")),  # SendGrid
    SecretPattern("API key", (r"\b[0-9a-f]{32}\.[A-Za-z0-9]{16}\b")),  # Zhipu keys: id.secret
    SecretPattern("API key", (r"\bshp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}\b")),  # Shopify
    SecretPattern("API key", (r"\bkey-[0-9a-f]{32}\b")),  # Mailgun
    # more providers' prefixes: DigitalOcean, Databricks, Supabase, Twilio, Mailchimp, Google OAuth client secrets,
    # Alibaba / Tencent Cloud key ids, PyPI, Groq, Replicate, Notion, Linear, Atlassian, Vault, Doppler, Stripe
    # webhooks, Grafana, Slack app tokens, Square, Google access tokens, Facebook, Telegram bots
    SecretPattern("API key", (
        r"\b(?:dop_v1_[0-9a-f]{64}|do[or]_v1_[0-9a-f]{64}|dapi[0-9a-f]{32}|sbp_[0-9a-f]{40}|SK[0-9a-f]{32}"
        r"|[0-9a-f]{32}-us\d{1,2}|GOCSPX-[A-Za-z0-9_\-]{20,}|LTAI[A-Za-z0-9]{12,30}|AKID[A-Za-z0-9]{20,}"
        r"|pypi-AgE[A-Za-z0-9_\-]{40,}|gsk_[A-Za-z0-9]{40,}|r8_[A-Za-z0-9]{30,}|ntn_[A-Za-z0-9]{30,}"
        r"|secret_[A-Za-z0-9]{43}|lin_(?:api|oauth)_[A-Za-z0-9]{30,}|ATATT[A-Za-z0-9_\-=]{30,}"
        r"|hv[sb]\.[A-Za-z0-9_\-]{24,}|dp\.(?:st|ct|pt|sa|scim|audit)\.[A-Za-z0-9_.\-]{30,}|whsec_[A-Za-z0-9+/=]{24,}"
        r"|glsa_[A-Za-z0-9_]{32,}|xapp-\d-[A-Za-z0-9\-]{20,}|sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,}"
        r"|ya29\.[A-Za-z0-9_\-]{20,}|EAA[A-Za-z0-9]{30,}|GOOG1[0-9A-Z]{20,}"
        r"|[A-Za-z0-9]{3}\dQ~[A-Za-z0-9_.~\-]{31,34})")),
    # Telegram bots, also inside https://api.telegram.org/bot<token>/
    SecretPattern("token", (r"(?:(?<=bot)|(?<![0-9A-Za-z]))\d{8,10}:AA[A-Za-z0-9_\-]{33}"), digits=True),
    SecretPattern("token", (r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),  # JWT
    SecretPattern("webhook secret", (r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9/_\-]{16,})"),
                  group=1),
    SecretPattern("webhook secret", (
        r"(?i)(?:discord(?:app)?\.com/api/webhooks/\d{5,}/|hooks\.zapier\.com/hooks/catch/"
        r"|open\.(?:feishu\.cn|larksuite\.com)/open-apis/bot/v2/hook/|/IncomingWebhook/"
        r"|webhook\.office\.com/webhookb2/|maker\.ifttt\.com/trigger/[^/\s]+/with/key/"
        r"|events\.pagerduty\.com/integration/)"
        r"(?P<v>[A-Za-z0-9_@/\-]{7,})"),
        group="v", digits=True),
    # a credential in a URL's query: ?access_token=, &key=, ?sig= (webhooks of DingTalk and WeCom, SAS links)
    SecretPattern("URL credentials", (
        r"(?i)[?&](?:access_token|token|key|api_?key|apikey|sig|signature|secret|client_secret|private_token|auth|"
        r"password|pwd|passwd|code_secret)=(?P<v>[^&\s#\"'<>]{8,})"), group="v",
        check=lambda v: any(c.isdigit() for c in v) or len(v) >= 20),
    # scheme://user:password@host (the password may hold '@' and '/': the last '@' before the host ends it; a
    # port followed by a path holding '@' is not a password)
    SecretPattern("password", (r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]*:(?P<v>[^\s]+)@[^\s/@]+"), group="v",
                  needle="://", check=lambda v: not re.match(r"\d*/", v)),
    SecretPattern("auth header", (
        r"(?i)\bauthorization\s*[:=]\s*(?:basic|bearer|token|digest|apikey)?\s*(?P<v>[A-Za-z0-9._~+/=\-]{8,})"),
        group="v"),
    SecretPattern("auth header", (r"(?i)\bx-[a-z0-9\-]*(?:key|token|auth|secret)\s*:\s*(?P<v>\S{8,})"),
                  group="v"),
    SecretPattern("bearer token", (r"(?i)\bbearer\s+(?P<v>[A-Za-z0-9._~+/=\-]{12,})"), group="v"),
    SecretPattern("basic auth", (r"\b[Bb]asic\s+(?P<v>[A-Za-z0-9+/]{12,}={0,2})"), group="v",
                  check=lambda v: (v.endswith("=") or any(c.isdigit() for c in v)
                                   or (v.lower() != v and v.upper() != v))),
    # command-line password flags: mysql -pSECRET, sshpass -p SECRET, --password=SECRET, curl -u user:SECRET
    SecretPattern("password", (r"\b(?i:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s-p(?P<v>[^\s\-]\S*)"),
                  group="v"),
    SecretPattern("password", (r"\b(?i:sshpass)\s+-p\s*(?P<v>" + _V + ")"), group="v"),
    SecretPattern("password", (r"\b(?i:docker|podman|buildah|skopeo|helm|oras)\s+(?i:registry\s+)?(?i:login)\b"
                                         r"[^\n]*?\s-p\s+(?P<v>" + _V + ")"), group="v"),
    SecretPattern("password", (r"(?i)--pass(?:word|wd)?(?:=|\s+)(?P<v>" + _V + ")"), group="v"),
    SecretPattern("password", (r"(?:\s-u|--user)\s+[^\s:]+:(?P<v>\S{3,})"), group="v"),
    # KEY=value: env style (`*_KEY=`, `*_TOKEN=`, `*_SECRET=`, `*PASSWORD*=`) and connection strings
    SecretPattern("credential", (
        r"(?i)\b[A-Z0-9_]*(?:_KEY|_TOKEN|_SECRET|_PWD|_PASS|PASSWORD|PASSWD|ACCOUNTKEY|SHAREDACCESSKEY)[A-Z0-9_]*"
        r"\s*[=:]\s*(?P<v>" + _V + ")"), group="v", check=_stated_password),
    SecretPattern("credential", (r"(?i)(?:^|[;\s])(?:pwd|password|accountkey|sharedaccesskey)\s*=\s*(?P<v>[^;\s]{3,})"),
                  group="v"),
    # a password stated in words: "password: x", "the password for the NAS is x", "密码是 x", "银行卡密码 739264",
    # "密码设成了 x", "门禁密码是八位数字 20481937", "银行卡密码六位：582014", "password set to x"
    SecretPattern("password", (
        r"(?i)" + _PW_WORDS + r"(?:\s+(?:for|of|to)\s+\S+(?:\s+\S+){0,3}?)?\s*(?:" + _ZH_DIGITS_SAID + r"\s*)?"
        r"(?:" + _VERB + r"|" + _ZH_SET + r")\s*(?:" + _ZH_DIGITS_SAID + r"\s*[，,:：]?\s*)?"
        r"(?P<v>" + _PWV + r")"), group="v", check=_stated_password),
    SecretPattern("password", (r"(?i)" + _PW_WORDS + r"\s*(?P<v>[A-Za-z0-9!@#$%^&*_+\-=.~]{3,})"),
                  group="v", check=lambda v: _has_digit_or_symbol(v) and not re.fullmatch(r"-[A-Za-z\-]+", v)),
    # the value first: "Tr0ub4dor&3 is my email password", "4821 is my debit card PIN", "739264 是我的银行卡密码"
    SecretPattern("password", (
        r"(?i)(?<![\w@#$%^&*+=.~\-])(?P<v>[A-Za-z0-9!@#$%^&*_+\-=.~]{4,})\s+(?:is|was)\s+"
        r"(?:my|our|the|his|her|their)\s+(?:[\w'-]+\s+){0,3}?(?:password|passcode|passphrase|pw|pin|pin\s+code)"
        r"(?=\s*(?:$|[,.;:!?)]|\s+(?:for|on|at|to|of)\b))"),
        group="v", check=lambda v: any(c.isdigit() for c in v) and (not v.isdigit() or 4 <= len(v) <= 8)),
    SecretPattern("password", (
        r"(?<![A-Za-z0-9!@#$%^&*_+\-=.~])(?P<v>[A-Za-z0-9!@#$%^&*_+\-=.~]{4,})\s*(?:是|为|就是)\s*[^\n，。,.;；]{0,12}?"
        r"(?:密码|口令|密碼|PIN码?)(?=\s*(?:$|[，。,.;；!！?？]))"), group="v", check=lambda v: any(c.isdigit() for c in v)),
    # "set the router password to x", "changed my password to x", "use x as the admin password"
    SecretPattern("password", (
        r"(?i)\b(?:set|changed?|reset|updated?|made)\s+(?:the\s+|my\s+|our\s+|his\s+|her\s+)?(?:[\w'-]+\s+){0,2}?"
        r"(?:password|passcode|passphrase|pin|pw)\s+to\s+(?P<v>" + _PWV + ")"), group="v", check=_stated_password),
    SecretPattern("password", (
        r"(?i)\buse\s+(?P<v>" + _PWV + r")\s+as\s+(?:the\s+|my\s+|a\s+|our\s+)?(?:[\w'-]+\s+){0,2}?"
        r"(?:password|passcode|passphrase|pin|pw)\b"), group="v", check=_has_digit_or_symbol),
    SecretPattern("password", (r"(?i)" + _PW_WORDS + r"\s*" + _ZH_DIGITS_SAID + r"\s*[，,:：]?\s*(?P<v>" + _PWV + ")"),
                  group="v", check=_has_digit_or_symbol),
    SecretPattern("password", (r"(?:密码|口令)(?:" + _VERB + r"|" + _ZH_SET + r")\s*[\u4e00-\u9fff]{1,6}\s*[，,:：]?\s*"
                               r"(?P<v>[A-Za-z0-9!@#$%^&*_+\-=.~]*\d[A-Za-z0-9!@#$%^&*_+\-=.~]*)"), group="v",
                  check=lambda v: len(v) >= 4),
    # a user name then its password: "username root password toor", "账号 admin 密码 qwerty", "user: x, pass: y"
    SecretPattern("password", (
        r"(?i)(?:\b(?:user(?:\s*name)?|login|account|user\s*id|e-?mail)|账号|帳號|帐号|用户名|用户|账户)\s*(?:is|[:=：])?\s*"
        r"[^\s,，;；]+[\s,，;；]+(?:and\s+)?(?:the\s+|my\s+)?(?:\b(?:pass(?:word|wd)?|pwd|pw)\b|密码|口令)"
        r"\s*(?:is|[:=：]|是|为)?\s*(?P<v>" + _PWV + r")"), group="v",
        check=_stated_password),
    SecretPattern("password", (
        r"(?i)\b(?:user(?:name)?|login)\s*/\s*(?:pass(?:word)?|pwd|pw)\s*(?:is|are|[:=：])?\s*"
        r"(?P<v>[^\s/:]+\s*/\s*[^\s/]{3,})"), group="v",
        check=lambda v: _stated_password(re.split(r"\s*/\s*", v, maxsplit=1)[-1])),
    # a login pair, redacted whole (the user name goes with its password): "login is admin / s3cret", "router login:
    # admin/admin1234", "creds: deploy:Tr1cky#Pass", "sign in with alice@example.com / Winter2024!"
    SecretPattern("password", (
        r"(?i)\b(?:log-?in|sign-?\s?in|creds|credentials|account|wi-?fi|wlan|ssid)\b(?:\s+(?:for|to|on|of)\s+\S+)?\s*"
        r"(?:is|are|[:：=]|with|using)?\s*(?!(?:at|on|in|via|the|a|an|by|from|to|for|of|is|broken|down|here|there|"
        r"through|page|screen|form|button|link)\b)(?P<v>[^\s/:]{2,}\s+/\s+\S{3,})"), group="v",
        check=lambda v: _stated_password(re.split(r"\s+/\s+", v, maxsplit=1)[-1])),
    SecretPattern("password", (
        r"(?i)\b(?:log-?in|sign-?\s?in|creds|credentials|account)\b(?:\s+(?:for|to|on|of)\s+\S+)?\s*"
        r"(?:is|are|[:：=]|with|using)?\s*(?!(?:at|on|in|via|the|a|an|by|from|to|for|of|is|with|using|page|form)\b)"
        r"(?P<v>[^\s/:]{2,}[/:][^\s/]{3,})(?!\S)"), group="v",
        check=lambda v: _stated_password(p := re.split(r"[/:]", v, maxsplit=1)[-1]) and _has_digit_or_symbol(p)),
    SecretPattern("password", (  # "creds admin:changeme": said to be credentials, the password needs no digit
        r"(?i)\b(?:creds|credentials)\b(?:\s+(?:for|to|on|of)\s+\S+)?\s*(?:is|are|[:：=])?\s*"
        r"(?P<v>[^\s/:]{2,}[/:][^\s/]{3,})(?!\S)"), group="v",
        check=lambda v: _stated_password(re.split(r"[/:]", v, maxsplit=1)[-1])),
    SecretPattern("password", (
        r"(?i)(?<![\w/.\-])(?:admin|administrator|root|guest|pi|ubuntu|postgres|sa)[/:]"
        r"(?P<v>[^\s/:@<>{}$]{3,})(?![\w/])"), group="v",
        check=lambda v: _stated_password(v) and _has_digit_or_symbol(v) and not re.match(r"\d+(?:\.\d+|$)", v)),
    # wifi: "wifi pw is x", "the wifi is HomeNet, pw x", "wifi key: x", "pw: x"
    SecretPattern("password", (
        r"(?i)\b(?:wi-?fi|wlan|wireless|router|hotspot|network|ssid)\b[^\n.]{0,40}?"
        r"\b(?:pw|pwd|pass(?:\s?word|phrase|code)?"
        r"|key|code)\b\s*(?:is|was|[:=：])?\s*(?P<v>" + _PWV + r")"), group="v",
        check=_stated_password),
    SecretPattern("password", (r"(?i)\bpw\s*(?:is|was|[:=：])\s*(?P<v>" + _PWV + ")"), group="v",
                  check=_stated_password),
    # keys, tokens and private keys named in Chinese: "API密钥是 x", "秘钥是 x", "私钥：x", "令牌：x", "密钥 x"
    SecretPattern("credential", (
        r"(?:密钥|秘钥|私钥|令牌|密匙|卡密)\s*(?:ID)?\s*(?:" + _VERB + r"|" + _ZH_SET + r")?\s*(?P<v>[A-Za-z0-9._~+/=\-]{8,})"),
        group="v", check=lambda v: any(c.isdigit() for c in v)),
    # a PIN, a card's security code, a door / alarm / safe code: "pin is 4821", "ATM PIN 0375", "PIN 码 903617",
    # "cvv 418", "garage door code is 4821#", "the safe combination is 12-34-56"
    SecretPattern("password", (
        r"(?:\bPIN|\b[Pp]in\s+(?:code|number))(?:\s+(?:for|of|to)\s+\S+(?:\s+\S+){0,3}?)?\s*(?:is|was|=|:|：)\s*"
        r"(?P<v>\d{4,}#?)"), group="v"),
    SecretPattern("PIN", (
        r"(?i)\b(?:pin(?:\s*(?:code|number|码))?(?:'s|’s)?|"
        r"(?:door|gate|garage|alarm|lock|entry|keypad|building|access|safe|"
        r"locker|padlock|lockbox|key\s*box|entrance|front\s+door)\s+(?:code|combination|combo|pin)|combination|"
        r"geheimzahl|code\s+pin|código\s+pin|code\s+(?:for|to|of)\s+(?:the\s+|my\s+|our\s+)?(?:front\s+)?"
        r"(?:door|gate|garage|alarm|safe|lock|building|house|apartment|flat|office))"
        r"(?:\s+(?:for|of|to|on)\s+\S+(?:\s+\S+){0,3}?)?[\s,]*(?:is|was|ist|est|es|=|:|：|是|为)?\s*"
        r"(?P<v>\d{4,8}#?|\d{1,3}(?:[-–]\d{1,3}){2,3})(?![\d.:])"), group="v", digits=True),
    SecretPattern("PIN", (r"(?:门禁(?:密码|码)?|密码锁|取款码|PIN\s*码)\s*(?:[:：=]|是|为)?\s*(?:" + _ZH_DIGITS_SAID
                          + r"\s*[，,:：]?\s*)?(?P<v>\d{4,8}#?)"), group="v",
                  digits=True),
    SecretPattern("card number", (
        r"(?i)\b(?:cvv2?|cvc2?|cvn|cid|card\s+security\s+code|security\s+code)\b\s*(?:is|[:：=]|是|为)?\s*(?P<v>\d{3,4})"
        r"(?!\d)"), group="v", digits=True),
    # a card's expiry date, beside a card number or its security code (with them it is what a fraudster needs; alone,
    # "my passport expires 05/2031" is an ordinary fact)
    SecretPattern("card number", "", finder=lambda text: _card_expiry_spans(text), digits=True),
    SecretPattern("card number", (r"(?:安全码|校验码|CVV\s*码)\s*(?:[:：=]|是|为)?\s*(?P<v>\d{3,4})(?!\d)"), group="v",
                  digits=True),
    SecretPattern("credential", (
        r"(?i)\b(?:api[_\- ]?(?:key|secret)|secret(?:[_\- ]?key)?|access[_\- ]?(?:token|key)|auth[_\- ]?(?:token|key)|"
        r"token|client[_\- ]?secret|consumer[_\- ]?(?:key|secret)|app[_\- ]?(?:key|secret)|private[_\- ]?token|"
        r"signing[_\- ]?key|"
        r"webhook[_\- ]?(?:key|token))"
        r"(?:\s+(?:for|of|to)\s+\S+(?:\s+\S+){0,3}?)?\s*(?:is|=|:|：|是|为)\s*[\"'`]?"
        r"(?P<v>[A-Za-z0-9._~+/=\-!@#$%^&*]{6,})"), group="v", check=_credential_value),
    SecretPattern("credential", (r"(?i)\bkey\s*(?:is|=|:|：|是|为)\s*[\"'`]?(?P<v>[A-Za-z0-9._~+/=\-!@#$%^&*]{8,})"),
                  group="v", check=lambda v: any(c.isdigit() for c in v) and any(c.isalpha() for c in v)),
    # other keys said as such: "VPN pre-shared key: x", "master key is x", "security answer: x"
    SecretPattern("credential", (
        r"(?i)\b(?:pre-?shared\s+key|psk|encryption\s+key|master\s+key|license\s+key|product\s+key|passkey|"
        r"unlock\s+code|security\s+(?:question\s+)?answer|secret\s+answer|signing\s+secret|shared\s+secret)"
        r"(?:\s+(?:for|of|to|on)\s+\S+(?:\s+\S+){0,3}?)?\s*(?:is|was|[:=：])\s*"
        r"(?P<v>[\"'“‘]?[A-Za-z0-9!@#$%^&*()_+\-=.~?/\\|<>]{4,}[\"'”’]?)"), group="v", check=_stated_password),
    SecretPattern("credential", (r"(?:密保答案|密保问题答案|安全问题答案)\s*(?:" + _VERB + r")?\s*(?P<v>\S{2,})"),
                  group="v"),
    # one-time codes: "验证码是 583920", "OTP 482913", "verification code: 1234"
    SecretPattern("token", (
        r"(?i)(?:\b(?:verification|one-time|otp|2fa|mfa|login|sms|auth(?:entication)?)\s+(?:code|passcode|password|pin)"
        r"|\botp\b|验证码|驗證碼|校验码|动态码|动态密码|短信码)\s*(?:" + _VERB + r")?\s*(?P<v>\d{4,8})(?!\d)"), group="v",
        digits=True),
    # a session cookie: sessionid=..., PHPSESSID=..., connect.sid=...
    SecretPattern("token", (
        r"(?i)\b(?:session_?id|sid|connect\.sid|phpsessid|jsessionid|_session|remember_token|auth_token|csrftoken|"
        r"session_token|__Secure-[A-Za-z0-9\-]+)=(?P<v>[A-Za-z0-9%._\-]{16,})"), group="v", digits=True),
    # a BitLocker recovery key, an extended private key
    SecretPattern("token", (r"(?<![\d\-])\d{6}(?:-\d{6}){7}(?![\d\-])"), digits=True),
    SecretPattern("private key", (r"\b[xyzt]prv[1-9A-HJ-NP-Za-km-z]{100,}"), needle="prv"),
    # a key named, then hex or a UUID: "heroku api key <uuid>", "cloudflare global key <hex>", "key: <hex>"
    SecretPattern("credential", (
        r"(?i)\b(?:key|secret|token|apikey|private[_ ]key[_ ]id)\b\s*(?:is|[:=：])?\s*[\"']?"
        r"(?P<v>[0-9a-f]{32,}|[0-9a-f]{8}-[0-9a-f]{4}-"
        r"[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b"), group="v", digits=True),
    # JSON fields: "private_key_id": "...", "client_secret": "...", "refresh_token": "..."
    SecretPattern("credential", (
        r"(?i)\"[a-z_]*(?:key|secret|token|password|passwd|auth)[a-z_]*\"\s*:\s*\"(?P<v>[^\"\s]{12,})\""), group="v",
        check=lambda v: any(c.isdigit() for c in v)),
    # .npmrc / .yarnrc: //registry/:_authToken=..., _auth=..., _password=...
    SecretPattern("API key", (r"(?i)(?:_authToken|_auth|_password|npmAuthToken)\s*[=:]\s*[\"']?(?P<v>[^\s\"']{8,})"),
                  group="v"),
    # a private key in hex (a wallet's): "private key 0x4c08...", "私钥：..."
    SecretPattern("private key", (r"(?i)\b(?:private\s*key|priv\s*key|secret\s*key)\b\s*(?:is|[:=：])?\s*"
                                  r"(?P<v>(?:0x)?[0-9a-f]{64})\b"), group="v", digits=True),
    # two-factor: a TOTP seed (base32) and recovery codes
    SecretPattern("token", (
        r"(?i)\b(?:2fa|totp|otp|mfa|authenticator|two-factor)\s+(?:secret|seed|key|setup\s+key)\s*(?:is|[:=：])?\s*"
        r"(?P<v>[A-Z2-7]{4}(?:\s?[A-Z2-7]{4}){3,15})\b"), group="v"),
    SecretPattern("token", (
        r"(?i)\b(?:recovery|backup)\s+codes?\s*(?:are|is|[:=：])?\s*(?P<v>[A-Za-z0-9]{4,6}-?[A-Za-z0-9]{4,6}"
        r"(?:[\s,;]+[A-Za-z0-9]{4,6}-?[A-Za-z0-9]{4,6})*)"), group="v", check=lambda v: any(c.isdigit() for c in v)),
    # a .pgpass line: host:port:database:user:password
    SecretPattern("password", (r"(?<!\S)[A-Za-z0-9.\-_*]+:(?:\d{2,5}|\*):[^\s:]+:[^\s:]+:(?P<v>\S{3,})"), group="v",
                  digits=True),
    # -- personal data ----------------------------------------------------------------------------------------------
    SecretPattern("national id", (
        _AN + r"[1-8]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx]" + _NA),
        check=cn_resident_id, digits=True),
    SecretPattern("card number", (_AN + r"\d{4}(?:[ \-]?\d{3,7}){1,4}" + _NA + r"(?![.,]\d)" + _NOT_A_COUNT_AFTER),
                  check=card_number, digits=True, reject_before=_NOT_PERSONAL_BEFORE),
    SecretPattern("card number", (
        r"(?i)(?:\b(?:card|visa|mastercard|master\s+card|amex|american\s+express|discover|jcb|unionpay|maestro|mir|"
        r"troy|"
        r"rupay|credit|debit)\b|карта|信用卡|银行卡|借记卡|储蓄卡|卡号|カード)[^\d\n]{0,24}?(?P<v>\d(?:[ \-]?\d){11,18})(?!\d)"),
        group="v", check=lambda v: luhn(digits_of(v)), digits=True, reject_before=_NOT_PERSONAL_BEFORE),
    SecretPattern("national id", (r"(?<![\d\-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d\-])"),
                  digits=True, reject_before=_NOT_PERSONAL_BEFORE),  # US social security number
    SecretPattern("national id", (
        r"(?i)\b(?:ssn|social\s+security|sin|social\s+insurance)\b(?:\s+(?:number|no\.?|#))?\s*(?:is|[:#：])?"
        r"\s*(?P<v>\d{3}[ \-]?\d{2,3}[ \-]?\d{3,4})(?!\d)"), group="v", digits=True),
    SecretPattern("national id", (r"(?<![\d\-])\d{3}-\d{3}-\d{3}(?![\d\-])"), check=ca_sin, digits=True),
    SecretPattern("national id", (  # UK National Insurance number
        r"(?<![A-Za-z0-9])(?![DFIQUV])[A-Z](?![DFIOQUV])[A-Z]\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D](?![A-Za-z0-9])"),
        check=lambda v: v[:2] not in ("BG", "GB", "KN", "NK", "NT", "TN", "ZZ") and " " in v or v.isalnum(),
        digits=True),
    SecretPattern("national id", (_AN + r"[A-Z]{1,2}\d{6}\s?\([0-9A]\)"), check=hk_id, digits=True),
    SecretPattern("national id", (_AN + r"[A-Z][12]\d{8}" + _NA), check=tw_id, digits=True),
    SecretPattern("national id", (_AN + r"[STFG]\d{7}[A-Z]" + _NA), check=sg_nric, digits=True),
    SecretPattern("national id", (_AN + r"\d{3}\.\d{3}\.\d{3}-\d{2}" + _NA), check=br_cpf, digits=True),
    SecretPattern("national id", (_AN + r"(?:\d{8}|[XYZ]\d{7})-?[A-Z]" + _NA), check=es_dni, digits=True),
    SecretPattern("national id", (_AN + r"(?<!\d\s)[2-9]\d{3}\s\d{4}\s\d{4}(?!\s\d)" + _NA), check=aadhaar,
                  digits=True,
                  reject_before=_NOT_PERSONAL_BEFORE),
    SecretPattern("national id", (_AN + r"\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])-[1-8]\d{6}" + _NA),
                  check=kr_rrn, digits=True),
    SecretPattern("national id", (_AN + r"[A-Z]{3}[PCHFATBLJG][A-Z]\d{4}[A-Z]" + _NA), digits=True),  # India PAN
    # Italian codice fiscale, Mexican CURP: shapes no other code has
    SecretPattern("national id", (_AN + r"[A-Z]{6}\d{2}[A-EHLMPR-T]\d{2}[A-Z]\d{3}[A-Z]" + _NA), digits=True),
    SecretPattern("national id", (_AN + r"[A-Z][AEIOUX][A-Z]{2}\d{6}[HM][A-Z]{5}[A-Z0-9]\d" + _NA), digits=True),
    # ids said with their name: passport, driving licence, ID card, 身份证, 护照, 驾照, NRIC, CPF, DNI, ...
    SecretPattern("national id", (
        r"(?i)(?:\b(?:passport|passeport|pasaporte|reisepass|passaporto|ni\s+(?:number|no)|dl|driver'?s?\s+licen[cs]e|"
        r"driving\s+licen[cs]e|licen[cs]e\s+(?:number|no)|"
        r"national\s+id(?:entity)?(?:\s+card)?|id\s+card|identity\s+card|id\s+(?:number|no\.?)|"
        r"national\s+insurance|nino|nric|fin|cpf|dni|nie|aadhaar|pan\s+card|tax\s+(?:id|number)|tin|"
        r"medicare|nhs\s+number|health\s+card|insurance\s+number|member\s+id|voter\s+id|residence\s+permit|"
        r"personnummer|tfn|ein|itin|(?:personal)?ausweis(?:nummer)?|steuer-?id|s[ée]curit[ée]\s+sociale|nir|bsn|pesel|"
        r"curp|rfc|rut|codice\s+fiscale|hetu|cnp|oib|amka|egn|emso|jmbg|nin|nik|nid|ssnit|mykad|nric|sss|tin)\b|"
        r"身份证|身份證|护照|護照|驾照|驾驶证|駕照|证件|證件|パスポート|여권|在留カード|社保卡?|医保卡?|居住证|港澳通行证|台胞证|マイナンバー|"
        r"주민등록번호)"
        r"(?:\s*(?:number|no\.?|nr\.?|#|号码?|號碼?|号|番号))?\s*(?:is|was|[:：#=]|是|为|為|es|est)?\s*"
        r"(?P<v>[A-Z0-9][A-Z0-9 ()\-+]{4,22}[A-Z0-9)])"), group="v",
        check=lambda v: len(digits_of(v)) >= 5 and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", v)),
    # phone numbers: mainland China mobiles, +country numbers, North American, UK, Japanese and French national
    # formats by shape; any number said with a phone word
    SecretPattern("phone number", (
        _AN + r"(?<!\+)(?:(?:\+|00)?86[ \-]?)?1[3-9]\d(?:[ \-]?\d{4}){2}" + _NA + _NOT_A_COUNT_AFTER),
        digits=True, reject_before=_NOT_PERSONAL_BEFORE),
    SecretPattern("phone number", (
        r"(?<![0-9A-Za-z+])\+[1-9]\d{0,2}(?:[ .\-]?\(?\d{1,5}\)?){2,6}" + _NA), check=enough_digits(8, 15),
        digits=True, needle="+"),
    SecretPattern("phone number", (
        r"(?<![0-9A-Za-z+\-.])(?:1[ .\-])?(?!\(?(?:[2-9]00|8(\d)\1)\b)"  # not toll-free (800, 888, ...) nor N00
        r"(?:\([2-9]\d{2}\)\s?|[2-9]\d{2}[ .\-])\d{3}[ .\-]\d{4}"
        r"(?![0-9A-Za-z]|[.\-]\d)"), digits=True, reject_before=_NOT_PERSONAL_BEFORE),
    SecretPattern("phone number", (
        _AN + r"(?:07\d{3}\s?\d{6}|0[789]0[ \-]\d{4}[ \-]\d{4}|0[1-9](?:[ .]\d{2}){4}|01[567]\d{1,2}[ /\-]?\d{6,8}"
        r"|01[016789][ \-]\d{3,4}[ \-]\d{4}|[6-9]\d{4} \d{5}|\(\d{2}\)\s?9?\d{4}-\d{4}|0\d{2,3}-\d{7,8})" + _NA),
        digits=True,
        reject_before=_NOT_PERSONAL_BEFORE),
    SecretPattern("phone number", (_AN + r"0\d{1,4}-\d{1,4}-\d{4}" + _NA), check=enough_digits(10, 11), digits=True,
                  reject_before=_NOT_PERSONAL_BEFORE),  # Japanese landlines
    SecretPattern("phone number", (
        r"(?i)(?:\b(?:phone|mobile|cell(?:phone)?|tel|telephone|landline|whatsapp|signal|wechat|viber|fax|"
        r"call\s+(?:me|him|her|them|us)\s+(?:at|on)|text\s+(?:me|him|her|them|us)\s+(?:at|on)|reach\s+me\s+(?:at|on)|"
        r"contact\s+number|handy|telefon(?:nummer)?|t[ée]l[ée]phone|portable|tel[ée]fono|m[óo]vil|celular|telefone|"
        r"cellulare)\b|手机号?码?|手機號?碼?|电话号?码?|電話(?:番号)?|联系电话|联系方式|座机|携帯(?:番号)?|微信号?|"
        r"연락처|전화(?:번호)?|휴대폰|телефон)"
        r"(?:\s*(?:number|no\.?|#|号码?))?\s*(?:is|was|ist|est|es|[:：=]|是|为)?\s*"
        r"(?P<v>\+?[(（]?\d[\d ()（）\-.]{5,18}\d)(?![\d:])"), group="v", check=phone_number, digits=True),
    # bank accounts: an IBAN (its mod-97 check), any account number said as one
    SecretPattern("bank account", (_AN + r"[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?" + _NA),
                  check=iban, digits=True),
    SecretPattern("bank account", (
        r"(?i)(?:\b(?:account(?:\s*(?:number|no\.?|#))?|acct\.?\s*(?:number|no\.?|#)?|bank\s+account(?:\s+number)?|"
        r"iban|bsb|sort\s+code\s+and\s+account)\b|银行账号|银行账户|银行卡号?|账号|帳號|卡号|卡號|户号|工资卡号?)"
        r"\s*(?:is|[:：#]|是|为)?\s*(?P<v>\d(?:[ \-]?\d){5,33})(?!\d)"), group="v", digits=True),
    # a wallet's recovery phrase: 12 or more BIP-0039 words in a row
    SecretPattern("seed phrase", "", finder=seed_phrase_spans),
    # 12, 15, ... 24 Chinese characters spaced out (BIP-0039's Chinese lists are single characters); a spaced list of
    # another length (stop words in code) is not a phrase
    SecretPattern("seed phrase", (r"(?<![\u4e00-\u9fff])(?<![\u4e00-\u9fff][ \u3000])[\u4e00-\u9fff]"
                                  r"(?:[ \u3000][\u4e00-\u9fff]){11,23}(?![ \u3000]?[\u4e00-\u9fff])"),
                  check=lambda v: (len(v) + 1) // 2 in (12, 15, 18, 21, 24)),
    SecretPattern("seed phrase", (
        r"(?i)(?:助记词|助記詞|恢复短语|钱包种子|seed\s*(?:phrase|words)?|recovery\s*(?:phrase|words|seed)|mnemonic(?:\s*phrase)?|"
        r"backup\s*phrase)\s*(?:is|[:：=]|是)?\s*(?P<v>[\u4e00-\u9fff](?:[\s,，、]+[\u4e00-\u9fff]){11,23})"), group="v"),
    # a password on its own: upper and lower case, a digit and a symbol inside ("P@ssw0rd99", "Tr0ub4dor&3")
    SecretPattern("password", (r"(?<![\w@#$%^&*.:/\-])(?=[^\s]*[A-Z])(?=[^\s]*[a-z])(?=[^\s]*\d)"
                               r"[A-Za-z0-9]+[!@#$%^&*][A-Za-z0-9!@#$%^&*]*[A-Za-z0-9](?![\w@#$%^&*.:/\-])"),
                  check=lambda v: 8 <= len(v) <= 40, digits=True),
    # an AWS secret access key on its own: 40 characters of base64, both cases and a digit (a commit id is hex)
    SecretPattern("cloud key", (r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"), check=_aws_secret_key,
                  digits=True),
    # the safety net: a long machine-made token of no known shape
    SecretPattern("token", (r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{24,}={0,2}"), check=_looks_random),
]
