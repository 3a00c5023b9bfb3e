"""Hermes' Python: which interpreter runs `hermes`, whether it imports this automem, and the pip install that
makes it do so.

Hermes imports the plugin in its own interpreter, which must be able to `import automem` (of this version).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..version import __version__
from .plugin_files import PACKAGE_DIR, PLUGIN_NAME, Sources

IMPORT_PROBE = "import json, automem; print(json.dumps({'version': automem.__version__, 'file': automem.__file__}))"


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
