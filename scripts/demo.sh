#!/usr/bin/env bash
# The main job on the embedded defaults, start to finish, in .demo/ (never ~/.hermes):
# a sample conversation is extracted (offline `rules` extractor; GLM-4-Flash when $GLM_API_KEY is set), the same
# conversation again adds nothing, a restatement is a duplicate, a changed fact supersedes the old one, two facts
# that can both be true are both kept, and a recall question is answered.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
export HERMES_HOME="$PWD/.demo/hermes"
rm -rf .demo && mkdir -p "$HERMES_HOME"
automem() { .venv/bin/automem "$@"; }
step() { printf '\n\033[1m$ automem %s\033[0m\n' "$*"; automem "$@"; }

echo "Hermes root: $HERMES_HOME   extractor: $([ -n "${GLM_API_KEY:-}" ] && echo 'GLM-4-Flash' || echo 'offline rules')"
step extract tests/data/sample_conversation.json
echo "# the same conversation again: nothing new"
step extract tests/data/sample_conversation.json
echo "# a restatement is a duplicate, across languages"
step add "I use vim as my editor, never suggest nano" --wing user
echo "# a changed value supersedes the old fact"
step add "用户喜欢暗色主题" --wing user
step add "用户现在喜欢亮色主题" --wing user
echo "# what both can be true of is kept beside it (a judge, when an LLM is configured, may merge it later)"
step add "The user is allergic to bee stings" --wing user
step add "The user is allergic to wasp stings" --wing user
echo "# recall, in another language than the memory"
step search "你知道我用什么编辑器吗？" -k 1
step search "Which Python version does the project use?" -k 1
step list --all
step stats
