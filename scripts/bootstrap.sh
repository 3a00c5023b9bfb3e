#!/usr/bin/env bash
# Create (or refresh) the project's virtualenv in .venv and install automem into it.
#   scripts/bootstrap.sh          automem and its core dependencies
#   scripts/bootstrap.sh --test   plus pytest and hermes-agent==0.19.0 (the end-to-end tests drive the real CLI),
#                                 and .venv/wheelhouse for the offline package tests
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=".venv/.automem-installed"
[ "${1:-}" = --test ] && stamp="$stamp-test"
# Reinstall only when the declared dependencies changed (a clean clone always installs).
want="$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
  # pip's notes about local mirror folders it skips are noise here; real errors still reach stderr.
  if [ "${1:-}" = --test ]; then
    .venv/bin/python -m pip install --quiet -e '.[test]' 'hermes-agent==0.19.0' 2> >(grep -v "is ignored: it is neither" >&2)
  else
    .venv/bin/python -m pip install --quiet -e . 2> >(grep -v "is ignored: it is neither" >&2)
  fi
  echo "$want" > "$stamp"
fi
# The Memory tab's browser tests (tests/e2e/test_dashboard_e2e.py) drive Debian's headless Chromium through its
# WebDriver (chromium-driver), with CJK fonts so Chinese memories render in the screenshot: installed here, while
# the network is there, when missing (about 300 MB; nothing downloads a browser at run time).
if [ "${1:-}" = --test ] && { [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; }; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: installing chromium, chromium-driver and fonts-noto-cjk for the browser tests" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver fonts-noto-cjk >/dev/null
  else
    echo "bootstrap: the browser tests need /usr/bin/chromium and /usr/bin/chromedriver: run" \
         "'sudo apt-get install chromium chromium-driver fonts-noto-cjk' (they are skipped until then)" >&2
  fi
fi
# The package tests (tests/e2e/test_package.py) build automem's wheel and sdist and install them, with
# hermes-agent, into fresh virtualenvs while offline: a wheelhouse of the exact versions in .venv, plus the build
# backend, made here while the network is there (about 160 MB; seconds from pip's cache).
if [ "${1:-}" = --test ]; then
  wheelhouse=".venv/wheelhouse"
  if [ ! -f "$wheelhouse/.stamp" ] || [ "$(cat "$wheelhouse/.stamp")" != "$want" ]; then
    .venv/bin/python -m pip freeze --exclude-editable 2>/dev/null | grep -v '^#' > .venv/wheelhouse.txt
    .venv/bin/python -m pip wheel --quiet --no-deps -w "$wheelhouse" -r .venv/wheelhouse.txt \
      'setuptools>=77' wheel 2> >(grep -v "is ignored: it is neither" >&2)
    echo "$want" > "$wheelhouse/.stamp"
  fi
fi
