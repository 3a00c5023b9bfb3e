"""The commands on memories: add, search, list, show, edit, forget, pin / unpin, share / unshare, review,
export and import. Each is a call to the Python API (`automem.api.Memories`) and the lines it prints."""

from __future__ import annotations

import json
import sys
from typing import Iterable

from ..errors import StoreUnavailable, UsageError
from .context import Context, check_text_arg, command, read_input
from .output import memory_line, print_decision, show_lines


def _read_jsonl(path: str, max_line_bytes: int | None = None) -> Iterable[tuple[int, dict]]:
    from ..ops.jsonl import MAX_LINE_BYTES, jsonl_objects

    return jsonl_objects(read_input(path), path, max_line_bytes or MAX_LINE_BYTES)


@command("add")
def cmd_add(args, ctx: Context) -> int:
    from ..paths import profile_name_problem

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
        print_decision(ctx, d)
    return 2 if any(d.action == "rejected" for d in decisions) and len(decisions) == 1 else 0


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
        ctx.emit(h.to_json(), memory_line(h.to_json(), h.distance))
    if not hits and not args.json:
        print("no memories found", file=sys.stderr)
    return 0


MAX_SEARCH_K = 100  # a --file line asking for more is refused (its own error line)


def search_query(obj, where: str, profile: str, k: int) -> tuple[str, str, int]:
    """(query, profile, k) of one `search --file` line; UsageError (one line) if the line is not one."""
    from ..paths import profile_name_problem

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
    from ..ops.jsonl import check_line, decode_utf8, loads
    from ..text import json_safe

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
            ctx.emit(rec, memory_line(rec))
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
    from ..errors import Refused

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


@command("show")
def cmd_show(args, ctx: Context) -> int:
    check_text_arg(args.id, "ID")
    shown = ctx.memories.show(args.id)
    ctx.emit(shown.to_json(), "\n".join(show_lines(shown)))  # printed without control characters
    return 0


@command("edit")
def cmd_edit(args, ctx: Context) -> int:
    from ..errors import Refused

    check_text_arg(args.id, "ID")
    check_text_arg(args.text, "TEXT")
    try:
        d = ctx.memories.edit(args.id, args.text)
    except Refused as exc:
        print_decision(ctx, exc.decision)
        return 2
    print_decision(ctx, d)
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
                 f"held      {memory_line(m.to_json()).replace(' (held)', '')}\n          why: {m.reason}" +
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
