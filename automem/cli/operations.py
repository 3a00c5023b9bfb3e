"""The commands that run automem's machinery: extract and drain (the extraction pipeline), compact, repair and
migrate (the store), stats, install / uninstall / doctor (Hermes profiles), recall and kanban-sync (kanban)."""

from __future__ import annotations

import json
import sys

from ..errors import UsageError
from .context import Context, command, read_input
from .output import job_summary, print_decision_json


@command("stats")
def cmd_stats(args, ctx: Context) -> int:
    from ..core.write_path import waiting_for_judge
    from ..extract.pipeline import extraction_stats

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
    from ..hermes.kanban_recall import recall_for_card

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
    from ..hermes.kanban_board import list_boards
    from ..hermes.kanban_record import kanban_sync

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
    from ..hermes.install import run_install
    from ..hermes.tab import run_sync_tab

    code = run_install(args)
    run_sync_tab(args)  # the dashboard's Memory tab lives in the root, whichever profiles were installed
    return code


@command("uninstall")
def cmd_uninstall(args, ctx: Context) -> int:
    from ..hermes.install import run_uninstall
    from ..hermes.tab import run_sync_tab

    code = run_uninstall(args)
    run_sync_tab(args)
    return code


@command("doctor")
def cmd_doctor(args, ctx: Context) -> int:
    from ..hermes.install import run_doctor

    return run_doctor(args)


def _judge(ctx: Context, details: dict):
    """The LLM judge for a command's writes: the backend extraction would use (None for the offline rules)."""
    from ..extract.pipeline import judge_for

    return judge_for(ctx.location, ctx.config, origin="cli", details=details)


@command("compact")
def cmd_compact(args, ctx: Context) -> int:
    from ..ops.compact import compact

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
    from ..core.health import repair

    out = repair(ctx.store)
    ctx.emit(out, f"wrote back {out['values_fixed']} memories with values out of bounds; the recall index holds "
                  f"{out['indexed']} active memories")
    return 0


@command("migrate")
def cmd_migrate(args, ctx: Context) -> int:
    from ..ops.migrate import is_url, migrate

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


@command("extract")
def cmd_extract(args, ctx: Context) -> int:
    from ..extract.pipeline import extract_now
    from ..extract.transcript import read_transcript_file
    from ..ops.jsonl import check_depth, decode_utf8

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
        print(f"job {result.job_id} ({job_summary(result.details)})")
    for d in result.decisions:
        print_decision_json(ctx, d)
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
    from ..extract.pipeline import drain

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
        line += f"{job_summary(rec)}: {decided}" if rec["status"] == "done" else rec.get("error", "")
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
