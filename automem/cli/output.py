"""The CLI's human lines: a memory, a write path decision, an extraction job, a memory's source and history on
one line each (what `--json` prints as objects instead)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .context import Context


def print_decision(ctx: Context, d) -> None:
    print_decision_json(ctx, d.to_json())


def print_decision_json(ctx: Context, d: dict) -> None:
    text = d.get("text") or ""
    text = text if len(text) <= 60 else text[:57] + "..."
    action = d.get("decision", "?")
    extra = f" -> {d['matched_id']}" if action in ("duplicate", "update") and d.get("matched_id") else ""
    ctx.emit(d, f"{action:<9} {d.get('id') or '-':<26} [{d.get('wing')}] {text}{extra}  ({d.get('reason')})")


def job_summary(rec: dict) -> str:
    tokens = f"{rec.get('prompt_tokens', 0)}+{rec.get('completion_tokens', 0)} tokens"
    took = f"{rec.get('latency_ms', 0):g} ms" if rec.get("latency_ms") is not None else ""
    return (f"{rec.get('backend', '?')}: {len(rec.get('candidates') or [])} candidates, {tokens}"
            + (f", {took}" if took else ""))


def memory_line(m: dict, distance: float | None = None) -> str:
    """One memory (a record as `--json` prints it) on one line."""
    dist = f"{distance:.3f} " if distance is not None else ""
    marks = ([] if m["status"] == "active" else [m["status"]]) + (["pinned"] if m.get("pinned") else [])
    who = f"/{m['scope']}" if m.get("scope") else ""
    return f"{dist}{m['id']}  [{m['wing']}/{m['profile']}{who}] {m['text']}" + (f" ({', '.join(marks)})" if marks
                                                                                  else "")


def _when(ts: int) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M", time.localtime(int(ts))) if ts else "?"


def _evidence_lines(m, indent: str) -> list[str]:
    """Where a memory (an automem.api.MemoryView) was learned, and its words."""
    from ..core.provenance import Evidence, describe

    ev = m.evidence or Evidence()
    where = ", ".join(x for x in (f"session {m.session_id}" if m.session_id else "",
                                  f"task {m.task_id}" if m.task_id else "") if x)
    lines = [f"{indent}learned {_when(m.created_at)}" + (f" in {where}" if where else "") + f": {describe(ev)}"]
    if ev.excerpt:
        lines.append(f"{indent}  words: “{ev.excerpt}”")
    return lines


def show_lines(shown) -> list[str]:
    """`automem show`'s lines for what `Memories.show` returned (an automem.api.MemoryView)."""
    lines = [memory_line(shown.to_json())]
    if shown.private:
        return lines + [f"  source: {shown.source}"]
    lines += _evidence_lines(shown, "  ")
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
