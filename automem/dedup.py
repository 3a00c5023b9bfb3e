"""Duplicate / update / new: how a candidate memory relates to the stored memories nearest to it.

Plain functions, no I/O. The write path finds the nearest neighbours (cosine distance, same wing, visible to the
profile) and asks `decide`; `settle` is where an LLM judge may overrule the pairs marked borderline.

Why not a bare distance threshold: with the offline encoder, "项目用Python 3.11" vs "项目改用Python 3.12" is 0.03
apart, closer than most paraphrases (see reference/embeddings.md). Distance only says "same topic"; whether the
fact is the same or changed comes from cheap lexical checks on the two texts:

- values: numbers, versions, dates, times, paths, identifiers, and names from small value classes (cities, editors,
  languages, weekdays, ...). A value replaced by another of its kind, the rest of the sentence being the same
  slot, is a changed value ("3.11" -> "3.12", 上海 -> 北京); a value on one side only is a detail of another fact
  ("用vim" / "vim配置放在~/.vimrc").
- polarity: negations (not / never / 不 / 没 / 别 ...) plus antonyms (dark/light, 暗/亮, tabs/spaces, like/dislike,
  开启/关闭, 超过/以内 ...). An odd difference flips the fact; a negation and an antonym cancel ("never tabs" =
  "always spaces", "不吃肉" = "吃素").
- overlap: the meaning left after dropping frame words ("用户", "I", "use", "习惯", "always" ...) and mapping
  synonyms, in both languages, to one concept ("回复" = "reply" = "answer"). Enough in common (weighted Jaccard,
  `MIN_OVERLAP`) is the same fact restated; less is a related fact. Across languages only concepts and values can
  be matched (`CROSS_MIN_OVERLAP`).
- change markers: strong ones (改用, 换成, 搬到, switched to, moved to, no longer) turn a replaced word into an
  update; weak ones (现在, now) count only across languages, where the words cannot be compared.

Chinese has no spaces: values are found first, then CJK runs are segmented by longest match against the lexicon
below, and what is left is compared as characters and character bigrams; latin words, numbers and paths are
tokens of their own. Pairs the rules are unsure of are marked borderline for a judge.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Callable, Sequence

ACTIONS = ("duplicate", "update", "new")


@dataclass(frozen=True)
class Neighbour:
    """A stored memory near the candidate: its id, normalised text and cosine distance (1 - cos)."""

    id: str
    text: str
    distance: float


@dataclass(frozen=True)
class Thresholds:
    """Cosine distances. `same`: practically the same sentence; `paraphrase`: close enough to be the same fact or
    the same slot; `related`: beyond it the two texts are about different things and never merged."""

    same: float
    paraphrase: float
    related: float

    @classmethod
    def from_config(cls, cfg) -> "Thresholds":
        return cls(cfg.dedup_same_distance, cfg.dedup_paraphrase_distance, cfg.dedup_related_distance)


@dataclass(frozen=True)
class PairVerdict:
    action: str  # duplicate | update | new
    reason: str
    borderline: bool  # the cheap checks are not sure: a judge may settle it


@dataclass(frozen=True)
class Verdict:
    action: str  # duplicate | update | new
    matched_id: str | None
    reason: str
    borderline: bool


# (candidate, existing) pairs -> "duplicate" | "update" | "new" for each, in one batched call.
Judge = Callable[[list[tuple[str, str]]], list[str]]


# --------------------------------------------------------------------------------------------------------------
# Lexicon. Small and general: the vocabulary of memories about a developer's tools, habits and instructions.

# Frame words: who holds the fact and how it is phrased, not what it is. Dropped before comparing.
FRAME_EN = frozenset("""
a an the this that these those there here it its it's i i'm i've me my mine we we're our us you your yours he she
him her his they them their user user's users is are am was were be been being do does did to of in on at for with
by from as and or but so also just only all any every each always usually generally normally typically mostly
should must need needs needed want wants wanted would will shall can could may might please use uses using used
utilise utilises utilize utilizes employ employs rely relies have has had get gets got go goes going very really
much about into than then when which who what whose via through per own s stuff thing things sort
currently default by-default keep keeps
""".split()) | {"works as", "work as", "serves as"}

FRAME_ZH = frozenset("""
用户 我 我们 你 你们 他 她 他们 她们 的 地 得 了 是 都 也 在 要 需要 必须 应该 应当 得要 就 和 与 及 以及 跟 同 把 被 让
给 对 会 能 能够 还 又 很 太 最 吧 呢 啊 呀 嘛 着 过 这 那 这个 那个 这些 那些 个 些 使用 用 采用 利用 运用 习惯 习惯于 一直
总是 始终 通常 平时 平常 经常 常 常常 一般 统一 一律 全部 所有 一概 进行 请 务必 一定 记得 记住 自己 本人 本 其 该 以 为
来 去 上 中 里 时 时候 然后 然后再 再 的话 都是 就是 只 只用 仅 一下 比较 比 挺 非常 特别 主要 默认 目前 当前 向来 从来 一向 向 于 从 当 担任 做为 作为
""".split())

# Negation. Counted (parity), then dropped. Multi-character entries win over single characters by longest match.
NEGATION_EN = frozenset("""
not never no don't doesn't didn't won't wouldn't can't cannot couldn't isn't aren't wasn't weren't shouldn't
mustn't haven't hasn't without avoid avoids none neither nor nothing
""".split()) | {"free of", "free from"}
NEGATION_ZH = frozenset("不 没 没有 别 不要 不再 不用 不必 无 未 勿 莫 禁止 避免 从不 从没 从未 不准 不许 不能 不会 不可 毫无 拒绝 切勿".split())
# Words that contain a negation character but negate nothing. Matched as whole words, so 不 inside them is not seen.
NOT_NEGATION_ZH = frozenset("""
不错 不过 不同 不断 不少 不仅 不管 不论 无论 别人 别的 特别 分别 区别 类别 级别 识别 告别 未来 非常 差不多 不久
不得不 无须 无需 毫不犹豫 不一样 并不是 不但 不只 要不 不然 无线 未必
""".split())

# Phrases that announce a change of an earlier fact. Strong ones say the value changed; weak ones ("now",
# "现在") only date the fact, so they count only where the words cannot be compared (across languages).
CHANGE_STRONG_EN = ("switched", "switch", "changed", "change", "moved", "move", "instead", "no longer", "replaced",
                    "migrated", "upgraded", "downgraded", "anymore", "any more", "no more")
CHANGE_STRONG_ZH = ("改用", "改成", "改为", "改到", "改了", "换成", "换用", "换到", "换了", "不再", "搬到", "搬去", "搬家", "转为",
                    "转到", "升级到", "升级", "降级", "迁移到", "迁到", "改", "戒")
CHANGE_EN = ("now", "switched", "switch", "changed", "change", "moved", "move", "instead", "anymore", "any more",
             "no longer", "from now on", "these days", "nowadays", "recently", "lately", "replaced", "migrated",
             "upgraded", "downgraded", "new", "started", "no more")
CHANGE_ZH = ("改用", "改成", "改为", "改到", "改了", "换成", "换用", "换到", "换了", "现在", "如今", "不再", "已经", "搬到",
             "搬去", "搬家", "转为", "转到", "从此", "最近", "升级到", "升级", "降级", "迁移到", "迁到", "改")

# Concepts: surface forms in both languages that mean the same thing. Comparing concept keys lets a Chinese memory
# be checked against an English one. `class` concepts are values of a slot: two different ones are a changed value.
CONCEPTS: dict[str, tuple[str, ...]] = {
    # preference and habit
    "LIKE": ("like", "likes", "liked", "love", "loves", "enjoy", "enjoys", "prefer", "prefers", "preferred",
             "preference", "favour", "favor", "favourite", "favorite", "fond", "喜欢", "爱", "喜爱", "偏好", "偏爱",
             "爱好", "倾向", "倾向于", "更喜欢", "钟爱", "喜好"),
    "DISLIKE": ("dislike", "dislikes", "hate", "hates", "detest", "can't stand", "cannot stand", "讨厌", "厌恶", "反感",
                "受不了"),
    "DRINK": ("drink", "drinks", "喝"),
    "EAT": ("eat", "eats", "吃"),
    # appearance
    "DARK": ("dark", "darker", "black", "暗", "暗色", "深色", "黑色", "黑暗", "夜间"),
    "LIGHT": ("light", "lighter", "bright", "white", "亮", "亮色", "浅色", "白色", "明亮", "日间"),
    "THEME": ("theme", "themes", "mode", "colour scheme", "color scheme", "主题", "模式", "配色"),
    "FONT": ("font", "fonts", "typeface", "字体"),
    "SIZE": ("size", "大小", "尺寸", "字号"),
    # code style
    "TABS": ("tab", "tabs", "制表符", "tab键"),
    "SPACES": ("space", "spaces", "空格"),
    "INDENT": ("indent", "indents", "indentation", "indented", "缩进"),
    "STYLE": ("style", "styles", "convention", "conventions", "guideline", "guidelines", "风格", "规范", "约定",
              "代码风格", "style guide"),
    "FOLLOW": ("follow", "follows", "following", "comply", "complies", "adhere", "adheres", "conform", "conforms",
               "遵循", "遵守", "符合", "按照", "依照", "遵从"),
    "DOCSTRING": ("docstring", "docstrings", "文档字符串"),
    "COMMENT": ("comment", "comments", "注释"),
    "TYPE_HINT": ("type hint", "type hints", "type annotation", "type annotations", "类型注解", "类型提示"),
    "SINGLE_QUOTE": ("single quote", "single quotes", "单引号"),
    "DOUBLE_QUOTE": ("double quote", "double quotes", "双引号"),
    "LINE": ("line", "lines", "每行", "行数"),
    "LENGTH": ("length", "长度"),
    "LONG": ("long", "longer"),
    "SHORT": ("short", "shorter", "brief", "concise", "简短", "短", "简洁", "精简", "简明"),
    "DETAILED": ("detailed", "verbose", "thorough", "lengthy", "long-winded", "详细", "啰嗦", "冗长", "详尽", "长篇大论"),
    # software work
    "CODE": ("code", "coding", "代码", "写代码", "编码"),
    "EDITOR": ("editor", "editors", "编辑器"),
    "PROJECT": ("project", "projects", "repo", "repository", "项目", "仓库", "代码库"),
    "VERSION": ("version", "versions", "版本"),
    "TEST": ("test", "tests", "testing", "测试", "单元测试", "单测"),
    "RUN": ("run", "runs", "ran", "running", "execute", "跑", "运行", "执行"),
    "DEPLOY": ("deploy", "deploys", "deployed", "deployment", "release", "releases", "ship", "部署", "上线", "发布"),
    "BUILD": ("build", "builds", "构建", "编译", "打包"),
    "COMMIT": ("commit", "commits", "提交"),
    "MESSAGE": ("message", "messages", "msg", "信息", "消息", "说明"),
    "BRANCH": ("branch", "branches", "分支"),
    "PUSH": ("push", "pushes", "推送"),
    "MERGE": ("merge", "merges", "merged", "合并"),
    "REVIEW": ("review", "reviews", "reviewed", "审查", "评审", "审核", "代码审查", "review一下"),
    "BUG": ("bug", "bugs", "缺陷", "故障"),
    "FIX": ("fix", "fixes", "fixed", "repair", "repaired", "修复", "修好", "修了", "解决"),
    "SERVER": ("server", "servers", "服务器"),
    "DATABASE": ("database", "databases", "db", "数据库"),
    "CONFIG": ("config", "configuration", "settings", "setting", "配置", "设置"),
    "FILE": ("file", "files", "文件"),
    "PATH": ("path", "directory", "folder", "dir", "路径", "目录", "文件夹"),
    "PUT": ("put", "store", "stored", "located", "放", "放在", "存放", "位于"),
    "INSTALL": ("install", "installs", "installed", "安装"),
    "DEPENDENCY": ("dependency", "dependencies", "package", "packages", "依赖", "依赖包"),
    "LOG": ("log", "logs", "logging", "日志"),
    "ERROR": ("error", "errors", "exception", "exceptions", "报错", "错误", "异常"),
    "FUNCTION": ("function", "functions", "函数", "方法"),
    "VARIABLE": ("variable", "variables", "变量"),
    "NAME_OF": ("name", "names", "named", "called", "call", "naming", "go by", "goes by", "名字", "名叫", "叫", "叫做",
                "命名", "名称", "称呼", "称为"),
    "HOMETOWN": ("hometown", "grew up", "grow up", "originally from", "born in", "come from", "comes from", "老家",
                 "家乡", "出生在", "出生于", "来自"),
    "TASK": ("task", "tasks", "ticket", "card", "任务", "卡片", "工单"),
    "BOARD": ("board", "kanban", "看板"),
    "DONE": ("done", "finished", "completed", "complete", "finish", "完成", "做完", "搞定", "结束"),
    "BLOCKED": ("blocked", "stuck", "卡住", "阻塞", "受阻"),
    "WRITE": ("write", "writes", "wrote", "written", "writing", "写", "撰写", "编写"),
    "READ": ("read", "reads", "阅读", "读"),
    # common work vocabulary, so a question in one language meets a memory in the other (recall re-ranking)
    "READER": ("reader", "readers", "readership", "views", "pageviews", "读者", "阅读量", "浏览量"),
    "SOURCE": ("source", "sources", "citation", "citations", "出处", "来源", "引用"),
    "TOPIC": ("topic", "topics", "subject", "subjects", "主题", "话题", "题材"),
    "CI": ("ci", "ci pipeline", "continuous integration", "持续集成"),
    "PACKAGE": ("package", "packages", "package manager", "dependencies", "包管理器", "包管理", "依赖包"),
    "CHECK": ("check", "checks", "checked", "verify", "verified", "检查", "核对", "验证", "确认"),
    "ADD": ("add", "adds", "added", "include", "includes", "attach", "添加", "加上", "附上", "带上"),
    "REMOVE": ("remove", "removes", "removed", "delete", "deletes", "deleted", "drop", "删除", "删掉", "去掉", "移除"),
    "OPEN_": ("enable", "enables", "enabled", "turn on", "switch on", "开启", "打开", "启用"),
    "CLOSE_": ("disable", "disables", "disabled", "turn off", "switch off", "关闭", "禁用", "关掉"),
    "EXCEED": ("exceed", "exceeds", "over", "above", "more than", "longer than", "超过", "超出", "多于", "大于", "以上"),
    "WITHIN": ("within", "under", "below", "at most", "less than", "up to", "shorter than", "fewer than", "no more than", "以内", "之内", "以下", "不到", "少于", "小于",
               "控制在"),
    "ALLOW": ("allow", "allowed", "allows", "permit", "permitted", "ok", "okay", "fine", "允许", "可以", "能用"),
    "POLITE": ("polite", "politely", "courteous", "respectful", "friendly", "kind", "礼貌", "客气", "有礼貌", "友好",
               "尊重"),
    "RUDE": ("rude", "harsh", "blunt", "粗鲁", "生硬", "不客气"),
    "FEEDBACK": ("feedback", "review comments", "review comment", "意见", "反馈", "评审意见", "审查意见"),
    "TONE": ("tone", "语气", "口吻"),
    "REPLY": ("answer", "answers", "reply", "replies", "respond", "responds", "response", "responses", "回答", "回复",
              "答复", "回应", "应答"),
    "EXPLAIN": ("explain", "explains", "explanation", "解释", "讲解", "说明一下"),
    "SUMMARY": ("summary", "summaries", "summarise", "summarize", "总结", "摘要", "概要"),
    "FORMAT": ("format", "formats", "formatted", "格式", "格式化"),
    "DATE": ("date", "dates", "日期"),
    "TIME": ("time", "times", "时间"),
    "TIMEZONE": ("timezone", "time zone", "时区"),
    # writing work
    "ARTICLE": ("article", "articles", "post", "posts", "文章", "帖子"),
    "BLOG+ARTICLE": ("博文", "blogpost", "blogposts"),  # one word, two concepts: a blog post
    "BLOG": ("blog", "blogs", "博客"),
    "TITLE": ("title", "titles", "heading", "headline", "标题"),
    "COVER": ("cover", "封面"),
    "IMAGE": ("image", "images", "picture", "pictures", "photo", "图片", "配图", "照片"),
    "WORD": ("word", "words", "character", "characters", "字", "字数", "字符"),
    "TAG": ("tag", "tags", "标签"),
    "DRAFT": ("draft", "drafts", "草稿", "初稿"),
    "PUBLISH": ("publish", "published", "publishing", "发表", "发文"),
    # life
    "LIVE": ("live", "lives", "lived", "living", "reside", "resides", "based", "住", "住在", "居住", "定居", "生活"),
    "WORK": ("work", "works", "worked", "job", "工作", "上班", "任职"),
    "COMPANY": ("company", "employer", "公司"),
    "HOME": ("home", "家里"),
    "OFFICE": ("office", "办公室"),
    "MEETING": ("meeting", "meetings", "standup", "会议", "开会", "例会", "站会", "周会"),
    "WAKE": ("wake", "wakes", "get up", "gets up", "起床", "起"),
    "SLEEP": ("sleep", "sleeps", "bed", "睡", "睡觉", "入睡"),
    "EARLY": ("early", "earlier", "早", "早点", "提前"),
    "LATE": ("late", "later", "晚", "晚点", "推迟"),
    "MORNING": ("morning", "mornings", "am", "早上", "上午", "早晨", "清晨"),
    "EVENING": ("evening", "evenings", "night", "nights", "pm", "晚上", "夜里", "夜间", "深夜", "傍晚", "下午"),
    "DAY": ("day", "days", "daily", "every day", "每天", "天天", "每日"),
    "WEEK": ("week", "weeks", "weekly", "every week", "每周", "每星期", "每个星期"),
    "MONTH": ("month", "months", "monthly", "每月"),
    "YEAR": ("year", "years", "yearly", "每年"),
    "HOUR": ("hour", "hours", "小时", "点钟"),
    "MINUTE": ("minute", "minutes", "分钟"),
    "CUP": ("cup", "cups", "杯"),
    "VEGETARIAN": ("vegetarian", "vegan", "素食", "吃素", "素食者"),
    "MEAT": ("meat", "肉", "吃肉"),
    "ALLERGIC": ("allergic", "allergy", "过敏"),
    "SPICY": ("spicy", "辣", "吃辣"),
    "SUGAR": ("sugar", "sweet", "糖", "甜"),
    "CAT": ("cat", "cats", "猫", "猫咪"),
    "DOG": ("dog", "dogs", "狗", "小狗"),
    "WIFE": ("wife", "妻子", "老婆", "太太"),
    "HUSBAND": ("husband", "丈夫", "老公"),
    "SON": ("son", "儿子"),
    "DAUGHTER": ("daughter", "女儿"),
    "CHILD": ("kid", "kids", "child", "children", "孩子", "小孩"),
    "BIRTHDAY": ("birthday", "生日"),
    "COMPUTER": ("computer", "laptop", "machine", "电脑", "笔记本", "笔记本电脑", "机器"),
    "PHONE": ("phone", "mobile", "手机"),
    "SYSTEM": ("system", "os", "operating system", "系统", "操作系统"),
    "KEYBOARD": ("keyboard", "键盘"),
    "SHORTCUT": ("shortcut", "shortcuts", "keybinding", "keybindings", "快捷键", "键位"),
    "TERMINAL": ("terminal", "shell", "终端", "命令行"),
    "BROWSER": ("browser", "浏览器"),
    "LANGUAGE": ("language", "languages", "语言"),
    "MAIN_BRANCH": ("主分支", "主干", "default branch", "默认分支"),
    "FRONTEND": ("frontend", "front-end", "front end", "前端"),
    "BACKEND": ("backend", "back-end", "back end", "后端"),
    "BEFORE": ("before", "prior", "之前", "以前", "前"),
    "AFTER": ("after", "afterwards", "之后", "以后", "后"),
    "UPPER": ("uppercase", "upper case", "capital", "capitals", "大写"),
    "LOWER": ("lowercase", "lower case", "小写"),
    "PUBLIC": ("public", "公开", "公共"),
    "PRIVATE": ("private", "私有", "私密", "私人"),
    "MORE": ("more", "更多"),
    "LESS": ("less", "fewer", "更少"),
    "BIG": ("big", "large"),
    "SMALL": ("small", "little"),
    "HIGH": ("high", "higher"),
    "LOW": ("low",),
    "HOT": ("hot", "warm", "热", "热的"),
    "COLD": ("cold", "iced", "ice", "冷", "冰", "冰的"),
    "WINDOWS_OS": ("windows", "win", "微软系统"),
    "MAC_OS": ("mac", "macos", "macbook", "osx", "苹果电脑", "苹果系统"),
    "EVERY": ("every", "each", "每", "每个", "每篇", "每次", "每条", "所有的"),
}

# Slot values: two different members of one class on the two sides are a changed value.
VALUE_CLASSES: dict[str, dict[str, tuple[str, ...]]] = {
    "city": {
        "beijing": ("beijing", "北京"), "shanghai": ("shanghai", "上海"), "shenzhen": ("shenzhen", "深圳"),
        "guangzhou": ("guangzhou", "广州"), "hangzhou": ("hangzhou", "杭州"), "chengdu": ("chengdu", "成都"),
        "nanjing": ("nanjing", "南京"), "wuhan": ("wuhan", "武汉"), "xian": ("xi'an", "xian", "西安"),
        "suzhou": ("suzhou", "苏州"), "tianjin": ("tianjin", "天津"), "chongqing": ("chongqing", "重庆"),
        "hongkong": ("hong kong", "香港"), "taipei": ("taipei", "台北"), "tokyo": ("tokyo", "东京"),
        "osaka": ("osaka", "大阪"), "seoul": ("seoul", "首尔"), "singapore": ("singapore", "新加坡"),
        "london": ("london", "伦敦"), "paris": ("paris", "巴黎"), "berlin": ("berlin", "柏林"),
        "munich": ("munich", "慕尼黑"), "amsterdam": ("amsterdam", "阿姆斯特丹"), "new york": ("new york", "纽约"),
        "san francisco": ("san francisco", "旧金山", "三藩市"), "seattle": ("seattle", "西雅图"),
        "boston": ("boston", "波士顿"), "toronto": ("toronto", "多伦多"), "vancouver": ("vancouver", "温哥华"),
        "sydney": ("sydney", "悉尼"), "melbourne": ("melbourne", "墨尔本"), "los angeles": ("los angeles", "洛杉矶"),
        "lisbon": ("lisbon", "里斯本"), "madrid": ("madrid", "马德里"), "rome": ("rome", "罗马"),
        "dublin": ("dublin", "都柏林"), "zurich": ("zurich", "苏黎世"), "vienna": ("vienna", "维也纳"),
        "bangalore": ("bangalore", "班加罗尔"), "dubai": ("dubai", "迪拜"),
    },
    "human_language": {
        "chinese": ("chinese", "mandarin", "中文", "汉语", "简体中文", "普通话", "华语"),
        "english": ("english", "英文", "英语"), "japanese": ("japanese", "日文", "日语"),
        "korean": ("korean", "韩文", "韩语"), "german": ("german", "德文", "德语"),
        "french": ("french", "法文", "法语"), "spanish": ("spanish", "西班牙语", "西语"),
        "cantonese": ("cantonese", "粤语", "广东话"), "traditional chinese": ("traditional chinese", "繁体中文", "繁体"),
    },
    "editor": {
        "vim": ("vim", "vi", "neovim", "nvim"), "emacs": ("emacs",), "nano": ("nano",),
        "vscode": ("vscode", "vs code", "visual studio code", "code-oss", "cursor"),
        "sublime": ("sublime", "sublime text"), "jetbrains": ("pycharm", "intellij", "jetbrains", "webstorm", "goland"),
        "helix": ("helix",), "zed": ("zed",),
    },
    "drink": {
        "coffee": ("coffee", "咖啡", "美式", "拿铁", "latte", "espresso"), "tea": ("tea", "茶", "绿茶", "红茶", "乌龙"),
        "milk": ("milk", "牛奶"), "beer": ("beer", "啤酒"), "juice": ("juice", "果汁"), "water": ("water", "水"),
        "wine": ("wine", "葡萄酒", "红酒"),
    },
    "weekday": {
        "monday": ("monday", "mondays", "周一", "星期一", "礼拜一"), "tuesday": ("tuesday", "tuesdays", "周二", "星期二"),
        "wednesday": ("wednesday", "wednesdays", "周三", "星期三"),
        "thursday": ("thursday", "thursdays", "周四", "星期四"), "friday": ("friday", "fridays", "周五", "星期五"),
        "saturday": ("saturday", "saturdays", "周六", "星期六"),
        "sunday": ("sunday", "sundays", "周日", "星期日", "星期天"),
        "saturday+sunday": ("weekend", "weekends", "周末", "双休日"),  # two values: "周末" = "周六周日"
    },
    "os": {
        "linux": ("linux", "ubuntu", "debian", "fedora", "arch", "archlinux", "centos"),
        "macos": ("macos", "mac", "macbook", "osx", "苹果电脑", "苹果系统"), "windows": ("windows", "win11", "win10"),
    },
    "shell": {"bash": ("bash",), "zsh": ("zsh", "oh-my-zsh"), "fish": ("fish",), "powershell": ("powershell",)},
    "job": {"doctor": ("doctor", "physician", "医生", "大夫"), "nurse": ("nurse", "护士"),
            "teacher": ("teacher", "老师", "教师"), "engineer": ("engineer", "工程师"),
            "programmer": ("programmer", "developer", "程序员", "开发者"), "designer": ("designer", "设计师"),
            "lawyer": ("lawyer", "律师"), "accountant": ("accountant", "会计"), "student": ("student", "学生"),
            "researcher": ("researcher", "研究员"), "manager": ("manager", "经理")},
    "pet": {"cat": ("cat", "猫", "猫咪"), "dog": ("dog", "狗", "小狗"), "rabbit": ("rabbit", "兔子"),
            "parrot": ("parrot", "鹦鹉"), "hamster": ("hamster", "仓鼠")},
}
# Pet and OS words are values first (two pets, two systems): drop them from the plain concepts.
for _gone in ("CAT", "DOG", "WINDOWS_OS", "MAC_OS"):
    CONCEPTS.pop(_gone)

# Opposites. One side holding one member and the other side the other flips the polarity of the pair.
ANTONYMS: tuple[tuple[str, str], ...] = (
    ("LIKE", "DISLIKE"), ("DARK", "LIGHT"), ("TABS", "SPACES"), ("OPEN_", "CLOSE_"), ("EARLY", "LATE"),
    ("MORNING", "EVENING"), ("SINGLE_QUOTE", "DOUBLE_QUOTE"), ("SHORT", "DETAILED"), ("SHORT", "LONG"),
    ("ADD", "REMOVE"), ("EXCEED", "WITHIN"), ("UPPER", "LOWER"), ("PUBLIC", "PRIVATE"), ("MORE", "LESS"),
    ("BIG", "SMALL"), ("HIGH", "LOW"), ("HOT", "COLD"), ("FRONTEND", "BACKEND"), ("VEGETARIAN", "MEAT"),
    ("WAKE", "SLEEP"), ("POLITE", "RUDE"),
)

_CN_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10000}
_CN_NUMERAL = set(_CN_DIGITS) | set(_CN_UNITS)
_EN_NUMBERS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
_EN_NUMBERS.update(once=1, twice=2, thrice=3, half=0.5, dozen=12)
# Measure words after a Chinese numeral make it a number ("两杯", "三点"), not part of a word ("统一", "一直").
_CN_MEASURES = set("个杯次天张点岁年月周号日小时分钟秒人篇条本页行种位台遍倍层级章节顿瓶块份寸字元斤米度只件双首部门辆套")


# --------------------------------------------------------------------------------------------------------------
# Tokens

@dataclass(frozen=True)
class Unit:
    """One piece of a text: kind is frame, negation, negchange, change, concept, value or content."""

    kind: str
    key: str  # concept key, "class:value", or the canonical content string
    weight: float = 1.0


_TOKEN = re.compile(r"""
    (?P<url>https?://[^\s，。；、）)]+)
  | (?P<path>(?:~|\.{1,2})?/[\w.\-~/]*\w|~|[\w\-]+(?:/[\w.\-]+)+|\w+\.(?:py|js|ts|md|json|yaml|yml|toml|txt|cfg|ini|sh|rs|go|html|css|lock)\b)
  | (?P<num>\d+(?:[.:/\-]\d+)*(?:%|[a-zA-Z]{1,2}\b)?)
  | (?P<word>[A-Za-z]+(?:['_.\-][A-Za-z]+)*[+#]*)
  | (?P<cjk>[\u3400-\u4dbf\u4e00-\u9fff]+)
""", re.VERBOSE | re.ASCII)  # ASCII: \w in paths must not swallow the Chinese around them

_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_LATIN_CHAR = re.compile(r"[A-Za-z]")


def _stem_en(word: str) -> str:
    """Light English stemming so "uses"/"use", "indented"/"indent" meet; both sides get the same treatment."""
    w = word.lower()
    if w.endswith("'s"):
        w = w[:-2]
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w.endswith("ss"):
            return w[: len(w) - len(suffix)] + keep
    return w


def _build_lexicon() -> tuple[dict[str, Unit], dict[tuple[str, ...], Unit], int]:
    """Surface form -> Unit, for CJK words (longest match) and latin words / phrases (up to 3 words).
    Earlier kinds win: a word that is both a concept and a frame word is a concept."""
    cjk: dict[str, Unit] = {}
    latin: dict[tuple[str, ...], Unit] = {}

    def put(surface: str, unit: Unit) -> None:
        if _CJK_CHAR.search(surface):
            cjk.setdefault(surface, unit)
        else:
            latin.setdefault(tuple(surface.lower().split()), unit)

    for surface in NOT_NEGATION_ZH:
        put(surface, Unit("content", surface, len(surface)))
    for surface in ("no longer", "no more", "不再"):
        put(surface, Unit("negchange", surface, 1))
    for surface in NEGATION_EN | NEGATION_ZH:
        put(surface, Unit("negation", surface, 0))
    for cls, members in VALUE_CLASSES.items():
        for value, surfaces in members.items():
            for surface in surfaces:
                put(surface, Unit("value", f"{cls}:{value}", 2))
    for key, surfaces in CONCEPTS.items():
        for surface in surfaces:
            put(surface, Unit("concept", key, 2))
    for surface in CHANGE_STRONG_EN + CHANGE_STRONG_ZH:
        put(surface, Unit("change", surface, 1))
    for surface in CHANGE_EN + CHANGE_ZH:
        put(surface, Unit("change", surface, 0))  # weight 0: a weak marker
    for surface in FRAME_EN | FRAME_ZH:
        put(surface, Unit("frame", surface, 0))
    return cjk, latin, max(len(s) for s in cjk)


_CJK_LEXICON, _LATIN_LEXICON, _CJK_LONGEST = _build_lexicon()
_LATIN_STEMMED = {tuple(_stem_en(w) for w in k): u for k, u in _LATIN_LEXICON.items()}
# Values of two characters or more, found anywhere in a CJK run before the rest is segmented.
_CJK_VALUES = {s: u for s, u in _CJK_LEXICON.items() if u.kind == "value" and len(s) >= 2}
_CJK_VALUE_LONGEST = max(len(s) for s in _CJK_VALUES)


def _numeral_end(run: str, i: int) -> int:
    """End of a Chinese numeral starting at i when a measure word follows it ("两杯", "三点"), else i."""
    j = i
    while j < len(run) and run[j] in _CN_NUMERAL:
        j += 1
    return j if j < len(run) and run[j] in _CN_MEASURES else i


def _numeral_run_end(run: str, i: int) -> int:
    while i < len(run) and run[i] in _CN_NUMERAL:
        i += 1
    return i


def _cn_number(numerals: str) -> int:
    """"两" -> 2, "十二" -> 12, "二十七" -> 27, "两千" -> 2000, "一万五千" -> 15000."""
    total = section = digit = 0
    for c in numerals:
        if c in _CN_DIGITS:
            digit = _CN_DIGITS[c]
        elif c == "万":
            total += (section + digit) * 10000
            section = digit = 0
        else:
            section += (digit or 1) * _CN_UNITS[c]
            digit = 0
    return total + section + digit


def _cn_time_or_number(run: str, i: int, end: int) -> tuple[str, int]:
    """The number at run[i:end] and where reading goes on: "六点半" -> 6:30, "八点十五分" -> 8:15, "百分之八十" ->
    80%, otherwise the plain number (the measure word after it is read as usual)."""
    n = _cn_number(run[i:end])
    if run.startswith("点半", end):
        return f"{n}:30", end + 2
    if run.startswith("点", end):
        m_end = _numeral_end(run, end + 1)
        if m_end > end + 1 and run.startswith("分", m_end):
            return f"{n}:{_cn_number(run[end + 1:m_end]):02d}", m_end + 1
    return str(n), end


def _segment_cjk(run: str) -> list[Unit]:
    """Values first (so "每周五" holds 周五, not 每周 + 五), then the rest between them by `_segment_words`."""
    out: list[Unit] = []
    start = i = 0
    while i < len(run):
        for size in range(min(_CJK_VALUE_LONGEST, len(run) - i), 1, -1):
            unit = _CJK_VALUES.get(run[i:i + size])
            if unit is not None:
                out.extend(_segment_words(run[start:i]))
                out.append(unit)
                i = start = i + size
                break
        else:
            i += 1
    out.extend(_segment_words(run[start:]))
    return out


def _segment_words(run: str) -> list[Unit]:
    """Longest match against the lexicon; a numeral before a measure word is a number ("两杯", "三点"; "一张" is
    the number 1, which `one_sided_values` treats as an article); the characters left between known words are
    content: each character and each bigram ("医生" and "医院" share a character but no bigram)."""
    out: list[Unit] = []
    unknown: list[str] = []

    def flush_unknown() -> None:
        if len(unknown) == 1:
            out.append(Unit("content", unknown[0], 1))
        else:  # characters at half weight, bigrams at full: both were measured equal, together they are steadier
            out.extend(Unit("content", c, 0.5) for c in unknown)
            out.extend(Unit("content", unknown[k] + unknown[k + 1], 1) for k in range(len(unknown) - 1))
        unknown.clear()

    i = 0
    while i < len(run):
        if unknown and (_numeral_end(run, i) > i or run.startswith("百分之", i) or any(
                run[i:i + size] in _CJK_LEXICON for size in range(1, _CJK_LONGEST + 1))):
            flush_unknown()
        if run.startswith("百分之", i) and _numeral_run_end(run, i + 3) > i + 3:
            end = _numeral_run_end(run, i + 3)
            out.append(Unit("value", f"num:{_cn_number(run[i + 3:end])}%", 2))
            i = end
            continue
        end = _numeral_end(run, i)
        if end > i:
            value, i = _cn_time_or_number(run, i, end)
            out.append(Unit("value", f"num:{value}", 2))
            continue
        for size in range(min(_CJK_LONGEST, len(run) - i), 0, -1):
            unit = _CJK_LEXICON.get(run[i:i + size])
            if unit is not None:
                out.append(unit)
                i += size
                break
        else:
            unknown.append(run[i])
            i += 1
    if unknown:
        flush_unknown()
    return out


def _canonical_number(text: str) -> str:
    """Leading zeros dropped per part ("08:00" -> "8:00"); versions keep their parts ("3.10" stays "3.10")."""
    parts = re.split(r"([.:/\-])", text.lower())
    return "".join((p.lstrip("0") or "0") if p.isdigit() else p for p in parts)


def _number_units(tok: str) -> list[Unit]:
    """"7am" is 7 in the morning, "7pm" 7 in the evening; other suffixes (18px, 4k, 80%) stay with the number."""
    low = tok.lower()
    if low.endswith(("am", "pm")) and low[:-2].replace(":", "").isdigit():
        daypart = "MORNING" if low.endswith("am") else "EVENING"
        return [Unit("concept", daypart, 2), Unit("value", f"num:{_canonical_number(low[:-2])}", 2)]
    return [Unit("value", f"num:{_canonical_number(low)}", 2)]


def _split_words(words: list[str]) -> list[str]:
    """Hyphenated words the lexicon does not know are their parts: "Google-style" is google + style."""
    out = []
    for w in words:
        if "-" in w and (w.lower(),) not in _LATIN_LEXICON:
            out.extend(p for p in w.split("-") if p)
        else:
            out.append(w)
    return out


def _latin_units(words: list[str], in_cjk_text: bool, sentence_start: bool) -> list[Unit]:
    """Phrases from the lexicon (up to 3 words), then single words. A latin word inside Chinese text is a name
    (a value); in English text a capitalised word mid-sentence or an identifier is one."""
    out: list[Unit] = []
    i = 0
    while i < len(words):
        for size in (3, 2, 1):
            chunk = words[i:i + size]
            if len(chunk) < size:
                continue
            unit = _LATIN_LEXICON.get(tuple(w.lower() for w in chunk)) or _LATIN_STEMMED.get(
                tuple(_stem_en(w) for w in chunk))
            if unit is not None:
                out.append(unit)
                i += size
                break
        else:
            word = words[i]
            if word.lower() in _EN_NUMBERS:
                out.append(Unit("value", f"num:{_EN_NUMBERS[word.lower()]}", 2))
            elif in_cjk_text or _looks_like_name(word, first=sentence_start and i == 0):
                out.append(Unit("value", f"name:{_stem_en(word)}", 2))
            else:
                out.append(Unit("content", _stem_en(word), 2))
            i += 1
    return out


def _looks_like_name(word: str, first: bool) -> bool:
    """A proper name or identifier in English text: capitalised mid-sentence, ALLCAPS, or with inner punctuation."""
    if any(c in word for c in "_+#.") or (len(word) > 1 and word.isupper()):
        return True
    return word[:1].isupper() and not first


@dataclass(frozen=True)
class Analysis:
    text: str
    lang: str  # zh | en: the language its content words are in
    units: tuple[Unit, ...]
    negations: int
    change: bool  # announces a change ("now", "现在", "switched to", "改用")
    strong_change: bool  # ...in words that say the value changed ("switched to", "改用", "搬到")

    @property
    def meaning(self) -> Counter:
        """Concept, value and content keys with their weights: what the text says, frame words left out."""
        c: Counter = Counter()
        for u in self.units:
            if u.kind in ("concept", "value", "content"):
                c[u.key] = max(c[u.key], u.weight)
        return c

    @property
    def values(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for u in self.units:
            if u.kind == "value":
                cls, _, val = u.key.partition(":")
                out.setdefault(cls, set()).add(val)
        return out

    @property
    def concepts(self) -> set[str]:
        return {u.key for u in self.units if u.kind == "concept"}

    @property
    def latin_words(self) -> set[str]:
        """Every latin word of the text and its hyphen parts, stemmed: where a name from the other side may be."""
        words = re.findall(r"[A-Za-z][A-Za-z'_\-.+#]*", self.text)
        return {_stem_en(p) for w in words for p in [w, *w.split("-")] if p}


def _expand(unit: Unit) -> list[Unit]:
    """A word that stands for several values or concepts ("weekend" = saturday + sunday, "博文" = blog + article)
    becomes one unit each."""
    if unit.kind == "concept" and "+" in unit.key:
        return [Unit("concept", k, unit.weight) for k in unit.key.split("+")]
    if unit.kind != "value" or "+" not in unit.key or unit.key.startswith(("name:", "path:", "num:")):
        return [unit]
    cls, _, vals = unit.key.partition(":")
    return [Unit("value", f"{cls}:{v}", unit.weight) for v in vals.split("+")]


def language(text: str) -> str:
    """"zh" when the text is written in Chinese, code-switched or not ("项目用Python 3.11", "用vim"); else "en"."""
    cjk, latin = len(_CJK_CHAR.findall(text)), len(_LATIN_CHAR.findall(text))
    return "zh" if cjk and cjk * 4 >= latin else "en"


@lru_cache(maxsize=4096)  # a stored memory is the neighbour of many candidates; Analysis is immutable
def analyse(text: str) -> Analysis:
    """Split `text` into units (script-aware) and count its negations and change markers."""
    lang = language(text)
    units: list[Unit] = []
    words: list[str] = []
    sentence_start = True

    def flush() -> None:
        nonlocal sentence_start
        if words:
            units.extend(_latin_units(_split_words(words), in_cjk_text=lang == "zh", sentence_start=sentence_start))
            words.clear()
            sentence_start = False

    last = 0
    for m in _TOKEN.finditer(text):
        if re.search(r"[.!?;:。！？；]", text[last:m.start()]):
            flush()
            sentence_start = True
        last = m.end()
        kind, tok = m.lastgroup, m.group()
        if kind == "word":
            words.append(tok.rstrip("."))
            continue
        flush()
        sentence_start = False
        if kind in ("url", "path"):
            units.append(Unit("value", f"path:{tok.rstrip('/').lower()}", 2))
        elif kind == "num":
            units.extend(_number_units(tok))
        else:
            units.extend(_segment_cjk(tok))
    flush()
    units = [part for u in units for part in _expand(u)]
    negations = sum(1 for u in units if u.kind in ("negation", "negchange"))
    change = any(u.kind in ("change", "negchange") for u in units)
    strong = any(u.kind in ("change", "negchange") and u.weight > 0 for u in units)
    return Analysis(text, lang, tuple(units), negations, change, strong)


# --------------------------------------------------------------------------------------------------------------
# Rules. Each says what it found (or nothing); `compare` weighs them.

_SECOND_OF = {y: x for x, y in ANTONYMS}  # an antonym's second member -> its first
_FIRST = {x for x, _ in ANTONYMS}


def changed_values(a: Analysis, b: Analysis) -> list[str]:
    """Values of one kind replaced by others: "3.11" -> "3.12", 上海 -> 北京, vim -> emacs, 8:00 -> 9:00.

    Only a replaced value counts: a value on one side alone is an added detail, not a change. A name (a latin
    word in Chinese text, a proper name) is also looked for among all the other side's latin words, since "vim"
    in "用户用vim" is a plain word in "the user uses vim".
    """
    found = []
    va, vb = a.values, b.values
    for cls in sorted(set(va) & set(vb)):
        only_a, only_b = va[cls] - vb[cls], vb[cls] - va[cls]
        if cls == "name":
            only_a = {n for n in only_a if n not in b.latin_words}
            only_b = {n for n in only_b if n not in a.latin_words}
        elif cls == "num":
            only_a, only_b = _unmatched_numbers(only_a, only_b)
        if only_a and only_b:
            found.append(f"{cls} {'/'.join(sorted(only_a))} -> {'/'.join(sorted(only_b))}")
    return found


def _unmatched_numbers(a: set[str], b: set[str]) -> tuple[set[str], set[str]]:
    """Numbers written differently are the same: "2024-03-15" on one side, "3" and "15" on the other."""
    def parts(ns: set[str]) -> set[str]:
        return {p for n in ns for p in re.split(r"[.:/\-]", n)}

    pa, pb = parts(a), parts(b)
    return ({n for n in a if not set(re.split(r"[.:/\-]", n)) <= pb},
            {n for n in b if not set(re.split(r"[.:/\-]", n)) <= pa})


def one_sided_values(a: Analysis, b: Analysis) -> list[str]:
    """Values (numbers, paths, names, ...) that only one side mentions: a detail the other fact lacks, which
    makes the two different facts ("用户喜欢喝咖啡" / "每天早上要喝两杯咖啡", "用vim" / "vim配置放在~/.vimrc")."""
    va, vb = a.values, b.values
    out = []
    for mine, theirs, other in ((va, vb, b), (vb, va, a)):
        for cls, vals in mine.items():
            for v in sorted(vals - theirs.get(cls, set())):
                if cls == "name" and v in other.latin_words:
                    continue
                if cls == "num" and (v == "1" or v in {p for ns in theirs.get("num", set())
                                                       for p in re.split(r"[.:/\-]", ns)}):
                    continue  # "一张封面图" / "a cover image": one alone is an article, not a detail
                out.append(f"{cls}:{v}")
    return out


def polarity(x: Analysis, other: Analysis) -> int:
    """0 or 1: the parity of the text's negations plus its antonyms' second members ("light", "spaces",
    "dislike", "关闭", "以内") whose slot the other text also fills. Two texts of one fact have the same parity
    however they phrase it: "never tabs" and "always spaces" are both 1, "不喜欢咖啡" and "讨厌咖啡" both 1,
    "不吃肉" and "吃素" both 0. An opposite the other text has no slot for ("a small company") is a detail."""
    slots = {_SECOND_OF.get(k, k) for k in other.concepts if k in _FIRST or k in _SECOND_OF}
    seconds = len({u.key for u in x.units if u.kind == "concept" and _SECOND_OF.get(u.key) in slots})
    return (x.negations + seconds) % 2


def polarity_flipped(a: Analysis, b: Analysis) -> tuple[bool, str]:
    """One side negates what the other affirms: its negations or its opposites differ in parity."""
    if polarity(a, b) == polarity(b, a):
        return False, ""
    parts = []
    if a.negations % 2 != b.negations % 2:
        parts.append("negation")
    parts.extend(antonym_flips(a, b))
    return True, " and ".join(parts) or "opposites"


def antonym_flips(a: Analysis, b: Analysis) -> list[str]:
    """Opposite concepts, one on each side: dark/light, tabs/spaces, like/dislike, 开启/关闭, 早/晚, 超过/以内."""
    ca, cb = a.concepts, b.concepts
    flips = []
    for x, y in ANTONYMS:
        if (x in ca and y in cb and y not in ca and x not in cb) or (y in ca and x in cb and x not in ca and y not in cb):
            flips.append(f"{x.lower().rstrip('_')}/{y.lower().rstrip('_')}")
    return flips


@dataclass(frozen=True)
class Overlap:
    """Weights of the meaning both sides share and of what each says alone."""

    shared: float
    only_a: float
    only_b: float
    comparable: bool  # both sides in one language: their content words can be matched
    only_a_keys: tuple[str, ...] = ()
    only_b_keys: tuple[str, ...] = ()

    @property
    def jaccard(self) -> float:
        total = self.shared + self.only_a + self.only_b
        return self.shared / total if total else 1.0

    def differ(self) -> str:
        return f"{'+'.join(self.only_a_keys) or '-'} / {'+'.join(self.only_b_keys) or '-'}"


def overlap(a: Analysis, b: Analysis, ignore: Sequence[str] = ()) -> Overlap:
    """What both texts say and what each says alone, leaving out the value classes in `ignore`. Antonyms count
    as one key (the slot), their sign is the polarity rule's business. Across languages only concepts and values
    can be matched; the untranslated content words are left out (they are no evidence either way)."""
    skip = tuple(f"{cls}:" for cls in ignore)

    def keyed(x: Analysis) -> Counter:
        c: Counter = Counter()
        for k, w in x.meaning.items():
            if (a.lang != b.lang and not _comparable(k)) or k.startswith(skip):
                continue
            k = _SECOND_OF.get(k, k)
            c[k] = max(c[k], w)
        return c

    ma, mb = keyed(a), keyed(b)
    if a.lang != b.lang:  # a name inside the Chinese text is a plain word in the English one
        for mine, theirs, other in ((ma, mb, b), (mb, ma, a)):
            for key in [k for k in mine if k.startswith("name:")]:
                if key[5:] in other.latin_words and key not in theirs:
                    theirs[key] = mine[key]
    shared = sum(min(ma[k], mb[k]) for k in ma if k in mb)
    only_a = tuple(sorted(k for k in ma if k not in mb))
    only_b = tuple(sorted(k for k in mb if k not in ma))
    return Overlap(shared, sum(ma[k] for k in only_a), sum(mb[k] for k in only_b), a.lang == b.lang, only_a, only_b)


def _comparable(key: str) -> bool:
    """Concept keys are uppercase, values are "class:value"; content words (lowercase, or Chinese) are neither."""
    return ":" in key or (key.isupper() and key.isascii())


# --------------------------------------------------------------------------------------------------------------
# Decisions

def compare(candidate: str, existing: str, distance: float, th: Thresholds) -> PairVerdict:
    """How `candidate` relates to one `existing` memory at cosine `distance`."""
    if distance > th.related:
        return PairVerdict("new", f"different topic (distance {distance:.2f})", False)
    a, b = analyse(existing), analyse(candidate)
    close = distance <= th.paraphrase
    ov = overlap(a, b)
    values = changed_values(a, b)
    if values:
        # The same slot: apart from the changed values, the two say the same thing (or the candidate says it changed).
        rest = overlap(a, b, ignore=[v.split(" ", 1)[0] for v in values])
        same_slot = rest.jaccard >= (MIN_OVERLAP if rest.comparable else CROSS_MIN_OVERLAP)
        if (same_slot and (close or rest.shared > 0)) or (b.strong_change and not a.strong_change):
            return PairVerdict("update", f"changed value: {'; '.join(values)}", False)
        return PairVerdict("new", f"another value ({'; '.join(values)}) of another fact ({rest.differ()})", True)
    flipped, flip_reason = polarity_flipped(a, b)
    if flipped:
        if close or (ov.comparable and ov.only_a == ov.only_b == 0):
            return PairVerdict("update", f"polarity flipped ({flip_reason})", False)
        return PairVerdict("new", f"the opposite ({flip_reason}) of a related fact", True)
    extra = one_sided_values(a, b)
    if extra:
        if close and b.strong_change and not a.strong_change:  # "用户用npm" -> "switched to pnpm"
            return PairVerdict("update", f"announced as a change ({', '.join(extra)})", True)
        return PairVerdict("new", f"a different detail ({', '.join(extra)})", close)
    if ov.comparable:
        return _compare_same_language(b, a, ov, distance, close, th)
    return _compare_across_languages(b, a, ov, distance, close, th)


# Share of the meaning (weighted Jaccard of concepts, values and content words) two same-language texts must have
# in common to be one fact restated. On the labelled pairs related facts share at most ~0.25 and rewordings
# mostly 0.3 or more, whatever their distance.
MIN_OVERLAP = 0.3
# Across languages only concepts and values are matched, so what they share must weigh more (on the labelled pairs
# cross-language rewordings share 0.5 or more).
CROSS_MIN_OVERLAP = 0.4


def _compare_same_language(b: Analysis, a: Analysis, ov: Overlap, distance: float, close: bool,
                           th: Thresholds) -> PairVerdict:
    """Same language, no value or polarity changed: the distance and the meaning in common decide."""
    if ov.only_a == 0 and ov.only_b == 0 and ov.shared > 0:
        return PairVerdict("duplicate", "restated: the same meaning in other words", False)
    if distance <= th.same:
        return PairVerdict("duplicate", f"practically the same sentence ({ov.differ()})", False)
    if close and ov.only_a > 0 and ov.only_b > 0 and b.strong_change and not a.strong_change:
        return PairVerdict("update", f"announced as a change ({ov.differ()})", True)
    if ov.jaccard >= MIN_OVERLAP:
        return PairVerdict("duplicate", f"restated in other words ({ov.differ()})", not close or ov.jaccard < 0.5)
    return PairVerdict("new", f"a related fact ({ov.differ()})", ov.shared > 0)


def _compare_across_languages(b: Analysis, a: Analysis, ov: Overlap, distance: float, close: bool,
                              th: Thresholds) -> PairVerdict:
    """Across languages only concepts and values are comparable; the encoder's distance carries the rest."""
    if not close:
        if ov.shared > 0 and ov.only_a == 0 and ov.only_b == 0:
            return PairVerdict("duplicate", "restated in another language (distant wording)", True)
        return PairVerdict("new", f"a different fact (distance {distance:.2f})", ov.shared > 0)
    if b.change and not a.change:
        return PairVerdict("update", "announced as a change, in another language", True)
    if ov.jaccard < CROSS_MIN_OVERLAP:
        return PairVerdict("new", f"a different fact, in another language ({ov.differ()})", True)
    sure = ov.shared > 0 and ov.only_a == 0 and ov.only_b == 0
    return PairVerdict("duplicate", f"restated in another language ({ov.differ()})", not sure)


_RANK = {("duplicate", False): 0, ("update", False): 1, ("duplicate", True): 2, ("update", True): 3}


def decide(candidate: str, neighbours: Sequence[Neighbour], th: Thresholds) -> Verdict:
    """The candidate's relation to its nearest stored memories (sorted by distance).

    A sure duplicate of any neighbour wins (nothing to store), then a sure update (supersede that one), then the
    unsure ones, nearest first. Nothing matched: new, borderline (with the neighbour) when it was a close call.
    """
    best: tuple[int, float, Neighbour, PairVerdict] | None = None
    unsure_new: tuple[Neighbour, PairVerdict] | None = None
    for n in neighbours:
        if n.distance > th.related:
            continue
        v = compare(candidate, n.text, n.distance, th)
        rank = _RANK.get((v.action, v.borderline))
        if rank is None:
            if v.borderline and unsure_new is None:
                unsure_new = (n, v)
            continue
        if best is None or (rank, n.distance) < (best[0], best[1]):
            best = (rank, n.distance, n, v)
    if best is not None:
        _, _, n, v = best
        return Verdict(v.action, n.id, f"{v.reason} (distance {n.distance:.2f})", v.borderline)
    if unsure_new is not None:
        n, v = unsure_new
        return Verdict("new", n.id, f"{v.reason} (distance {n.distance:.2f})", True)
    return Verdict("new", None, "no stored memory is about this", False)


def settle(items: Sequence[tuple[str, str, Verdict]], judge: Judge | None) -> list[Verdict]:
    """Let `judge` overrule the borderline verdicts, in one batched call.

    `items` are (candidate text, matched memory's text, verdict). A verdict that is not borderline, has no
    matched memory, or gets no valid answer stands. Exceptions from the judge propagate: the caller logs them
    and keeps the cheap checks' verdicts (a judge is an optimisation, never a reason to lose a write).
    """
    verdicts = list(v for _, _, v in items)
    asked = [i for i, (_, existing, v) in enumerate(items) if v.borderline and v.matched_id and existing]
    if judge is None or not asked:
        return verdicts
    answers = list(judge([(items[i][0], items[i][1]) for i in asked]) or [])
    for i, answer in zip(asked, answers):
        answer = str(answer).strip().lower()
        if answer in ACTIONS:
            v = verdicts[i]
            verdicts[i] = replace(v, action=answer, borderline=False, reason=f"judge: {answer} ({v.reason})")
    return verdicts


def explain(candidate: str, existing: str) -> dict:
    """The units and signals of a pair, for the evaluation script and for debugging a decision."""
    a, b = analyse(existing), analyse(candidate)
    ov = overlap(a, b)
    return {"existing": [(u.kind, u.key) for u in a.units], "candidate": [(u.kind, u.key) for u in b.units],
            "changed_values": changed_values(a, b), "one_sided_values": one_sided_values(a, b),
            "polarity": polarity_flipped(a, b)[1], "shared": ov.shared, "differ": ov.differ(),
            "comparable": ov.comparable}
