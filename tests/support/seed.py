"""The seed blog's check-1 conversation and the extraction answer a model gives for it (tests and benchmarks)."""

SEED_CHAT = [
    {"role": "user", "content": "我习惯用vim编辑器，不要给我推荐nano"},
    {"role": "assistant", "content": "好的，记住了，以后只推荐vim相关的配置。"},
    {"role": "user", "content": "我的项目统一用Python 3.11"},
    {"role": "assistant", "content": "明白，项目统一使用Python 3.11。"},
    {"role": "user", "content": "代码风格遵循PEP8，docstring用Google风格"},
    {"role": "assistant", "content": "好的，代码遵循PEP8，docstring使用Google风格。"},
]
SEED_ANSWER = {"persona": ["用户习惯使用vim编辑器"], "episodic": [],
               "instruction": ["项目统一使用Python 3.11", "代码风格遵循PEP8，docstring用Google风格"]}

# The same three facts said in one turn of `hermes chat -Q -q` (check 1), the memories a model extracts from it (as
# stored: NFKC turns the full-width comma into ","), and check 3's question in a new session.
SEED_TURN = "我习惯用vim编辑器，不要给我推荐nano。我的项目统一用Python 3.11。代码风格遵循PEP8，docstring用Google风格。"
VIM = "用户习惯使用vim编辑器,不要推荐nano"
PY311 = "项目统一使用Python 3.11"
PEP8 = "代码风格遵循PEP8,docstring用Google风格"
QUESTION = "你知道我用什么编辑器吗？"
EXTRACTOR = "你是一个记忆提取助手"  # automem's extraction system prompt (the seed's) starts so


def hermes_rules() -> list:
    """Fake-LLM rules for checks 1 and 3 through Hermes: automem's extraction calls (openai backend) answered with
    the three memories, the agent's question answered from its system prompt, Hermes' auxiliary calls."""
    return [
        {"match": {"system": EXTRACTOR, "user": "我习惯用vim编辑器"},
         "json": {"persona": [VIM], "episodic": [], "instruction": [PY311, PEP8]}},
        {"match": {"system": EXTRACTOR}, "json": {"persona": [], "episodic": [], "instruction": []}},
        {"match": {"user": QUESTION, "system": "用户习惯使用vim编辑器"}, "text": "你习惯用 vim 编辑器（不要 nano）。"},
        {"match": {"no_tools": True}, "text": "title"},
    ]
