"""The `automem` command line's arguments: every command's options (argparse), and the checks every command's
common options pass (--hermes-home, --profile, --user)."""

from __future__ import annotations

import argparse

from ..errors import UsageError
from ..version import __version__


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line (and exit 2), like every other bad input."""

    def error(self, message: str):  # noqa: D401 - argparse's signature
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


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


def check_common(args: argparse.Namespace) -> None:
    """Refuse what would act on the wrong home or profile (exit 2), for every command alike."""
    from ..paths import profile_name_problem

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

    from ..hermes.install import add_parsers as add_install_parsers  # install, uninstall, doctor (repeatable --profile)

    add_install_parsers(sub, common)

    p = add("recall", "what a kanban worker of this profile would be shown (past tasks and lessons)")
    p.add_argument("--task", required=True, metavar="TEXT",
                   help="a task id on the board (t_...), or the card's text: first line the title, the rest the body")
    p.add_argument("--board", metavar="SLUG", help="board of a task id (default: the active board)")

    p = add("kanban-sync", "backfill task memories from the board DB for runs that ended without the hook")
    p.add_argument("--board", metavar="SLUG", help="only this board (default: every board with a DB)")

    return parser
