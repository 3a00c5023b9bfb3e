"""The `automem` command line (also `python -m automem`).

Every command takes --hermes-home, --profile and --json. Exit codes: 0 success, 2 bad usage or input (one line on
stderr), 1 any other failure. Heavy modules (chromadb, the embedding model) are imported inside the commands
that need them, so `automem --help` stays instant.

The package: `parser` (the arguments), `context` (what a command gets), `memories` and `operations` (the commands),
`output` (the human lines); `main` here dispatches.
"""

from __future__ import annotations

import os
import sys

from ..errors import AutomemError
from . import memories, operations  # noqa: F401 - importing them registers their commands in COMMANDS
from .context import COMMANDS, Context, command
from .parser import build_parser, check_common

__all__ = ["main", "build_parser", "check_common", "Context", "COMMANDS", "command"]


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
