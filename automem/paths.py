"""Where things live: the Hermes root, the profile, and automem's folders under the root."""

from __future__ import annotations

import os
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
# Hermes 0.19's rule for a profile folder's name (hermes_cli.profiles.validate_profile_name), plus `default`.
_PROFILE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
# The folder that holds the `automem` package: a checkout (or site-packages). Child processes put it on
# PYTHONPATH so they import this very automem.
PACKAGE_PARENT = Path(__file__).resolve().parent.parent


def _user_hermes() -> Path:
    return Path(os.path.expanduser("~")) / ".hermes"


def resolve_root_and_profile(hermes_home: str | os.PathLike | None = None) -> tuple[Path, str]:
    """(root, profile) for a HERMES_HOME value, as Hermes resolves it.

    unset -> ~/.hermes, profile "default"; `<x>/profiles/<name>` -> root `<x>`, profile `<name>`;
    anything else -> that folder is the root, profile "default".
    """
    home = hermes_home if hermes_home not in (None, "") else os.environ.get("HERMES_HOME") or None
    if home is None:
        return _user_hermes(), "default"
    path = Path(os.path.expanduser(str(home))).absolute()
    if path.parent.name == "profiles" and path.name:
        return path.parent.parent, path.name
    return path, "default"


@dataclass(frozen=True)
class Location:
    """A resolved root + profile. Everything automem writes lives under `automem_dir`."""

    root: Path
    profile: str

    @classmethod
    def resolve(cls, hermes_home: str | os.PathLike | None = None, profile: str | None = None) -> "Location":
        root, home_profile = resolve_root_and_profile(hermes_home)
        return cls(root=root, profile=profile or home_profile)

    # -- Hermes folders (read only) -------------------------------------------------
    @property
    def profile_home(self) -> Path:
        """The HERMES_HOME of this profile: the root for `default`, else `<root>/profiles/<name>`."""
        return self.root if self.profile == "default" else self.root / "profiles" / self.profile

    # -- automem folders ------------------------------------------------------------
    @property
    def automem_dir(self) -> Path:
        return self.root / "automem"

    @property
    def chroma_dir(self) -> Path:
        return self.automem_dir / "chroma"

    @property
    def spool_dir(self) -> Path:
        return self.automem_dir / "spool"

    @property
    def dead_dir(self) -> Path:
        return self.automem_dir / "dead"

    @property
    def logs_dir(self) -> Path:
        return self.automem_dir / "logs"

    @property
    def log_file(self) -> Path:
        return self.logs_dir / "automem.log"

    @property
    def write_lock(self) -> Path:
        return self.automem_dir / "write.lock"

    @property
    def cache_dir(self) -> Path:
        return self.automem_dir / "cache"

    def ensure_dirs(self) -> None:
        """Create automem's folders with mode 0700 (memories are personal)."""
        for d in (self.automem_dir, self.chroma_dir, self.spool_dir, self.dead_dir, self.logs_dir, self.cache_dir):
            ensure_private_dir(d)


def ensure_private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    try:
        os.chmod(path, DIR_MODE)
    except OSError:
        pass


def profile_name_problem(name: object) -> str | None:
    """Why `name` cannot be a profile (None: it can). The rule is Hermes' own, so `--profile ../x` never reaches
    a path."""
    if not isinstance(name, str) or not name:
        return "a profile name cannot be empty"
    if name == "default" or _PROFILE_NAME.match(name):
        return None
    return (f"not a profile name: {name!r} (Hermes' rule: lower-case letters, digits, '-' and '_', starting with a "
            f"letter or digit, at most 64 characters)")


def open_private(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8"):
    """Open a file for writing that only its owner can read (0600 whatever the umask; an existing file too)."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if "a" in mode else os.O_TRUNC)
    fd = os.open(path, flags, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        return os.fdopen(fd, mode, encoding=None if "b" in mode else encoding)
    except BaseException:
        os.close(fd)
        raise


def write_private(path: Path, text: str) -> None:
    """Replace `path` atomically with `text` (UTF-8), owner-only."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open_private(tmp) as fh:
        fh.write(text)
    os.replace(tmp, path)


def make_private(top: Path) -> None:
    """Every folder under `top` 0700 and every file 0600 (for files other libraries create: Chroma's). Missing
    files are skipped: another process may be rewriting them."""
    for dirpath, _dirnames, filenames in os.walk(top):
        for name, mode in [(dirpath, DIR_MODE)] + [(os.path.join(dirpath, f), FILE_MODE) for f in filenames]:
            try:
                st = os.lstat(name)
                if (st.st_mode & 0o777) != mode and not os.path.islink(name):
                    os.chmod(name, mode)
            except OSError:
                pass


def sqlite_ro_uri(path: str | os.PathLike) -> str:
    """A read-only SQLite URI for `path`. The path is percent-quoted: a `?` or `#` in a folder name would
    otherwise end the path and open another file (read-write)."""
    return f"file:{urllib.parse.quote(str(Path(path).absolute()))}?mode=ro"
