"""The `automem` command line (also `python -m automem`).

Every command takes --hermes-home, --profile and --json. Exit codes: 0 success, 2 bad usage or input (one line on
stderr), 1 any other failure. Heavy modules (chromadb, the embedding model) are imported inside the commands
that need them, so `automem --help` stays instant.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Callable, Iterable

from .errors import AutomemError, StoreUnavailable, UsageError
from .version import __version__

COMMANDS: dict[str, Callable[[argparse.Namespace, "Context"], int]] = {}


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line (and exit 2), like every other bad input."""

    def error(self, message: str):  # noqa: D401 - argparse's signature
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


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
            from .paths import Location

            self._location = Location.resolve(self.args.hermes_home, one_profile(self.args))
        return self._location

    @property
    def config(self):
        if self._config is None:
            from .config import load_config

            self._config = load_config(self.location)
            for warning in self._config.warnings:
                self.warn("config", warning)
        return self._config

    @property
    def store(self):
        if self._store is None:
            from .core.store import open_store

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
            from .api import Memories

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
        from .text import json_safe, printable

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


def _common(defaults: bool) -> argparse.ArgumentParser:
    """The options every command takes, before or after its name. The top level holds the defaults; a
    subcommand's copies default to SUPPRESS, so `automem --json list` and `automem list --json` are the same (a
    subcommand's own default would otherwise overwrite what was given before it)."""
    common = argparse.ArgumentParser(add_help=False)
    g = common.add_argument_group("common options")

    def default(value):
        return value if defaults else argparse.SUPPRESS

    g.add_argument("--hermes-home", metavar="DIR", default=default(None),
                   help="Hermes home (default: $HERMES_HOME, else ~/.hermes); a profile's home selects that profile")
    g.add_argument("--profile", metavar="NAME", action="append", default=default(None),
                   help="profile to act as (default: the one the home points at, else `default`); install, "
                        "uninstall and doctor take it several times")
    g.add_argument("--user", metavar="WHO", default=default(None),
                   help="whose memories: a gateway user as <platform>:<user id> (e.g. telegram:123456789), a chat "
                        "as chat:<platform>:<chat id>, or owner (the default: the owner's profile-wide memory)")
    g.add_argument("--json", action="store_true", default=default(False),
                   help="machine output: one JSON object (per line for streams)")
    return common


MULTI_PROFILE_COMMANDS = ("install", "uninstall", "doctor")


def one_profile(args: argparse.Namespace) -> str | None:
    profiles = args.profile or []
    return profiles[-1] if profiles else None


def check_common(args: argparse.Namespace) -> None:
    """Refuse what would act on the wrong home or profile (exit 2), for every command alike."""
    from .paths import profile_name_problem

    if args.hermes_home is not None and not str(args.hermes_home).strip():
        raise UsageError("--hermes-home is empty; give a folder, or leave the option out to use $HERMES_HOME "
                         "(else ~/.hermes)")
    for name in args.profile or []:
        problem = profile_name_problem(name)
        if problem:
            raise UsageError(f"--profile: {problem}")
    if len(args.profile or []) > 1 and args.command not in MULTI_PROFILE_COMMANDS:
        raise UsageError(f"--profile given {len(args.profile)} times; `{args.command}` acts as one profile "
                         f"(only {', '.join(MULTI_PROFILE_COMMANDS)} take several)")
    if getattr(args, "user", None) is not None and args.command in MULTI_PROFILE_COMMANDS:
        raise UsageError(f"--user does not apply to `{args.command}` (it acts on profiles, not on memories)")


