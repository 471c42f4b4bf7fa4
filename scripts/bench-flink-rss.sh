#!/usr/bin/env bash
# Peak memory of the Flink rows of make bench at BENCH_RSS_BYTES of state
# (default 4 GiB): the max-parallelism rewrite and `dump` of a canonical
# Flink savepoint of the harness's big job, four times the records of the
# 1 GiB one (scripts/bench-flink-savepoint.sh makes it once). One run each,
# process start to exit; results are appended to bench-results.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-bin/stateutil}")
version=${BENCH_FLINK_VERSION:-2.3.0}
job=big
huge=${BENCH_RSS_BYTES:-$((4 << 30))}
records=$((huge / 1050 + 1)) # a record of the big job takes about 1050 bytes of savepoint
. scripts/bench-flink-savepoint.sh
work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/stateutil-bench-flink-rss.XXXXXX")
trap 'rm -rf "$work"' EXIT
say() { printf '%s\n' "$*" | tee -a bench-results.txt; }
# peak NAME CMD...: "seconds peak-RSS-MiB" of one run of CMD, its stdout to $work/out.
peak() {
  /usr/bin/time -f '%e %M' -o "$work/time" "$@" >"$work/out"
  awk '{printf "%.2fs   peak RSS %.0f MiB\n", $1, $2 / 1024}' "$work/time"
}
say "== peak memory of the Flink rows at $(($(du -sb "$snap" | cut -f1) >> 20)) MiB: a canonical Flink $version savepoint of job $job, $records records ($what)"
say "rescale --max-parallelism 4096:  $(peak "$bin" rescale "$snap" --max-parallelism 4096 --output "$work/su" --quiet)"
rm -rf "$work/su"
say "dump -o jsonl:                   $(peak "$bin" dump "$snap" --now 0 -o jsonl)"
say ""
