#!/usr/bin/env bash
# Reading every entry of a real Flink savepoint: `stateutil dump` against
# Flink's State Processor API (the harness's spa-dump) on the same
# savepoint, each timed from process start to exit, reported as a ratio.
#
#   scripts/bench-flink-read.sh          # from scripts/bench.sh, or alone
#
# Environment (all optional):
#   BENCH_FLINK_READ_JOB      the harness's job: big (default) or counters (a Long
#                             key and a Long value: small entries); the savepoint is
#                             the one bench-flink.sh rewrites (bench-flink-savepoint.sh)
#   BENCH_FLINK_READ_RECORDS  keys of the savepoint (default about 1 GiB of state)
#   BENCH_FLINK_VERSION       Flink version (default 2.3.0)
#   BENCH_FLINK_READ_ROUNDS   stateutil runs, median taken (default 5); the State
#                             Processor API runs once per round too, up to 3
#   BENCH_FLINK_READ_BASE     a commit whose dump runs beside today's, interleaved, for the
#                             ratio of records/s (default d1a1e51, the last before the value
#                             decoders of Kryo, Avro and RowData; "" leaves it out)
#   STATEUTIL_CACHE_DIR       where the savepoint is kept between runs
#   STATEUTIL_FLINK_XMX       the State Processor API JVM's heap (default 8g: it reads
#                             canonical savepoints through the heap backend)
# Both write every entry as a line to a file: stateutil's JSONL, the State
# Processor API's lines as they come (spa-dump --unsorted). Needs Java and
# Maven (scripts/flink-harness.sh); prints a note and exits 0 without them.
# Results go to stdout and, under bench.sh, bench-results.txt.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}
records=${BENCH_FLINK_READ_RECORDS:-}
job=${BENCH_FLINK_READ_JOB:-big}
version=${BENCH_FLINK_VERSION:-2.3.0}
rounds=${BENCH_FLINK_READ_ROUNDS:-5}
results=${results:-/dev/null}
harness="$root/scripts/flink-harness.sh"

out() { printf '%s\n' "$*" | tee -a "$results"; }
if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
	out "flink read: skipped (no java or mvn for the Flink harness)"
	exit 0
fi

bin="$cache/bench-flink/stateutil"
mkdir -p "$cache/bench-flink"
(cd "$root" && go build -o "$bin" .)
base=${BENCH_FLINK_READ_BASE-d1a1e51}
base_bin=""
if [[ -n $base ]]; then
	base_bin="$cache/bench-flink/stateutil-$base"
	if [[ ! -x $base_bin ]]; then
		src=$(mktemp -d "$cache/bench-flink/base.XXXXXX")
		if git -C "$root" archive "$base" | tar -x -C "$src" && (cd "$src" && go build -o "$base_bin" .); then
			:
		else
			out "flink read: no baseline dump (commit $base cannot be built here)"
			base_bin=""
		fi
		rm -rf "$src"
	fi
fi

. "$root/scripts/bench-flink-savepoint.sh"
work=$(mktemp -d "$cache/bench-flink/run.XXXXXX")
trap 'rm -rf "$work"' EXIT

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# timed NAME CMD...: appends "wall-seconds cpu-seconds peak-RSS-MiB" (CPU:
# user + system, the process and its children) of one run of CMD to $work/NAME.
timed() {
	local name=$1
	shift
	/usr/bin/time -f '%e %U %S %M' -o "$work/time" "$@"
	awk '{printf "%.3f %.2f %.0f\n", $1, $2 + $3, $4 / 1024}' "$work/time" >>"$work/$name"
}
rss() { cut -d' ' -f3 "$work/$1" | sort -n | tail -1; }

for i in $(seq "$rounds"); do
	timed su "$bin" dump "$snap" --now 0 -o jsonl >"$work/su.jsonl"
	if [[ -n $base_bin ]]; then
		timed base "$base_bin" dump "$snap" --now 0 -o jsonl >"$work/base.jsonl"
	fi
	if ((i <= 3)); then
		STATEUTIL_FLINK_XMX=${STATEUTIL_FLINK_XMX:-8g} timed spa "$harness" "$version" spa-dump --job "$job" --snapshot "$snap" --records "$records" \
			--dump "$work/spa.jsonl" --unsorted >/dev/null
	fi
done
entries=$(wc -l <"$work/su.jsonl")
spa_lines=$(wc -l <"$work/spa.jsonl")
su=$(cut -d' ' -f1 "$work/su" | median)
spa=$(cut -d' ' -f1 "$work/spa" | median)
su_cpu=$(cut -d' ' -f2 "$work/su" | median)
spa_cpu=$(cut -d' ' -f2 "$work/spa" | median)
bytes=$(du -sb "$snap" | cut -f1)
out "== reading every entry of a canonical Flink $version savepoint of job $job ($records keys, $what, $((bytes >> 20)) MiB), process start to exit, medians"
out "$(printf 'stateutil dump:              %8.3f s  %7.2f CPU-s  %s records/s  peak RSS %s MiB  (%s records, %s runs: %s)' "$su" "$su_cpu" "$(awk -v n="$entries" -v t="$su" 'BEGIN {printf "%.2fM", n / t / 1e6}')" "$(rss su)" "$entries" "$rounds" "$(cut -d' ' -f1 "$work/su" | tr '\n' ' ')")"
out "$(printf 'State Processor API dump:    %8.3f s  %7.2f CPU-s  peak RSS %s MiB  (%s lines, %s runs: %s)' "$spa" "$spa_cpu" "$(rss spa)" "$spa_lines" "$(wc -l <"$work/spa")" "$(cut -d' ' -f1 "$work/spa" | tr '\n' ' ')")"
out "$(awk -v a="$spa" -v b="$su" -v c="$spa_cpu" -v d="$su_cpu" 'BEGIN {printf "stateutil is %.1fx faster (%.1fx in CPU-seconds)\n", a / b, c / d}')"
if [[ -n $base_bin ]]; then
	b=$(cut -d' ' -f1 "$work/base" | median)
	b_cpu=$(cut -d' ' -f2 "$work/base" | median)
	base_entries=$(wc -l <"$work/base.jsonl")
	out "$(printf 'stateutil dump at %-10s  %8.3f s  %7.2f CPU-s  (%s records, %s runs: %s)' "$base:" "$b" "$b_cpu" "$base_entries" "$rounds" "$(cut -d' ' -f1 "$work/base" | tr '\n' ' ')")"
	out "$(awk -v n="$entries" -v t="$su" -v c="$su_cpu" -v bn="$base_entries" -v bt="$b" -v bc="$b_cpu" -v base="$base" 'BEGIN {
		r = (n / t) / (bn / bt); rc = (n / c) / (bn / bc)
		printf "dump records/s against %s: %.2f (%.0f vs %.0f records/s), per CPU-second %.2f; target >= 0.90: %s\n", base, r, n / t, bn / bt, rc, (r >= 0.9 ? "met" : "NOT met")
	}')"
fi