def build_parser() -> argparse.ArgumentParser:
    common = _common(defaults=False)
    parser = Parser(prog="automem", description="Automatic long-term memory for Hermes Agent.",
                    parents=[_common(defaults=True)])
    parser.add_argument("--version", action="version", version=f"automem {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, help_: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_, description=help_, parents=[common])

    p = add("add", "store memories through the write path (duplicate / update / new)")
    p.add_argument("text", nargs="?", help="the memory text")
    p.add_argument("--file", metavar="F.jsonl", help='JSONL lines {"text", "wing", "profile"} ("-" for stdin)')
    p.add_argument("--wing", default="user", choices=("user", "episodic", "instruction"))
    p.add_argument("--no-judge", action="store_true",
                   help="decide with the offline rules only, even when an LLM backend is configured")
    p.add_argument("--no-queue", action="store_true",
                   help="fail when the Chroma server does not answer (by default the memories are queued and "
                        "stored when it answers again)")

    p = add("search", "visible memories by similarity")
    p.add_argument("query", nargs="?")
    p.add_argument("-k", type=int, default=5, help="how many (default 5; a --file line may give its own)")
    p.add_argument("--wing", choices=("user", "episodic", "instruction"))
    p.add_argument("--file", metavar="Q.jsonl",
                   help='many queries in one process ("-" for stdin): lines {"query", "profile"?, "k"?} or a bare '
                        'JSON string; out: one JSON line per query, {"line", "error"} for a bad one')

    p = add("list", "memories, newest first")
    p.add_argument("--wing", choices=("user", "episodic", "instruction"))
    p.add_argument("--all", action="store_true", help="also superseded ones, and the ids of forgotten ones")
    p.add_argument("--all-profiles", action="store_true", help="every profile's memories, not just visible ones")
    p.add_argument("--all-users", action="store_true", help="every person's and chat's memories, not just --user's")
    p.add_argument("--limit", type=int, default=None)

    p = add("forget", "forget memories for good: their words and vectors are deleted everywhere automem keeps them; "
                      "only the id and a hash stay, so automatic sources cannot bring them back (an explicit add can)")
    p.add_argument("ids", nargs="+", metavar="ID")

    p = add("show", "one memory: where it was learned (session, turn, the words it came from), its history, the values "
                    "it replaced and what replaced it")
    p.add_argument("id", metavar="ID")

    p = add("edit", "correct a memory: the new text (checked as `add` checks it) replaces it, with the same wing, "
                    "profile, scope, pin and provenance; the old text stays in its history, superseded (\"edited\")")
    p.add_argument("id", metavar="ID")
    p.add_argument("text", metavar="TEXT")

    p = add("pin", "always put these persona / instruction memories in the system-prompt block, ahead of the "
                   "ranked ones (within its budget); the memories of --profile and --user")
    p.add_argument("ids", nargs="+", metavar="ID")

    p = add("unpin", "let these memories be ranked like the others again")
    p.add_argument("ids", nargs="+", metavar="ID")

    p = add("share", "confirm the owner's instructions for everyone: gateway users (people other than the owner) "
                     "read only confirmed ones; each is checked for secrets, personal data and injection first. "
                     "Without ids: list the instructions awaiting confirmation and the shared ones")
    p.add_argument("ids", nargs="*", metavar="ID")

    p = add("unshare", "withdraw the confirmation: these instructions reach the owner's own profiles only again")
    p.add_argument("ids", nargs="+", metavar="ID")

    p = add("review", "what the write path held back as injection-shaped (from a conversation, never shown to the "
                      "model): list it with the reason (every profile and person unless --profile / --user), "
                      "accept it as a normal memory, or reject it (forgotten for good)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--accept", nargs="+", action="extend", metavar="ID", default=[],
                   help="store these held memories through the write path, as their source would have")
    g.add_argument("--reject", nargs="+", action="extend", metavar="ID", default=[],
                   help="forget these held memories for good (automatic sources cannot hold them again)")
    p.add_argument("--no-judge", action="store_true",
                   help="decide an accepted memory with the offline rules only, even when an LLM backend is set")

    p = add("export", "every memory of every profile as JSONL (ids, text, metadata, status), owner-only file")
    p.add_argument("file", nargs="?", help="output file (default: stdout)")
    p.add_argument("--forgotten", action="store_true",
                   help="also the forgotten memories: id, hash and metadata, never their words")

    p = add("import", "store memories from an export, exactly as exported, each checked as `add` checks it; memories "
                      "forgotten here stay forgotten unless --restore-forgotten")
    p.add_argument("file", help='JSONL from `automem export` ("-" for stdin)')
    p.add_argument("--skip-invalid", action="store_true",
                   help="import the valid lines and report the others (default: an invalid line imports nothing)")
    p.add_argument("--restore-forgotten", action="store_true",
                   help="also the memories forgotten in this store since the export was made (by default they stay "
                        "forgotten: their lines are skipped and counted)")

    add("stats", "counts per profile / wing / status, and the extraction spool")

    p = add("extract", "run the extraction pipeline on a transcript now; print each candidate's decision")
    p.add_argument("file", metavar="FILE|-", help='a JSON list or JSONL of {"role", "content"} messages ("-": stdin)')
    p.add_argument("--session", default="", metavar="ID", help="session id recorded with the memories")
    p.add_argument("--backend", choices=("auto", "openai", "hermes", "rules"),
                   help="override automem.extract_backend for this run")

    p = add("drain", "process the pending extraction jobs now")
    p.add_argument("--retry-dead", action="store_true", help="first move the jobs in dead/ back into the spool")
    p.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                   help="stay for jobs that come due within SECONDS (backing off after a failure)")
    p.add_argument("--own-profile", action="store_true", help="only this profile's jobs (default: every profile)")
    p.add_argument("--quiet", action="store_true", help="print nothing (errors still go to stderr)")
    p.add_argument("--single", action="store_true",
                   help="exit at once when another --single drainer runs (what hooks start)")

    p = add("compact", "merge near-duplicates that raced in (writers on several machines): keep the oldest "
                       "duplicate, supersede stale values; safe at any time, on either kind of store")
    p.add_argument("--dry-run", action="store_true", help="show what would be merged, change nothing")
    p.add_argument("--judge", action="store_true",
                   help="also put the pairs stored as related (related_to) to the LLM judge (needs an LLM backend)")

    add("repair", "what `automem doctor` tells you to run: write back stored numbers that are out of bounds (read "
                  "clamped meanwhile), then rebuild the recall index from the store")

    p = add("migrate", "copy every memory (ids, text, metadata, status, vectors) to a Chroma server or back")
    p.add_argument("--to", required=True, metavar="URL|PATH",
                   help="http(s)://host:port of a Chroma server, or a Hermes root (or its automem/chroma folder)")
    p.add_argument("--tenant", help="server tenant (default: automem.chroma_tenant); created if absent")
    p.add_argument("--database", help="server database (default: automem.chroma_database); created if absent")
    p.add_argument("--merge", action="store_true", help="copy into a target that already holds memories")

    from .hermes.install import add_parsers as add_install_parsers  # install, uninstall, doctor (repeatable --profile)

    add_install_parsers(sub, common)

    p = add("recall", "what a kanban worker of this profile would be shown (past tasks and lessons)")
    p.add_argument("--task", required=True, metavar="TEXT",
                   help="a task id on the board (t_...), or the card's text: first line the title, the rest the body")
    p.add_argument("--board", metavar="SLUG", help="board of a task id (default: the active board)")

    p = add("kanban-sync", "backfill task memories from the board DB for runs that ended without the hook")
    p.add_argument("--board", metavar="SLUG", help="only this board (default: every board with a DB)")

    return parser


