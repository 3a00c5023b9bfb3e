"""`hermes memory setup automem`: the settings a user chooses, and the install steps for that profile.

Hermes 0.19's wizard (`hermes_cli/memory_setup.py`) hands the whole flow to a provider's `post_setup()` when it
has one, and `hermes memory setup <name>` never walks the schema at all without it. So automem's `post_setup`
runs `run_setup` here: it asks the questions of `config_schema()` (with the pickers and prompts Hermes passes in,
see `Prompts`), writes the answers to the profile's `automem:` section with the same comment-keeping edit as
`automem install` (`save_settings`), the API key to the profile's `.env` (never to config.yaml), then does what
`automem install` does for that profile and ends with doctor's verdict.

The schema keys are the `automem:` keys of config.yaml. This module never imports Hermes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..config import BACKENDS, USER_SCOPES, WINGS, ZHIPU_BASE_URL, check_settings, load_config, read_dotenv
from ..errors import AutomemError
from ..paths import Location
from ..version import __version__
from . import yaml_edit as Y
from .hermes_python import find_hermes
from .install import install_profile
from .plugin_files import PLUGIN_NAME, find_sources
from .profile_config import ConfigChange, change_config, config_path, provider_of, read_config
from .tab import sync_tab

KEY_ENV = "AUTOMEM_EXTRACT_API_KEY"  # AUTOMEM_<KEY> overrides config.yaml; Hermes loads the profile's .env
OPENAI = {"extract_backend": "openai"}

BACKEND_HELP = {
    "auto": "Hermes' own model; offline rules outside Hermes (openai when a key is set)",
    "openai": "an OpenAI-compatible endpoint (GLM-4-Flash at Zhipu by default)",
    "hermes": "always the model Hermes is configured with",
    "rules": "offline: explicit statements only, nothing leaves the machine",
}
SCOPE_HELP = {
    "per_user": "each gateway chat user has a memory of their own",
    "owner": "a single-owner bot: every gateway user is the owner",
}


def config_schema() -> list[dict]:
    """The fields of Hermes' MemoryProvider.get_config_schema(): key, description, default, choices, secret,
    env_var, url, when (the wizard and the dashboard read them)."""
    return [
        {"key": "extract_backend", "description": "Extraction backend", "choices": list(BACKENDS),
         "default": "auto", "help": BACKEND_HELP},
        {"key": "extract_model", "description": "Extraction model", "default": "glm-4-flash", "when": OPENAI},
        {"key": "extract_base_url", "description": "OpenAI-compatible endpoint (base URL)",
         "default": ZHIPU_BASE_URL, "when": OPENAI},
        {"key": "extract_api_key", "description": "API key for that endpoint", "secret": True,
         "env_var": KEY_ENV, "url": "https://open.bigmodel.cn", "when": OPENAI},
        {"key": "user_scope", "description": "Gateway bots: whose memory a chat user gets",
         "choices": list(USER_SCOPES), "default": "per_user", "help": SCOPE_HELP},
        {"key": "shared_wings", "description": f"Wings every profile reads from all profiles "
                                               f"({', '.join(WINGS)}; comma-separated, or none)",
         "default": "instruction"},
        {"key": "auto_extract", "description": "Extract memories at the end of every session",
         "choices": ["true", "false"], "default": "true"},
    ]


SECRET_KEYS = {f["key"]: f["env_var"] for f in config_schema() if f.get("secret")}


# -- saving ---------------------------------------------------------------------------------------------------
def save_settings(values: dict, hermes_home: str | os.PathLike) -> ConfigChange | None:
    """Write `values` ({automem key: value}) to the `automem:` section of the profile's config.yaml (backup first,
    comments kept). A secret among them goes to the profile's .env instead. ConfigError on a bad value, before
    anything is written."""
    loc = Location.resolve(hermes_home)
    secrets = {SECRET_KEYS[k]: str(v) for k, v in values.items() if k in SECRET_KEYS and str(v or "").strip()}
    plain = {k: _from_form(k, v) for k, v in values.items() if k not in SECRET_KEYS}
    typed = check_settings(plain)
    change = None
    if typed:
        change = change_config(config_path(loc), [Y.set_value("automem", k, value=v) for k, v in typed.items()])
    if secrets:
        write_env(loc.profile_home / ".env", secrets)
    return change


def _from_form(key: str, value):
    """A wizard or dashboard answer as config.yaml holds it (shared_wings: 'none' or '' is the empty list)."""
    if key == "shared_wings" and isinstance(value, str) and value.strip().lower() in ("", "none", "[]"):
        return []
    return value


def write_env(path: Path, values: dict) -> None:
    """Set `NAME=value` lines in a .env: an existing assignment is replaced in place, a new one appended, every
    other line kept; written atomically, mode 0600 (it holds keys)."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    done = set()
    for i, line in enumerate(lines):
        stripped = line.strip()
        name = stripped[len("export "):].lstrip() if stripped.startswith("export ") else stripped
        name = name.split("=", 1)[0].strip() if "=" in name else ""
        if name in values:
            lines[i] = f"{name}={values[name]}"
            done.add(name)
    lines += [f"{name}={value}" for name, value in values.items() if name not in done]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.automem.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


