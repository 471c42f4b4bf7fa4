#!/usr/bin/env bash
# The hostile trials of stateutil serve, with their counts: two servers of
# the example snapshot on free loopback ports, one without a token and one
# with a token made up at start, tried as a web page of another origin and
# careless clients would (internal/servetrials):
#
#   - a flood of distinct expensive requests (rescale plans to 32768 key
#     groups) from another origin: every one refused;
#   - the same flood the server's own way: served, or busy (503 with
#     Retry-After), within the memory budget;
#   - hundreds of idle connections: no more kept than the connection cap,
#     none past the idle timeout, and a request served meanwhile;
#   - a client reading the UI's script a few hundred bytes a second: cut
#     by the write timeout;
#   - token guessing: no more tokens checked than the limit allows;
#   - every kind of answer (pages, assets, JSON, every error, net/http's
#     own refusals) carrying the Content-Security-Policy and nosniff.
#
# It prints the counts and the server's peak RSS (bound: 256 MiB during
# all of it), and exits non-zero when a bound does not hold.
#
#   scripts/hostile-trials-serve.sh                        the full run: 1,000 requests a flood, 800 idle connections
#   STATEUTIL_TRIALS=quick scripts/hostile-trials-serve.sh  a sample for make test (about a minute: the timeouts are real)
#
# Environment: STATEUTIL_TRIALS (full|quick), STATEUTIL_BIN (a stateutil
# binary to try; default: built here).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
mode=${STATEUTIL_TRIALS:-full}
case "$mode" in
  full) flood=1000 idle=800 guesses=1000 ;;
  quick) flood=100 idle=800 guesses=200 ;;
  *) echo "STATEUTIL_TRIALS=$mode: want full or quick" >&2; exit 2 ;;
esac

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

bin=${STATEUTIL_BIN:-}
if [[ -z $bin ]]; then
  bin=$work/stateutil
  go build -o "$bin" .
fi
go build -o "$work/servetrials" ./internal/servetrials
# 800 idle connections are 800 files of the trials' own.
ulimit -n 4096 2>/dev/null || true

# serve_on NAME ARGS...: starts a server on a free port; its address is in
# $work/NAME.url once it has printed it.
serve_on() {
  local name=$1
  shift
  "$bin" serve testdata/memory/example.dump --listen 127.0.0.1:0 "$@" >"$work/$name.out" 2>"$work/$name.err" &
  pids+=($!)
  echo $! >"$work/$name.pid"
  for _ in $(seq 300); do
    grep -q '^serving ' "$work/$name.out" && break
    kill -0 "$(cat "$work/$name.pid")" 2>/dev/null || { cat "$work/$name.err" >&2; exit 1; }
    sleep 0.1
  done
  sed -n 's/^serving .* at \(http:[^ ]*\)$/\1/p' "$work/$name.out" >"$work/$name.url"
  [[ -s $work/$name.url ]] || { echo "serve printed no address in 30 s" >&2; exit 1; }
}
serve_on open
serve_on locked --token
token=$(sed -n 's/^token (made up at start): //p' "$work/locked.out")

echo "== stateutil serve hostile trials ($mode)"
"$work/servetrials" -url "$(cat "$work/open.url")" -pid "$(cat "$work/open.pid")" \
  -locked-url "$(cat "$work/locked.url")" -token "$token" \
  -flood "$flood" -idle "$idle" -guesses "$guesses"