def _print_decision(ctx: Context, d) -> None:
    _print_decision_json(ctx, d.to_json())


def read_input(path: str) -> bytes:
    """The bytes of FILE, or of stdin for "-"; a missing or unreadable file is a usage error."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def _read_jsonl(path: str, max_line_bytes: int | None = None) -> Iterable[tuple[int, dict]]:
    from .ops.jsonl import MAX_LINE_BYTES, jsonl_objects

    return jsonl_objects(read_input(path), path, max_line_bytes or MAX_LINE_BYTES)


def check_text_arg(value: str, what: str) -> str:
    """A command-line text argument, refused when the shell passed bytes that are not UTF-8."""
    from .text import scrub_surrogates

    if scrub_surrogates(value) != value:
        raise UsageError(f"{what} is not valid UTF-8 (the terminal or the shell sent other bytes)")
    return value


@command("add")
def cmd_add(args, ctx: Context) -> int:
    from .paths import profile_name_problem

    if (args.text is None) == (args.file is None):
        raise UsageError("give one TEXT or --file F.jsonl")
    if args.file:
        items = []
        for n, obj in _read_jsonl(args.file):
            if not isinstance(obj.get("text"), str):
                raise UsageError(f"{args.file}:{n}: needs a string field \"text\"")
            profile = obj.get("profile") or ctx.profile
            problem = profile_name_problem(profile)
            if problem:
                raise UsageError(f"{args.file}:{n}: {problem}")
            items.append({"text": obj["text"], "wing": obj.get("wing", args.wing), "profile": profile})
    else:
        check_text_arg(args.text, "TEXT")
        items = [{"text": args.text, "wing": args.wing}]
    try:
        decisions = ctx.memories.remember_many(items, judge=not args.no_judge)
    except StoreUnavailable as exc:
        if args.no_queue:
            raise
        jid = ctx.memories.queue_many(items, judge=not args.no_judge)
        n = len(items)
        ctx.emit({"decision": "queued", "job": jid, "memories": n, "error": str(exc)},
                 f"queued    {jid:<26} {n} memor{'y' if n == 1 else 'ies'}: the Chroma server does not answer; "
                 f"stored through the write path as soon as it does (`automem drain`, or any session's drainer)")
        print(f"automem: {exc}", file=sys.stderr)
        return 0
    for d in decisions:
        _print_decision(ctx, d)
    return 2 if any(d.action == "rejected" for d in decisions) and len(decisions) == 1 else 0


def _judge(ctx: Context, details: dict):
    """The LLM judge for a command's writes: the backend extraction would use (None for the offline rules)."""
    from .extract.pipeline import judge_for

    return judge_for(ctx.location, ctx.config, origin="cli", details=details)


def _memory_line(m: dict, distance: float | None = None) -> str:
    """One memory (a record as `--json` prints it) on one line."""
    dist = f"{distance:.3f} " if distance is not None else ""
    marks = ([] if m["status"] == "active" else [m["status"]]) + (["pinned"] if m.get("pinned") else [])
    who = f"/{m['scope']}" if m.get("scope") else ""
    return f"{dist}{m['id']}  [{m['wing']}/{m['profile']}{who}] {m['text']}" + (f" ({', '.join(marks)})" if marks
                                                                                  else "")


