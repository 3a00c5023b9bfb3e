"""Each automem module's line coverage from a `coverage json` report; exit 1 when one is under the floor.

`scripts/test.sh --coverage` runs the default tier under coverage and then this, so the default tier is known to
touch every module (docs/testing.md). Only this process's lines count (child processes are not measured), so a
module used mostly by `automem` child processes can sit lower than what the tier really runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FLOOR = 0.30  # a module the default tier barely touches is a module it does not test

REPO = Path(__file__).resolve().parents[2]


def main(argv: list[str]) -> int:
    report = json.loads(Path(argv[0] if argv else ".coverage.json").read_text(encoding="utf-8"))
    files = {Path(name).resolve(): data["summary"] for name, data in report["files"].items()}
    low = []
    print(f"{'module':<36}{'lines':>7}{'run':>7}{'cover':>8}")
    for path in sorted((REPO / "automem").rglob("*.py")):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        summary = files.get(path.resolve())
        total = summary["num_statements"] if summary else 0
        run = summary["covered_lines"] if summary else 0
        share = run / total if total else 1.0
        if share < FLOOR:
            low.append(module)
        print(f"{module:<36}{total:>7}{run:>7}{share:>8.0%}{'  <- under the floor' if share < FLOOR else ''}")
    if low:
        print(f"under {FLOOR:.0%} line coverage in the default tier: {', '.join(low)}")
        return 1
    print(f"every automem module is at {FLOOR:.0%} line coverage or more in the default tier")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
