#!/usr/bin/env bash
# stateutil sql's GROUP BY over every entry of the benchmark savepoint of 40M keys (the
# harness's counters job: a Long key and a Long value a record; bench-flink-savepoint.sh
# makes it once) against the two ways to the same answer without it: `stateutil dump -o
# jsonl` read by DuckDB's read_json (internal/duckdbquery: the DuckDB Go driver stateutil
# embeds, with its defaults), and the State Processor API counting every key group's
# entries (the harness's spa-count, a batch job). Each is timed from process start to
# exit, with its peak RSS; the answers must agree. Reported as ratios.
#
#   scripts/bench-sql.sh [bin/stateutil]    # from scripts/bench.sh, or alone
#
# Environment (all optional):
#   BENCH_SQL_RECORDS   keys of the savepoint (default 40000000)
#   BENCH_SQL_ROUNDS    runs of each, medians taken (default 3)
#   BENCH_FLINK_VERSION Flink version (default 2.3.0)
#   STATEUTIL_CACHE_DIR where the savepoint is kept between runs
# DuckDB's Go driver reads nothing from a pipe (/dev/stdin), so dump's lines go to a file
# that read_json then reads; the baseline's time is both. Needs Java and Maven for the
# savepoint and the State Processor API; prints a note and exits 0 without them.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$(realpath "${1:-$root/bin/stateutil}")
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}
job=counters
records=${BENCH_SQL_RECORDS:-40000000}
version=${BENCH_FLINK_VERSION:-2.3.0}
rounds=${BENCH_SQL_ROUNDS:-3}
results=${results:-$root/bench-results.txt}
out() { printf '%s\n' "$*" | tee -a "$results"; }
if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
  out "sql: skipped (no java or mvn for the Flink harness)"
  exit 0
fi

. "$root/scripts/bench-flink-savepoint.sh"
mkdir -p "$cache/bench-flink"
work=$(mktemp -d "$cache/bench-flink/sql.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/duckdbquery" ./internal/duckdbquery)

# The State Processor API reads a canonical savepoint into a heap backend: every key in the
# JVM's heap (at 40M keys, 768 MiB ends in OutOfMemoryError).
spa_xmx=${STATEUTIL_FLINK_XMX:-8g}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# timed NAME CMD...: appends "wall-seconds peak-RSS-MiB" of one run of CMD to $work/NAME.
timed() {
  local name=$1
  shift
  /usr/bin/time -f '%e %M' -o "$work/time" "$@"
  awk '{printf "%.2f %.0f\n", $1, $2 / 1024}' "$work/time" >>"$work/$name"
}
med() { cut -d' ' -f1 "$work/$1" | median; }
rss() { cut -d' ' -f2 "$work/$1" | sort -n | tail -1; }

table=$("$bin" sql "$snap" -e "SELECT table_name FROM states WHERE kind = 'value' ORDER BY table_name LIMIT 1" -o json |
  python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["table_name"])')
query="SELECT key_group, count(*) AS n FROM $table GROUP BY key_group ORDER BY key_group"
json="SELECT key_group, count(*) AS n FROM read_json('$work/dump.jsonl', format = 'newline_delimited') GROUP BY key_group ORDER BY key_group"
for i in $(seq "$rounds"); do
  timed sql "$bin" sql "$snap" -e "$query" -o csv >"$work/sql.csv"
  timed dump "$bin" dump "$snap" --now 0 -o jsonl >"$work/dump.jsonl"
  timed duckdb "$work/duckdbquery" "$json" >"$work/duckdb.tsv"
  rm -f "$work/dump.jsonl"
  STATEUTIL_FLINK_XMX=$spa_xmx timed spa "$root/scripts/flink-harness.sh" "$version" spa-count --job "$job" --snapshot "$snap" --records "$records" --out "$work/spa.txt" >/dev/null
done
# The three answers agree: entries per key group.
tail -n +2 "$work/sql.csv" | tr ',' ' ' >"$work/sql.txt"
tr '\t' ' ' <"$work/duckdb.tsv" >"$work/duckdb.txt"
if ! cmp -s "$work/sql.txt" "$work/duckdb.txt" || ! cmp -s "$work/sql.txt" "$work/spa.txt"; then
  out "sql: the answers differ (sql, dump | read_json, State Processor API):"
  diff3 "$work/sql.txt" "$work/duckdb.txt" "$work/spa.txt" | head -20 | tee -a "$results"
  exit 1
fi
entries=$(awk '{n += $2} END {print n}' "$work/sql.txt")
su=$(med sql)
base=$(awk -v a="$(med dump)" -v b="$(med duckdb)" 'BEGIN {printf "%.2f", a + b}')
spa=$(med spa)
bytes=$(du -sb "$snap" | cut -f1)
out "== SQL GROUP BY key_group over every entry of a canonical Flink $version savepoint of job $job ($records keys, $what, $((bytes >> 20)) MiB, $entries entries), process start to exit, medians of $rounds"
out "$(printf 'stateutil sql:                         %8.2f s  peak RSS %5s MiB  (runs: %s)' "$su" "$(rss sql)" "$(cut -d' ' -f1 "$work/sql" | tr '\n' ' ')")"
out "$(printf 'dump -o jsonl, then DuckDB read_json:  %8.2f s  peak RSS %5s / %s MiB  (dump %s s, read_json %s s)' "$base" "$(rss dump)" "$(rss duckdb)" "$(med dump)" "$(med duckdb)")"
out "$(printf 'State Processor API (spa-count):       %8.2f s  peak RSS %5s MiB  (runs: %s)' "$spa" "$(rss spa)" "$(cut -d' ' -f1 "$work/spa" | tr '\n' ' ')")"
out "$(awk -v s="$su" -v b="$base" -v p="$spa" -v r="$(rss sql)" 'BEGIN {
  printf "stateutil sql is %.1fx faster than dump + read_json and %.1fx faster than the State Processor API; peak RSS %d MiB (target < 512: %s)\n", b / s, p / s, r, (r < 512 ? "met" : "NOT met")
}')"