@command("search")
def cmd_search(args, ctx: Context) -> int:
    if args.k < 1:
        raise UsageError("-k must be at least 1")
    if (args.query is None) == (args.file is None):
        raise UsageError("give one QUERY or --file Q.jsonl")
    if args.file is not None:
        return search_file(args, ctx)
    check_text_arg(args.query, "QUERY")
    hits = ctx.memories.search(args.query, k=args.k, category=args.wing)
    for h in hits:
        ctx.emit(h.to_json(), _memory_line(h.to_json(), h.distance))
    if not hits and not args.json:
        print("no memories found", file=sys.stderr)
    return 0


MAX_SEARCH_K = 100  # a --file line asking for more is refused (its own error line)


def search_query(obj, where: str, profile: str, k: int) -> tuple[str, str, int]:
    """(query, profile, k) of one `search --file` line; UsageError (one line) if the line is not one."""
    from .paths import profile_name_problem

    if isinstance(obj, str):
        obj = {"query": obj}
    if not isinstance(obj, dict):
        raise UsageError(f"{where}: expected a JSON object {{\"query\", \"profile\"?, \"k\"?}} or a string")
    unknown = sorted(set(obj) - {"query", "profile", "k"})
    if unknown:
        raise UsageError(f"{where}: unknown field {', '.join(map(repr, unknown))} (fields: query, profile, k)")
    query = obj.get("query")
    if not isinstance(query, str) or not query.strip():
        raise UsageError(f"{where}: needs a non-empty string field \"query\"")
    profile = obj.get("profile", profile)
    if not isinstance(profile, str):
        raise UsageError(f"{where}: \"profile\" must be a string")
    problem = profile_name_problem(profile)
    if problem:
        raise UsageError(f"{where}: {problem}")
    k = obj.get("k", k)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_SEARCH_K:
        raise UsageError(f"{where}: \"k\" must be a whole number from 1 to {MAX_SEARCH_K}")
    return query, profile, k


def search_file(args, ctx: Context) -> int:
    """`search --file`: every query of the file in this one process (the model and the store load once), one JSON
    line out per query line, in order; a bad line gets {"line", "error"} and the others still run."""
    from .ops.jsonl import check_line, decode_utf8, loads
    from .text import json_safe

    raw = read_input(args.file)  # a missing file: exit 2
    bad = 0
    for n, line in enumerate(raw.splitlines(), 1):
        where = f"{args.file}:{n}"
        try:
            check_line(line, where)
            text = decode_utf8(line, where)
            if not text.strip():
                continue
            query, profile, k = search_query(loads(text, where), where, ctx.profile, args.k)
        except UsageError as exc:
            bad += 1
            print(json.dumps({"line": n, "error": str(exc)}, ensure_ascii=False), flush=True)
            continue
        mem = ctx.memories if profile == ctx.profile else ctx.memories.with_profile(profile)
        hits = [h.to_json() for h in mem.search(query, k=k, category=args.wing)]
        print(json_safe(json.dumps({"line": n, "query": query, "profile": profile,
                                    "hits": [{key: h[key] for key in ("id", "text", "wing", "profile", "distance")}
                                             for h in hits]}, ensure_ascii=False)),
              flush=True)
    if bad:
        print(f"automem: {bad} line{'s' if bad > 1 else ''} of {args.file} not searched (see their error lines)",
              file=sys.stderr)
    return 0


@command("list")
def cmd_list(args, ctx: Context) -> int:
    if args.limit is not None and args.limit < 0:
        raise UsageError("--limit must be 0 or more")
    items = ctx.memories.list(args.wing, include_hidden=args.all, all_profiles=args.all_profiles,
                              all_users=args.all_users, limit=args.limit)
    for m in items:
        rec = m.to_json()
        if m.text is None:  # forgotten (--all): its id only, the words are gone
            ctx.emit(rec, f"{rec['id']}  [{rec.get('wing')}/{rec.get('profile')}] (forgotten: words deleted)")
        else:
            ctx.emit(rec, _memory_line(rec))
    return 0


@command("forget")
def cmd_forget(args, ctx: Context) -> int:
    for i in args.ids:
        check_text_arg(i, "ID")
    changed = ctx.memories.forget(*args.ids)
    for i in args.ids:
        state = "forgotten" if changed.get(i) else "already forgotten"
        ctx.emit({"id": i, "status": "forgotten", "changed": bool(changed.get(i))}, f"{state:<17} {i}")
    return 0


