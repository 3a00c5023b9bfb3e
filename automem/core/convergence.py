"""When two machines change one fact at once: the rule that leaves exactly one current value.

Writers on several machines sharing a Chroma server have no common lock, so two of them can each supersede the same
memory O with a new value (X on one machine, Y on the other) and both stay active. Each new value names what it
replaced (`replaces` = O), so such a pair is found by that key alone, without comparing texts:

- **the later change wins**: the value written later (by its writer's clock, `created_at` to the second; within the
  same second the larger id, the same on every machine) stays current, and the other is superseded by it
  (`superseded_by` = the winner). Both stay in the history: O superseded by one of them, that one by the winner.

The same rule is applied by the write path when its write meets a rival (`automem.core.write_path`), by every
reader's recall index (`automem.core.index`: the loser is not shown, before anything is written), and by
`automem compact` (`automem.ops.compact`). Plain functions: no I/O here.
"""

from __future__ import annotations

from typing import Any, Iterable


def race_key(created_at: Any, mid: str) -> tuple[int, str]:
    """The order of racing values: later `created_at` first wins, then the larger id."""
    try:
        when = int(created_at or 0)
    except (TypeError, ValueError):
        when = 0
    return (when, str(mid))


def winner(rivals: Iterable[tuple[str, Any]]) -> str | None:
    """Of (id, created_at) rivals, the id that stays current (None for none)."""
    best = None
    for mid, created_at in rivals:
        key = race_key(created_at, mid)
        if best is None or key > best:
            best = key
    return best[1] if best is not None else None


def settle(rivals: Iterable[Any]) -> tuple[Any, list[Any]]:
    """(the winner, the losers) of memories (anything with `id` and `created_at`) that replaced one memory."""
    items = list(rivals)
    win = winner((m.id, m.created_at) for m in items)
    top = next(m for m in items if m.id == win)
    return top, [m for m in items if m.id != win]