# -- asking ---------------------------------------------------------------------------------------------------
class Cancelled(Exception):
    """The user left the wizard: nothing is saved."""


def _plain_choose(title: str, options: list[tuple[str, str]], default: int) -> int | None:
    print(f"\n  {title}")
    for i, (value, help_) in enumerate(options):
        print(f"   {i + 1}. {value}" + (f" - {help_}" if help_ else ""))
    answer = input(f"  Choice [{default + 1}]: ").strip()
    if not answer:
        return default
    return int(answer) - 1 if answer.isdigit() and 0 < int(answer) <= len(options) else None


def _plain_text(label: str, default: str) -> str:
    answer = input(f"  {label}" + (f" [{default}]" if default else "") + ": ").strip()
    return answer or default


def _plain_secret(label: str) -> str:
    import getpass

    return getpass.getpass(f"  {label}: ").strip()


@dataclass
class Prompts:
    """How the wizard asks. Inside Hermes the provider passes Hermes' own picker and prompts; the defaults read
    standard input (and serve the tests). choose -> index or None (cancelled); text -> the answer or the default;
    secret -> the answer ('' keeps the current one)."""

    choose: Callable[[str, list[tuple[str, str]], int], int | None] = _plain_choose
    text: Callable[[str, str], str] = _plain_text
    secret: Callable[[str], str] = _plain_secret
    say: Callable[[str], None] = print


def current_answers(loc: Location) -> dict:
    """The values the profile has now (its config, over the root's, over the defaults), as answers."""
    cfg = load_config(loc)
    out = {}
    for f in config_schema():
        if f.get("secret"):
            continue
        value = getattr(cfg, f["key"])
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, list):
            value = ", ".join(value) or "none"
        out[f["key"]] = str(value)
    return out


def current_secret(loc: Location, env_var: str) -> str:
    return os.environ.get(env_var) or read_dotenv(loc.profile_home / ".env").get(env_var, "")


def ask(loc: Location, prompts: Prompts, attempts: int = 3) -> tuple[dict, dict]:
    """Walk the schema: ({key: answer} for config.yaml, {env var: secret} for .env). Raises Cancelled."""
    answers = current_answers(loc)
    chosen: dict = {}
    secrets: dict = {}
    for f in config_schema():
        key = f["key"]
        if any(chosen.get(k, answers.get(k)) != v for k, v in (f.get("when") or {}).items()):
            continue
        if f.get("secret"):
            have = current_secret(loc, f["env_var"])
            label = f["description"] + (" (set; blank keeps it)" if have else f" (from {f['url']})")
            value = prompts.secret(label).strip()
            if value:
                secrets[f["env_var"]] = value
            continue
        if f.get("choices"):
            options = [(c, (f.get("help") or {}).get(c, "")) for c in f["choices"]]
            current = answers.get(key, f["default"])
            index = prompts.choose(f["description"], options, f["choices"].index(current)
                                   if current in f["choices"] else 0)
            if index is None or not 0 <= index < len(options):
                raise Cancelled
            chosen[key] = f["choices"][index]
            continue
        for _ in range(attempts):
            value = prompts.text(f["description"], answers.get(key, f["default"])).strip()
            try:
                check_settings({key: _from_form(key, value)})
            except AutomemError as exc:
                prompts.say(f"  ✗ {exc}")
                continue
            chosen[key] = value
            break
        else:
            prompts.say(f"  keeping {key}: {answers.get(key, f['default'])}")
    return chosen, secrets


