#!/usr/bin/env bash
# The test suite on a fresh machine: builds .venv (automem, pytest, ruff, coverage, hermes-agent==0.19.0), then
#   scripts/test.sh [pytest args]             the default tier: unit tests and core integration (a few minutes)
#   scripts/test.sh --all [pytest args]       everything: also the real hermes CLI (e2e), the Chroma server backend,
#                                             package builds, multi-process stress, evaluation-corpus runs (CI)
#   scripts/test.sh --coverage [pytest args]  the default tier under coverage: each automem module's line coverage,
#                                             exit 1 when a module is below the floor (the tier must touch them all)
# The tiers are pytest markers (pyproject.toml; docs/testing.md says which test goes where). Other pytest args pass
# through (a -m of yours replaces the tier's). The tests start what they need themselves (a fake LLM, and in the
# slow tier a Chroma server, on 127.0.0.1). Where it can (root and `unshare`), pytest runs in a network namespace
# with only loopback: proof that nothing reaches the internet (no model download, no hosted LLM).
# AUTOMEM_TEST_NETWORK=1 keeps the host's network.
set -euo pipefail
cd "$(dirname "$0")/.."
FAST='not (slow or e2e or server)'
mode=fast
case "${1:-}" in
  --all) mode=all; shift ;;
  --coverage) mode=coverage; shift ;;
esac
scripts/bootstrap.sh --test
export PATH="$PWD/.venv/bin:$PATH"
case "$mode" in
  fast) run=(.venv/bin/python -m pytest -m "$FAST") ;;
  all) run=(.venv/bin/python -m pytest) ;;
  coverage)
    rm -f .coverage .coverage.*
    run=(.venv/bin/python -m coverage run -m pytest -m "$FAST") ;;
esac
echo "tier: $mode"
status=0
if [ -z "${AUTOMEM_TEST_NETWORK:-}" ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && command -v ip >/dev/null \
   && unshare -n true 2>/dev/null; then
  echo "running the tests without network (unshare -n, loopback only)"
  unshare -n sh -c 'ip link set lo up && exec "$@"' pytest "${run[@]}" "$@" || status=$?
else
  echo "running the tests with the host's network (no unshare here)"
  "${run[@]}" "$@" || status=$?
fi
if [ "$mode" = coverage ]; then
  .venv/bin/python -m coverage combine -q 2>/dev/null || true
  .venv/bin/python -m coverage json -q -o .coverage.json
  .venv/bin/python -m tests.support.coverage_floor .coverage.json || status=1
fi
exit "$status"
