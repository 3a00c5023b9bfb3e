"""What every `automem` command gets: the `Context` (location, config, store and the Python API, each opened on first
use; `emit` for output), the command registry (`command`), and reading a command's input (a file or stdin, a text
argument)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable

from ..errors import UsageError

COMMANDS: dict[str, Callable[[argparse.Namespace, "Context"], int]] = {}


class Context:
    """What a command needs, opened on first use. Commands on memories go through the Python API
    (`automem.api.Memories`) over this context's store; the CLI only parses arguments and prints."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self._location = None
        self._config = None
        self._store = None
        self._memories: dict[bool, Any] = {}

    @property
    def location(self):
        if self._location is None:
            from ..paths import Location

            self._location = Location.resolve(self.args.hermes_home, one_profile(self.args))
        return self._location

    @property
    def config(self):
        if self._config is None:
            from ..config import load_config

            self._config = load_config(self.location)
            for warning in self._config.warnings:
                self.warn("config", warning)
        return self._config

    @property
    def store(self):
        if self._store is None:
            from ..core.store import open_store

            self._store = open_store(self.location, self.config)
        return self._store

    @property
    def profile(self) -> str:
        return self.location.profile

    @property
    def memories(self):
        """The API speaking for --user (the owner when it is not given), over this context's store."""
        return self._api(self.args.user)

    @property
    def owner(self):
        """The API as the owner acting on the whole root (export, import, share, review's --accept / --reject:
        commands that do not read --user)."""
        return self._api(None)

    def _api(self, user: str | None):
        key = user is None
        if key not in self._memories:
            from ..api import Memories

            self._memories[key] = Memories._over(self.location, lambda: self.config, lambda: self.store, user,
                                                 by="cli", warn=self.warn)
        return self._memories[key]

    def warn(self, kind: str, message: str) -> None:
        if kind == "judge":
            message = (f"the judge could not be asked ({message}); the offline rules decided (--no-judge skips "
                       f"it)")
        print(f"automem: warning: {message}", file=sys.stderr)

    def emit(self, obj: Any, human: str | None = None) -> None:
        """One JSON object with --json, else the human line(s); never a raw control character (a record an older
        automem stored may hold terminal escapes: JSON escapes them, human lines show them as "\\x1b")."""
        from ..text import json_safe, printable

        if self.args.json:
            print(json_safe(json.dumps(obj, ensure_ascii=False)))
        elif human is not None:
            print("\n".join(printable(line) for line in human.split("\n")))

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def command(name: str):
    def register(fn):
        COMMANDS[name] = fn
        return fn

    return register


def one_profile(args: argparse.Namespace) -> str | None:
    profiles = args.profile or []
    return profiles[-1] if profiles else None


def read_input(path: str) -> bytes:
    """The bytes of FILE, or of stdin for "-"; a missing or unreadable file is a usage error."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def check_text_arg(value: str, what: str) -> str:
    """A command-line text argument, refused when the shell passed bytes that are not UTF-8."""
    from ..text import scrub_surrogates

    if scrub_surrogates(value) != value:
        raise UsageError(f"{what} is not valid UTF-8 (the terminal or the shell sent other bytes)")
    return value