# -- the whole flow -------------------------------------------------------------------------------------------
@dataclass
class SetupResult:
    code: int  # 0 set up and doctor green, 1 doctor found a problem, 2 cancelled or bad input
    steps: list = field(default_factory=list)


def run_setup(hermes_home: str | os.PathLike, prompts: Prompts | None = None, *,
              python: str | None = None, doctor: bool = True) -> SetupResult:
    """Ask, save, install into this profile, then run `automem doctor` with `python` (Hermes' own)."""
    prompts = prompts or Prompts()
    say = prompts.say
    loc = Location.resolve(hermes_home)
    result = SetupResult(0)

    def step(text: str) -> None:
        result.steps.append(text)
        say(f"  ✓ {text}")

    say(f"\n  Configuring automem {__version__} for profile {loc.profile} ({loc.profile_home}).")
    say("  Answers go to the `automem:` section of its config.yaml; Enter keeps the value shown.\n")
    try:
        chosen, secrets = ask(loc, prompts)
    except (Cancelled, KeyboardInterrupt, EOFError):
        say("\n  Cancelled. No changes saved.\n")
        return SetupResult(2)
    except AutomemError as exc:
        say(f"\n  ✗ {exc}\n")
        return SetupResult(2)
    try:
        change = save_settings(chosen, loc.profile_home)
        if change is not None and change.changed:
            step(f"settings saved to {change.path}" + (f" (backup {change.backup})" if change.backup else ""))
        else:
            step("settings unchanged")
        if secrets:
            write_env(loc.profile_home / ".env", secrets)
            os.environ.update(secrets)  # this process (and the doctor below) sees the new key at once
            step(f"API key saved to {loc.profile_home / '.env'} as {', '.join(secrets)}")
        _, data = read_config(config_path(loc))
        previous = provider_of(data)
        if previous and previous != PLUGIN_NAME:  # the user picked automem in Hermes' wizard: one at a time
            change_config(config_path(loc), [Y.set_value("memory", "provider", value=PLUGIN_NAME)])
            step(f"memory provider {previous} replaced by automem")
        sources = find_sources()
        installed = install_profile(loc, sources, hermes=find_hermes())
        for text in installed.steps + sync_tab(loc.root, sources):
            step(text)
    except AutomemError as exc:
        say(f"\n  ✗ {exc}\n")
        return SetupResult(2, result.steps)
    if doctor:
        # an endpoint the user just typed in is worth one tiny request: a wrong URL or key shows now, not later
        check_llm = load_config(loc).extract_backend == "openai"
        result.code = run_doctor(loc, python or sys.executable, say, check_llm=check_llm)
    say("\n  Start a new session to use automem. `hermes memory status` shows its state.\n")
    return result


def run_doctor(loc: Location, python: str, say: Callable[[str], None], check_llm: bool = False) -> int:
    """`automem doctor` for this profile, with the interpreter Hermes runs: its lines, then the verdict."""
    cmd = [python, "-m", "automem", "doctor", "--hermes-home", str(loc.root), "--profile", loc.profile]
    cmd += ["--check-llm"] if check_llm else []
    say("\n  automem doctor:")
    try:
        # outside the user's folder: `python -m` would import an `automem` folder found there first
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                             cwd=tempfile.gettempdir())
    except (OSError, subprocess.SubprocessError) as exc:
        say(f"  ✗ could not run {' '.join(cmd)}: {exc}")
        return 1
    for line in (res.stdout + res.stderr).splitlines():
        say(f"    {line}")
    say("  ✓ automem is set up" if res.returncode == 0 else
        "  ✗ automem doctor found a problem (above, with its fix)")
    return 0 if res.returncode == 0 else 1
