#!/usr/bin/env bash
# The whole test suite on a fresh machine: builds .venv (automem, pytest, hermes-agent==0.19.0), then runs
# every test. The tests start what they need themselves (a fake LLM and a Chroma server on 127.0.0.1).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --test
export PATH="$PWD/.venv/bin:$PATH"
exec .venv/bin/python -m pytest "$@"
