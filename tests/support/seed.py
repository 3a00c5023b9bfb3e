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
