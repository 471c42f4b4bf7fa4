#!/usr/bin/env bash
# The demo a new user sees: write snapshots, inspect them.
set -euo pipefail
bin=${1:-bin/stateutil}
out=$(mktemp -d "${TMPDIR:-/tmp}/stateutil-demo.XXXXXX")
step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

step "$bin" generate --format memory --output "$out/example.dump"
step "$bin" inspect "$out/example.dump"
step "$bin" inspect "$out/example.dump" --subtasks
step "$bin" inspect "$out/example.dump" --key-groups --operator word-counter
step "$bin" inspect "$out/example.dump" --operator-state --values --operator kafka-source
step "$bin" inspect "$out/example.dump" -o json
step "$bin" keygroup user-1 --key-type string --max-parallelism 128 --parallelism 3

echo
echo "demo output is in $out"
