"""Install, uninstall and doctor on a Hermes root laid out on disk (no Hermes process: the e2e tests run that),
and the comment-keeping config.yaml editor they use."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
import yaml

from automem import __version__
from automem.cli import main
from automem.hermes import doctor, hermes_python, plugin_files, profile_config, yaml_edit as Y
from automem.paths import Location

HERMES_STYLE = """\
model:
  provider: custom
  default: fake-model   # the model name sent
  base_url: http://127.0.0.1:18080/v1
security:
  tirith_enabled: false
plugins:
  enabled: []
_config_version: 33

# ── Security ───────────────────────────────
# security:
#   redact_secrets: true
"""


# -- the YAML editor -------------------------------------------------------------------------------------------
def edit(text, *ops):
    out = Y.edit_text(text, list(ops))
    assert yaml.safe_load(out) == Y.apply_to_data(yaml.safe_load(text) or {}, list(ops))
    return out


def test_edit_keeps_comments_and_other_keys_of_a_hermes_rendered_config():
    out = edit(HERMES_STYLE, Y.add_item("plugins", "enabled", value="automem"),
               Y.set_value("memory", "provider", value="automem"))
    assert "default: fake-model   # the model name sent" in out
    assert "# ── Security" in out and "#   redact_secrets: true" in out
    assert "  enabled: [automem]" in out
    assert out.index("memory:") < out.index("# ── Security")  # new keys go before the trailing comment blocks
    data = yaml.safe_load(out)
    assert data["memory"] == {"provider": "automem"} and data["_config_version"] == 33


@pytest.mark.parametrize("text,expect_line", [
    ("plugins:\n  enabled:\n    - foo   # mine\n", "    - automem"),
    ("plugins:\n  enabled:\n  - foo\n", "  - automem"),
    ("plugins:\n  enabled: [foo, bar]  # two\n", "  enabled: [foo, bar, automem]  # two"),
    ("plugins:\n  enabled:\n", "  enabled: [automem]"),
    ("plugins: {}\n", "  enabled: [automem]"),
    ("model: {provider: custom}\n", "  enabled: [automem]"),
])
def test_add_to_list_in_every_shape(text, expect_line):
    out = edit(text, Y.add_item("plugins", "enabled", value="automem"))
    assert expect_line in out.splitlines()
    assert edit(out, Y.add_item("plugins", "enabled", value="automem")) == out  # idempotent


def test_set_replaces_a_value_and_keeps_its_comment():
    out = edit("memory:\n  provider: honcho   # cloud\n  memory_enabled: true\n",
               Y.set_value("memory", "provider", value="automem"))
    assert "  provider: automem   # cloud" in out and "memory_enabled: true" in out


def test_remove_and_delete_reverse_the_edits():
    text = "plugins:\n  enabled:\n    - foo\n  disabled: [automem, x]\nmemory:  # m\n  provider: automem\n"
    out = edit(text, Y.remove_item("plugins", "disabled", value="automem"),
               Y.remove_item("plugins", "enabled", value="foo"), Y.delete_key("memory", "provider"))
    data = yaml.safe_load(out)
    assert data == {"plugins": {"enabled": [], "disabled": ["x"]}, "memory": {}}
    assert "# m" in out


def test_unsafe_shapes_fall_back_to_a_full_dump_or_refuse():
    # a flow mapping in the way: the text edit refuses, the dump keeps every value
    text = "memory: {provider: honcho, x: 1}\n"
    out, kept = Y.edit_config(text, [Y.set_value("memory", "provider", value="automem")])
    assert not kept and yaml.safe_load(out) == {"memory": {"provider": "automem", "x": 1}}
    # a list where a mapping must be: the user has to fix it, nothing is overwritten
    with pytest.raises(Y.ShapeError):
        Y.edit_config("plugins:\n- x\n", [Y.add_item("plugins", "enabled", value="automem")])


def test_scalars_are_quoted_when_yaml_would_read_them_differently():
    assert Y.render_scalar("automem") == "automem"
    assert Y.render_scalar("yes") == '"yes"' and Y.render_scalar("1.0") == '"1.0"'
    assert Y.render_scalar("a: b") == '"a: b"'
    out = edit("", Y.set_value("x", "y", value="on"))
    assert yaml.safe_load(out) == {"x": {"y": "on"}}


# -- install / uninstall on disk --------------------------------------------------------------------------------
@pytest.fixture
def no_hermes(monkeypatch, tmp_path):
    """PATH without `hermes`: installs take the folder-layout path and report the missing interpreter."""
    empty = tmp_path / "emptybin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return empty


def hermes_root(tmp_path: Path, text: str = HERMES_STYLE) -> Path:
    root = tmp_path / "h"
    root.mkdir()
    (root / "config.yaml").write_text(text, encoding="utf-8")
    (root / ".env").write_text("X=1\n", encoding="utf-8")
    return root


def cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_install_copies_plugin_and_skill_and_edits_config_with_a_backup(tmp_path, capsys, no_hermes):
    root = hermes_root(tmp_path)
    code, out, err = cli(capsys, "install", "--hermes-home", str(root))
    assert code == 0, err
    src = plugin_files.find_sources()
    assert plugin_files.tree_digest(root / "plugins" / "automem") == plugin_files.tree_digest(src.plugin)
    assert (root / "skills" / "automem" / "SKILL.md").read_bytes() == (src.skill / "SKILL.md").read_bytes()
    data = yaml.safe_load((root / "config.yaml").read_text())
    assert data["plugins"]["enabled"] == ["automem"] and data["memory"]["provider"] == "automem"
    assert data["model"]["default"] == "fake-model"
    assert "# the model name sent" in (root / "config.yaml").read_text()
    backups = list(root.glob("config.yaml.automem-*.bak"))
    assert len(backups) == 1 and backups[0].read_text() == HERMES_STYLE
    assert "`hermes` is not on PATH" in out
    # a second install changes nothing and writes no second backup
    code, out, _ = cli(capsys, "install", "--hermes-home", str(root))
    assert code == 0 and "already installed" in out
    assert len(list(root.glob("config.yaml.automem-*.bak"))) == 1


def test_install_refuses_another_provider_unless_kept(tmp_path, capsys, no_hermes):
    root = hermes_root(tmp_path, HERMES_STYLE + "memory:\n  provider: honcho\n")
    code, out, err = cli(capsys, "install", "--hermes-home", str(root))
    assert code == 2 and "honcho" in err and "--keep-provider" in err
    assert not (root / "plugins" / "automem").exists()
    code, out, err = cli(capsys, "install", "--hermes-home", str(root), "--keep-provider", "--json")
    assert code == 0, err
    data = yaml.safe_load((root / "config.yaml").read_text())
    assert data["memory"]["provider"] == "honcho" and data["plugins"]["enabled"] == ["automem"]
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[0]["provider"] == "honcho" and any(line.get("note") == "fallback" for line in lines)


def test_install_enables_a_plugin_the_user_had_disabled(tmp_path, capsys, no_hermes):
    root = hermes_root(tmp_path, "plugins:\n  enabled: [other]\n  disabled:\n    - automem\n")
    assert cli(capsys, "install", "--hermes-home", str(root))[0] == 0
    data = yaml.safe_load((root / "config.yaml").read_text())
    assert data["plugins"] == {"enabled": ["other", "automem"], "disabled": []}


def test_install_blog_writer_creates_the_profile_from_the_folder_layout(tmp_path, capsys, no_hermes):
    root = hermes_root(tmp_path)
    code, out, err = cli(capsys, "install", "--hermes-home", str(root), "--profile", "blog-writer")
    assert code == 0, err
    home = root / "profiles" / "blog-writer"
    assert "folder layout" in out
    assert (home / "SOUL.md").read_text(encoding="utf-8").startswith("# Blog Writer Agent")
    assert "RFC3339" in (home / "SOUL.md").read_text(encoding="utf-8")
    assert (home / ".env").read_text() == "X=1\n"  # cloned like `hermes profile create --clone`
    data = yaml.safe_load((home / "config.yaml").read_text())
    assert data["toolsets"] == ["hermes-cli", "kanban"]
    assert data["plugins"]["enabled"] == ["automem"] and data["memory"]["provider"] == "automem"
    assert data["model"]["base_url"] == "http://127.0.0.1:18080/v1"
    assert (home / "plugins" / "automem" / "__init__.py").is_file()
    # only the profile asked for; the root gets the dashboard's Memory tab alone (no plugin.yaml: no agent plugin)
    assert sorted(p.name for p in (root / "plugins" / "automem").iterdir()) == ["dashboard"]
    # an unknown profile is not invented
    code, _, err = cli(capsys, "install", "--hermes-home", str(root), "--profile", "nobody")
    assert code == 2 and "does not exist" in err


def test_blog_writer_with_kept_provider_keeps_it(tmp_path, capsys, no_hermes):
    root = hermes_root(tmp_path, HERMES_STYLE + "memory:\n  provider: honcho\n")
    code, _, err = cli(capsys, "install", "--hermes-home", str(root), "--profile", "blog-writer", "--keep-provider")
    assert code == 0, err
    data = yaml.safe_load((root / "profiles" / "blog-writer" / "config.yaml").read_text())
    assert data["memory"]["provider"] == "honcho" and "kanban" in data["toolsets"]


def test_all_profiles_and_uninstall_reverse_the_install(tmp_path, capsys, no_hermes):
    root = hermes_root(tmp_path)
    (root / "profiles" / "editor").mkdir(parents=True)
    (root / "profiles" / "editor" / "config.yaml").write_text("model:\n  default: m\n")
    before = {p: yaml.safe_load(profile_config.config_path(Location(root, p)).read_text())
              for p in ("default", "editor")}
    assert cli(capsys, "install", "--hermes-home", str(root), "--all-profiles")[0] == 0
    for p in ("default", "editor"):
        home = Location(root, p).profile_home
        assert (home / "plugins" / "automem").is_dir() and (home / "skills" / "automem").is_dir()
    code, out, err = cli(capsys, "uninstall", "--hermes-home", str(root), "--all-profiles")
    assert code == 0, err
    for p in ("default", "editor"):
        home = Location(root, p).profile_home
        assert not (home / "plugins" / "automem").exists() and not (home / "skills" / "automem").exists()
        after = yaml.safe_load(profile_config.config_path(Location(root, p)).read_text())
        assert after.get("memory") == {}
        assert after["plugins"]["enabled"] == []
        rest = {k: v for k, v in after.items() if k not in ("memory", "plugins")}
        assert rest == {k: v for k, v in before[p].items() if k not in ("memory", "plugins")}
    assert "store is kept" in out


def test_the_memory_tab_lives_in_the_root_while_any_profile_has_automem(tmp_path, capsys, no_hermes):
    """Hermes' dashboard reads only the root's plugins/ and plugins.enabled: the tab is there whichever profiles have
    automem, and goes with the last of them."""
    root = hermes_root(tmp_path)
    (root / "profiles" / "editor").mkdir(parents=True)
    (root / "profiles" / "editor" / "config.yaml").write_text("model:\n  default: m\n")
    tab = root / "plugins" / "automem" / "dashboard"
    src = plugin_files.find_sources()

    def root_enabled():
        return yaml.safe_load((root / "config.yaml").read_text()).get("plugins", {}).get("enabled")

    code, out, err = cli(capsys, "install", "--hermes-home", str(root), "--profile", "editor")
    assert code == 0, err
    assert plugin_files.tree_digest(tab) == plugin_files.tree_digest(src.plugin / "dashboard")
    assert not (root / "plugins" / "automem" / "plugin.yaml").exists()
    assert root_enabled() == ["automem"] and "restart `hermes dashboard`" in out
    assert yaml.safe_load((root / "config.yaml").read_text()).get("memory") is None  # the root's provider untouched
    checks = {c["name"]: c for c in map(json.loads, cli(capsys, "doctor", "--hermes-home", str(root), "--profile",
                                                           "editor", "--json")[1].splitlines()) if "name" in c}
    assert checks["dashboard tab"]["status"] == "ok"
    # the default profile installed too, then uninstalled: the editor still has automem, so the tab stays
    assert cli(capsys, "install", "--hermes-home", str(root))[0] == 0
    assert (root / "plugins" / "automem" / "__init__.py").is_file() and (tab / "manifest.json").is_file()
    assert cli(capsys, "uninstall", "--hermes-home", str(root))[0] == 0
    assert sorted(p.name for p in (root / "plugins" / "automem").iterdir()) == ["dashboard"]
    assert root_enabled() == ["automem"]
    # the last one goes: so does the tab
    code, out, err = cli(capsys, "uninstall", "--hermes-home", str(root), "--profile", "editor")
    assert code == 0, err
    assert not (root / "plugins" / "automem").exists() and root_enabled() == []
    assert "removed the Memory tab" in out
    # a tab missing or disabled is a doctor failure with its fix
    assert cli(capsys, "install", "--hermes-home", str(root), "--profile", "editor")[0] == 0
    import shutil

    shutil.rmtree(tab)
    checks = {c["name"]: c for c in map(json.loads, cli(capsys, "doctor", "--hermes-home", str(root), "--profile",
                                                           "editor", "--json")[1].splitlines()) if "name" in c}
    assert checks["dashboard tab"]["status"] == "fail" and "automem install" in checks["dashboard tab"]["fix"]


def test_uninstall_leaves_another_provider_alone(tmp_path, capsys, no_hermes):
    root = hermes_root(tmp_path, "memory:\n  provider: honcho\n")
    assert cli(capsys, "install", "--hermes-home", str(root), "--keep-provider")[0] == 0
    assert cli(capsys, "uninstall", "--hermes-home", str(root))[0] == 0
    assert yaml.safe_load((root / "config.yaml").read_text())["memory"] == {"provider": "honcho"}


# -- Hermes' interpreter ---------------------------------------------------------------------------------------
def script(path: Path, first_line: str) -> str:
    path.write_text(first_line + "\nprint('hi')\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_interpreter_from_shebang_env_and_wrapper(tmp_path, monkeypatch):
    import sys

    py = sys.executable
    assert hermes_python.interpreter_of(script(tmp_path / "a", f"#!{py}")) == py
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3").symlink_to(py)
    monkeypatch.setenv("PATH", str(bindir))
    assert hermes_python.interpreter_of(script(tmp_path / "b", "#!/usr/bin/env python3")) == str(bindir / "python3")
    # a shell wrapper next to a venv's python: the python beside it
    assert hermes_python.interpreter_of(script(bindir / "hermes", "#!/bin/sh")) == str(bindir / "python3")
    assert hermes_python.interpreter_of(str(tmp_path / "missing")) is None


def test_interpreter_check_finds_automem_or_prints_the_pip_command(tmp_path, monkeypatch):
    import sys

    bindir = tmp_path / "bin"
    bindir.mkdir()
    script(bindir / "hermes", f"#!{sys.executable}")
    monkeypatch.setenv("PATH", str(bindir))
    src = plugin_files.find_sources()
    monkeypatch.setenv("PYTHONPATH", str(src.project))
    status = hermes_python.ensure_interpreter(src, no_pip=True)
    assert status.action == "ok" and status.automem["version"] == __version__
    monkeypatch.setenv("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONNOUSERSITE", "1")
    found = hermes_python.probe_import(sys.executable)
    if found is None:  # automem not installed into this interpreter: the installer must say what to run
        status = hermes_python.ensure_interpreter(src, no_pip=True)
        assert status.action == "needs-pip"
        assert status.command == [sys.executable, "-m", "pip", "install", "--upgrade", str(src.project)]


# -- doctor -----------------------------------------------------------------------------------------------------
def test_doctor_fails_with_a_fix_for_each_missing_piece(tmp_path, capsys, no_hermes):
    root = hermes_root(tmp_path)
    code, out, _ = cli(capsys, "doctor", "--hermes-home", str(root), "--json")
    checks = {c["name"]: c for c in map(json.loads, out.splitlines())}
    assert code == 1
    for name in ("hermes", "default: plugin", "default: skill", "default: plugins.enabled", "default: memory.provider"):
        assert checks[name]["status"] == "fail" and checks[name]["fix"], name
    assert checks["store"]["status"] == "ok" and checks["spool"]["status"] == "ok"
    assert checks["embedding"]["status"] == "ok" and "512" in checks["embedding"]["detail"]
    assert checks["llm endpoint"]["status"] == "skip"


def test_doctor_after_install_passes_the_profile_checks(tmp_path, capsys, no_hermes):
    root = hermes_root(tmp_path)
    assert cli(capsys, "install", "--hermes-home", str(root))[0] == 0
    code, out, _ = cli(capsys, "doctor", "--hermes-home", str(root), "--json")
    checks = {c["name"]: c for c in map(json.loads, out.splitlines())}
    for name in ("default: plugin", "default: skill", "default: plugins.enabled", "default: memory.provider"):
        assert checks[name]["status"] == "ok", checks[name]
    assert code == 1 and checks["hermes"]["status"] == "fail"  # still: no hermes on PATH here
    # a stale plugin copy is reported
    (root / "plugins" / "automem" / "plugin.yaml").write_text("name: automem\nkind: standalone\n")
    checks = {c.name: c for c in doctor.doctor([Location(root, "default")])}
    assert checks["default: plugin"].status == "warn"
    (root / "plugins" / "automem" / "plugin.yaml").write_text("name: automem\n")
    checks = {c.name: c for c in doctor.doctor([Location(root, "default")])}
    assert checks["default: plugin"].status == "fail" and "standalone" in checks["default: plugin"].detail


def test_doctor_llm_check_against_the_fake_server(tmp_path, monkeypatch):
    from automem.config import Config
    from tests.support.fake_llm import FakeLLM

    with FakeLLM([{"match": {"user": "ping"}, "text": "pong"}]) as llm:
        cfg = Config(extract_backend="openai", extract_base_url=llm.url, extract_api_key="k")
        assert doctor.check_llm_endpoint(cfg).status == "ok"
        assert llm.chat_requests()[0]["body"]["max_tokens"] == 1
        llm.set_rules([{"status": 401, "error": "bad key"}])
        check = doctor.check_llm_endpoint(cfg)
        assert check.status == "fail" and "401" in check.detail and "GLM_API_KEY" in check.fix
    assert doctor.check_llm_endpoint(Config(extract_backend="rules")).status == "skip"


def test_install_writes_through_a_symlinked_config_and_keeps_crlf(tmp_path, capsys, no_hermes):
    root = tmp_path / "h"
    root.mkdir()
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "hermes-config.yaml"
    real.write_bytes(HERMES_STYLE.replace("\n", "\r\n").encode("utf-8"))
    (root / "config.yaml").symlink_to(real)
    code, _, err = cli(capsys, "install", "--no-pip", "--hermes-home", str(root))
    assert code == 0, err
    assert (root / "config.yaml").is_symlink() and (root / "config.yaml").resolve() == real  # the link stays
    raw = real.read_bytes()
    assert b"\r\n" in raw and raw.count(b"\n") == raw.count(b"\r\n")  # every line still ends in CRLF
    data = yaml.safe_load(raw.decode("utf-8"))
    assert data["memory"]["provider"] == "automem" and data["plugins"]["enabled"] == ["automem"]
    [bak] = root.glob("config.yaml.automem-*.bak")
    assert not bak.is_symlink() and bak.read_bytes() == HERMES_STYLE.replace("\n", "\r\n").encode("utf-8")
    code, out, _ = cli(capsys, "uninstall", "--hermes-home", str(root))
    assert code == 0 and (root / "config.yaml").is_symlink()
    assert "automem" not in yaml.safe_load(real.read_text(encoding="utf-8")).get("memory", {}).get("provider", "")
    assert real.read_bytes().count(b"\n") == real.read_bytes().count(b"\r\n")