def _set_pin(args, ctx: Context, value: int) -> int:
    for i in args.ids:
        check_text_arg(i, "ID")
    done = (ctx.memories.pin if value else ctx.memories.unpin)(*args.ids)
    state = "pinned" if value else "unpinned"
    for p in done:
        m = p.memory.to_json()
        ctx.emit({"id": m["id"], "pinned": value, "changed": p.changed},
                 f"{state if p.changed else 'already ' + state:<16} {m['id']}  [{m['wing']}/{m['profile']}] "
                 f"{m['text']}")
    return 0


@command("pin")
def cmd_pin(args, ctx: Context) -> int:
    return _set_pin(args, ctx, 1)


@command("unpin")
def cmd_unpin(args, ctx: Context) -> int:
    return _set_pin(args, ctx, 0)


def _share(args, ctx: Context, everyone: bool) -> int:
    from .errors import Refused

    if args.user is not None:
        raise UsageError("--user does not apply: only the owner's instructions can be shared")
    for i in args.ids:
        check_text_arg(i, "ID")
    refusal = None
    try:
        result = (ctx.owner.share if everyone else ctx.owner.unshare)(*args.ids)
    except Refused as exc:  # every id refused: each line first, then the error
        result, refusal = exc.result, exc
    state = "shared" if everyone else "unshared"
    for i in result.changed:
        ctx.emit({"id": i, "audience": "everyone" if everyone else "owner", "changed": True}, f"{state:<17} {i}")
    for i in result.unchanged:
        ctx.emit({"id": i, "audience": "everyone" if everyone else "owner", "changed": False},
                 f"{'already ' + state:<17} {i}")
    for i, reason in result.refused.items():
        ctx.emit({"id": i, "refused": reason}, f"{'refused':<17} {i}  ({reason})")
    if refusal is not None:
        raise refusal
    return 0


def _when(ts: int) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M", time.localtime(int(ts))) if ts else "?"


def _evidence_lines(m, indent: str) -> list[str]:
    from .core.provenance import Evidence, describe

    ev = Evidence.of(m)
    where = ", ".join(x for x in (f"session {m.session_id}" if m.session_id else "",
                                  f"task {m.task_id}" if m.task_id else "") if x)
    lines = [f"{indent}learned {_when(m.created_at)}" + (f" in {where}" if where else "") + f": {describe(ev)}"]
    if ev.excerpt:
        lines.append(f"{indent}  words: “{ev.excerpt}”")
    return lines


def _show_lines(shown) -> list[str]:
    from .core.history import PRIVATE_SOURCE

    m = shown.memory
    lines = [_memory_line(m.to_json())]
    if shown.private:
        return lines + [f"  source: {PRIVATE_SOURCE}"]
    lines += _evidence_lines(m, "  ")
    for step in shown.replaced:
        what = {"updated_from": "replaced", "edited": "corrected from", "merged": "merged"}.get(step.link, step.link)
        lines.append(f"  {what} {step.id} on {_when(step.at)}: {step.memory.text}"
                     + (f"  ({step.reason})" if step.reason else ""))
        lines += _evidence_lines(step.memory, "    ")
    for step in shown.replaced_by:
        if step.memory is None:
            lines.append(f"  superseded by {step.id} (forgotten)")
            continue
        lines.append(f"  superseded by {step.id} on {_when(step.at)}: {step.memory.text}"
                     + (f"  ({step.reason})" if step.reason else "") + f" [{step.memory.status}]")
    if len(shown.events) > 1 or shown.events and shown.events[0].kind != "created":
        lines.append("  history:")
        for e in shown.events:
            detail = {"created": f"in session {e.session_id}" if e.session_id else "",
                      "restated": (f"{e.which} of {e.count}" + (f", session {e.session_id}" if e.session_id else "")
                                   + (f": “{e.excerpt}”" if e.excerpt else "")),
                      }.get(e.kind, " ".join(x for x in (e.other_id, f"({e.reason})" if e.reason else "") if x))
            lines.append(f"    {_when(e.at)}  {e.kind:<13} {detail}".rstrip())
    return lines


@command("show")
def cmd_show(args, ctx: Context) -> int:
    check_text_arg(args.id, "ID")
    shown = ctx.memories.history(args.id)
    ctx.emit(shown.to_json(), "\n".join(_show_lines(shown)))  # printed without control characters
    return 0


@command("edit")
def cmd_edit(args, ctx: Context) -> int:
    from .errors import Refused

    check_text_arg(args.id, "ID")
    check_text_arg(args.text, "TEXT")
    try:
        d = ctx.memories.edit(args.id, args.text)
    except Refused as exc:
        _print_decision(ctx, exc.decision)
        return 2
    _print_decision(ctx, d)
    return 0


