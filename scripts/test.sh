#!/usr/bin/env bash
# The whole test suite on a fresh machine: builds .venv (automem, pytest, hermes-agent==0.19.0), then runs
# every test. The tests start what they need themselves (a fake LLM and a Chroma server on 127.0.0.1).
# Where it can (root and `unshare`), pytest runs in a network namespace with only loopback: proof that nothing
# reaches the internet (no model download, no hosted LLM). AUTOMEM_TEST_NETWORK=1 keeps the host's network.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --test
export PATH="$PWD/.venv/bin:$PATH"
if [ -z "${AUTOMEM_TEST_NETWORK:-}" ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && command -v ip >/dev/null \
   && unshare -n true 2>/dev/null; then
  echo "running the tests without network (unshare -n, loopback only)"
  exec unshare -n sh -c 'ip link set lo up && exec .venv/bin/python -m pytest "$@"' pytest "$@"
fi
echo "running the tests with the host's network (no unshare here)"
exec .venv/bin/python -m pytest "$@"