@command("share")
def cmd_share(args, ctx: Context) -> int:
    if args.ids:
        return _share(args, ctx, True)
    listed = ctx.owner.owner_instructions(all_profiles=not args.profile)
    rows = [("awaiting", m) for m in listed if not m.shared] + [("everyone", m) for m in listed if m.shared]
    for state, m in rows:
        ctx.emit({"id": m.id, "audience": "everyone" if state == "everyone" else "owner", "profile": m.profile,
                  "text": m.text}, f"{state:<9} {m.id}  [{m.profile}] {m.text}")
    if not rows and not ctx.args.json:
        print("no instructions of the owner yet")
    elif not ctx.args.json and any(s == "awaiting" for s, _ in rows):
        print("(`automem share ID...` confirms for everyone; `automem unshare ID...` takes it back)")
    return 0


@command("unshare")
def cmd_unshare(args, ctx: Context) -> int:
    return _share(args, ctx, False)


@command("review")
def cmd_review(args, ctx: Context) -> int:
    for i in args.accept + args.reject:
        check_text_arg(i, "ID")
    if args.accept:
        held = list(dict.fromkeys(args.accept))
        for held_id, d in zip(held, ctx.owner.accept_held(*held, judge=not args.no_judge)):
            text = d.text if len(d.text) <= 60 else d.text[:57] + "..."
            wing = d.to_json()["wing"]
            ctx.emit({"accepted": held_id, **d.to_json()},
                     f"accepted  {held_id} -> {d.action} {d.id or d.matched_id or '-'} [{wing}] {text}  ({d.reason})")
        return 0
    if args.reject:
        for i, changed in ctx.owner.reject_held(*args.reject).items():
            ctx.emit({"id": i, "rejected": True, "status": "forgotten", "changed": changed},
                     f"rejected  {i} (forgotten: words deleted)")
        return 0
    items = ctx.memories.review(all_profiles=not args.profile, all_users=args.user is None)
    for m in items:
        room = m.to_json().get("room")
        where = ", ".join(x for x in (f"from {room}" if room else "", f"session {m.session_id}"
                                      if m.session_id else "", f"task {m.task_id}" if m.task_id else "") if x)
        ctx.emit({**m.to_json(), "reason": m.reason},
                 f"held      {_memory_line(m.to_json()).replace(' (held)', '')}\n          why: {m.reason}" +
                 (f"; {where}" if where else ""))
    if not ctx.args.json:
        print("(`automem review --accept ID...` stores it as a memory; `automem review --reject ID...` forgets it for "
              "good)" if items else "nothing held for review")
    return 0


@command("export")
def cmd_export(args, ctx: Context) -> int:
    if args.file:
        n = ctx.owner.export(args.file, forgotten=args.forgotten)
        ctx.emit({"exported": n, "file": args.file}, f"exported {n} memories to {args.file}")
    else:
        sys.stdout.write("".join(line + "\n" for line in ctx.owner.export_lines(forgotten=args.forgotten)))
    return 0


@command("import")
def cmd_import(args, ctx: Context) -> int:
    source = read_input(args.file) if args.file == "-" else args.file
    report = ctx.owner.import_(source, name=args.file, skip_invalid=args.skip_invalid,
                               restore_forgotten=args.restore_forgotten)
    for line in report.skipped:
        print(f"automem: skipped {line}", file=sys.stderr)
    if report.skipped_forgotten:
        n = report.skipped_forgotten
        were = "their memories were" if n > 1 else "its memory was"
        print(f"automem: {n} line{'s' if n > 1 else ''} skipped: {were} forgotten here "
              f"(`automem import --restore-forgotten` imports them again)", file=sys.stderr)
    extra = f", {report.forgotten} forgotten (ids only)" if report.forgotten else ""
    extra += f", {len(report.skipped)} invalid lines skipped" if report.skipped else ""
    extra += f", {report.skipped_forgotten} forgotten here left out" if report.skipped_forgotten else ""
    ctx.emit(report.to_json(), f"imported {report.imported} memories{extra}")
    return 0


@command("stats")
def cmd_stats(args, ctx: Context) -> int:
    from .core.write_path import waiting_for_judge
    from .extract.pipeline import extraction_stats

    stats = ctx.store.stats()
    stats["waiting_for_judge"] = sum(waiting_for_judge(ctx.store).values())
    stats.update(extraction_stats(ctx.location))
    if args.json:
        ctx.emit(stats)
        return 0
    print(f"store: {stats['backend']}, {stats['total']} memories "
          f"({', '.join(f'{k} {v}' for k, v in sorted(stats['by_status'].items())) or 'empty'})")
    for prof, counts in sorted(stats["by_profile"].items()):
        print(f"  profile {prof}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print("  active by wing: " + (", ".join(f"{k} {v}" for k, v in sorted(stats["active_by_wing"].items())) or "-"))
    waiting = stats["waiting_for_judge"]
    print(f"  waiting for a judge: {waiting} pair{'s' if waiting != 1 else ''} kept apart for lack of one")
    for key, value in stats.items():
        if key not in ("total", "by_profile", "active_by_wing", "by_status", "backend", "waiting_for_judge"):
            print(f"{key}: {json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else value}")
    return 0


@command("recall")
def cmd_recall(args, ctx: Context) -> int:
    from .hermes.kanban_recall import recall_for_card

    block = recall_for_card(ctx.location, ctx.config, args.task, board=args.board, store=ctx.store)
    if args.json:
        ctx.emit({"profile": ctx.profile, "task": args.task, "block": block})
    elif block:
        print(block)
    else:
        print("nothing relevant to show", file=sys.stderr)
    return 0


@command("kanban-sync")
def cmd_kanban_sync(args, ctx: Context) -> int:
    from .hermes.kanban_board import list_boards
    from .hermes.kanban_record import kanban_sync

    boards = [args.board] if args.board else [slug for slug, _ in list_boards(ctx.location)]
    if not boards:
        raise UsageError(f"no kanban board under {ctx.location.root}; create one with `hermes kanban init`")
    for board in boards:
        res = kanban_sync(ctx.location, ctx.config, board)  # opens the store only when a board has runs to record
        ctx.emit(res.to_json(), f"board {res.board}: {res.recorded} new task memories, {res.already} already stored"
                                f"{f', {res.rejected} rejected (see automem.log)' if res.rejected else ''}"
                                f" ({res.scanned} ended runs checked)")
    return 0


@command("install")
def cmd_install(args, ctx: Context) -> int:
    from .hermes.install import run_install
    from .hermes.tab import run_sync_tab

    code = run_install(args)
    run_sync_tab(args)  # the dashboard's Memory tab lives in the root, whichever profiles were installed
    return code


@command("uninstall")
def cmd_uninstall(args, ctx: Context) -> int:
    from .hermes.install import run_uninstall
    from .hermes.tab import run_sync_tab

    code = run_uninstall(args)
    run_sync_tab(args)
    return code


@command("doctor")
def cmd_doctor(args, ctx: Context) -> int:
    from .hermes.install import run_doctor

    return run_doctor(args)


@command("compact")
def cmd_compact(args, ctx: Context) -> int:
    from .ops.compact import compact

    judge = None
    if args.judge:
        judge = _judge(ctx, {})
        if judge is None:
            raise UsageError("compact --judge needs an LLM backend: set automem.extract_backend: openai with "
                             "extract_api_key (or $GLM_API_KEY), and dedup_judge: true")
    report = compact(ctx.store, dry_run=args.dry_run, judge=judge)
    if report.judge_error:
        print(f"automem: warning: the judge failed ({report.judge_error}); those pairs stay linked for the next "
              f"run", file=sys.stderr)
    verb = "would supersede" if args.dry_run else "superseded"
    for m in report.merges:
        ctx.emit({"merge": m.to_json(), "dry_run": args.dry_run},
                 f"{m.action:<9} {verb} {m.superseded} [{m.wing}/{m.superseded_profile}] {m.superseded_text} "
                 f"-> keeps {m.kept} {m.kept_text}  ({m.reason})")
    summary = report.to_json()
    ctx.emit({"summary": summary},
             f"{'dry run: ' if args.dry_run else ''}{summary['scanned']} active memories, {summary['merged']} merged "
             f"({summary['duplicates']} duplicates, {summary['updates']} updates)"
             + (f", {summary['judged']} related pairs judged" if args.judge else "") + f" in {summary['seconds']} s")
    return 0


@command("repair")
def cmd_repair(args, ctx: Context) -> int:
    from .core.health import repair

    out = repair(ctx.store)
    ctx.emit(out, f"wrote back {out['values_fixed']} memories with values out of bounds; the recall index holds "
                  f"{out['indexed']} active memories")
    return 0


@command("migrate")
def cmd_migrate(args, ctx: Context) -> int:
    from .ops.migrate import is_url, migrate

    report = migrate(ctx.store, args.to, tenant=args.tenant, database=args.database, merge=args.merge)
    where = "".join(f", {key}: {value}" for key, value in (("chroma_tenant", args.tenant),
                                                           ("chroma_database", args.database)) if value)
    hint = (f"to use it: set `automem: {{chroma_url: {args.to}{where}}}` in config.yaml" if is_url(args.to)
            else "to use it: remove automem.chroma_url from config.yaml of that root")
    ctx.emit(report.to_json(),
             f"copied {report.copied} memories from {report.source} to {report.target} "
             f"({', '.join(f'{k} {v}' for k, v in sorted(report.by_status.items())) or 'empty'}); "
             f"verified {report.verified}" + (f"; created {', '.join(report.created)}" if report.created else "")
             + (f"; MISMATCHED {len(report.mismatched)}: {' '.join(report.mismatched[:5])}" if report.mismatched
                else f"; {hint}"))
    return 0 if report.ok else 1


def _print_decision_json(ctx: Context, d: dict) -> None:
    text = d.get("text") or ""
    text = text if len(text) <= 60 else text[:57] + "..."
    action = d.get("decision", "?")
    extra = f" -> {d['matched_id']}" if action in ("duplicate", "update") and d.get("matched_id") else ""
    ctx.emit(d, f"{action:<9} {d.get('id') or '-':<26} [{d.get('wing')}] {text}{extra}  ({d.get('reason')})")


def _job_summary(rec: dict) -> str:
    tokens = f"{rec.get('prompt_tokens', 0)}+{rec.get('completion_tokens', 0)} tokens"
    took = f"{rec.get('latency_ms', 0):g} ms" if rec.get("latency_ms") is not None else ""
    return (f"{rec.get('backend', '?')}: {len(rec.get('candidates') or [])} candidates, {tokens}"
            + (f", {took}" if took else ""))


@command("extract")
def cmd_extract(args, ctx: Context) -> int:
    from .extract.pipeline import extract_now
    from .extract.transcript import read_transcript_file
    from .ops.jsonl import check_depth, decode_utf8

    raw = decode_utf8(read_input(args.file), args.file)
    check_depth(raw, args.file)
    try:
        messages = read_transcript_file(raw)
    except RecursionError:
        raise UsageError(f"{args.file}: JSON nested too deeply") from None
    except ValueError as exc:
        raise UsageError(f"{args.file}: {exc}") from None
    config = ctx.config
    if args.backend:
        config.extract_backend = args.backend
    result = extract_now(ctx.location, messages, config=config, session_id=args.session, store=ctx.store)
    if result.status == "skipped":
        ctx.emit({"job": None, "status": "skipped", "reason": result.error}, f"nothing to extract: {result.error}")
        return 0
    if not args.json:
        print(f"job {result.job_id} ({_job_summary(result.details)})")
    for d in result.decisions:
        _print_decision_json(ctx, d)
    if result.status == "done":
        if args.json:
            ctx.emit({"job": result.job_id, "status": "done", **{k: result.details.get(k) for k in (
                "backend", "prompt_tokens", "completion_tokens", "latency_ms", "parse_notes") if k in result.details}})
        return 0
    where = ("it stays in the spool and `automem drain` retries it" if result.status == "retry" else
             "it is in dead/; fix the cause, then `automem drain --retry-dead`" if result.status == "dead" else "")
    ctx.emit({"job": result.job_id, "status": result.status, "error": result.error},
             None)
    print(f"automem: error: extraction {result.status}: {result.error}" + (f"; {where}" if where else ""),
          file=sys.stderr)
    return 1


@command("drain")
def cmd_drain(args, ctx: Context) -> int:
    from .extract.pipeline import drain

    report = drain(ctx.location, ctx.config, retry_dead=args.retry_dead,
                   profile=ctx.profile if args.own_profile else None, wait_seconds=max(0.0, args.wait),
                   single=args.single)
    if report is None:  # another drainer runs and will take the jobs
        if not args.quiet:
            ctx.emit({"skipped": "another drainer is running"}, "another drainer is running; it takes the jobs")
        return 0
    if args.quiet:
        return 0
    for rec in report.jobs:
        if args.json:
            continue
        counts: dict[str, int] = {}
        for d in rec.get("decisions") or []:
            counts[d.get("decision", "?")] = counts.get(d.get("decision", "?"), 0) + 1
        decided = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "nothing stored"
        line = f"{rec['status']:<5} {rec['job']} [{rec.get('job_profile')}] "
        line += f"{_job_summary(rec)}: {decided}" if rec["status"] == "done" else rec.get("error", "")
        print(line)
    summary = report.to_json()
    if args.json:
        ctx.emit(summary)
    else:
        due = f" (next due in {report.next_due_in:g} s)" if report.next_due_in is not None else ""
        print(f"processed {report.processed}: done {report.done}, retry {report.retry}, dead {report.dead}"
              + (f", revived {report.revived}" if report.revived else "")
              + (f", {report.locked} held by another drainer" if report.locked else "")
              + f"; pending {report.pending}{due}")
    return 0 if report.dead == 0 and report.retry == 0 else 1


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its one-line usage error
        return int(exc.code or 0) if exc.code in (0, None) else 2
    if not args.command:
        parser.print_help()
        return 0
    ctx = Context(args)
    try:
        check_common(args)
        return COMMANDS[args.command](args, ctx)
    except AutomemError as exc:
        print(f"automem: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("automem: interrupted", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: one line, and where to look
        print(f"automem: error: {exc.__class__.__name__}: {exc} (please report; details: AUTOMEM_DEBUG=1)",
              file=sys.stderr)
        if os.environ.get("AUTOMEM_DEBUG"):
            raise
        return 1
    finally:
        ctx.close()
