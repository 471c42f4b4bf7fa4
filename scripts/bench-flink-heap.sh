#!/usr/bin/env bash
# Reading a heap checkpoint against reading a canonical savepoint of the same state:
# `stateutil dump` of a hashmap checkpoint (key groups whose values carry no lengths: every
# value is walked by its serializer, and a value no serializer walks is found by where the
# next entry can start) and of a canonical savepoint (every key and value length-prefixed),
# both taken by Flink from the same job at the same record, process start to exit, medians,
# reported as the ratio heap/canonical (1.00: as fast).
#
#   scripts/bench-flink-heap.sh [STATEUTIL]   # from scripts/bench.sh, or alone
#
# Jobs (testenv/flink): big (a Long value and a map of Strings a key: every value walks) and
# zoo (a value of each kind a key, among them classes under Kryo and a Protobuf message, read
# as the job's user reads them: with the job's --kryo-classes and --proto-descriptors).
#
# Environment (all optional):
#   BENCH_FLINK_HEAP_BIG_RECORDS  records of the big job (default 200000, about 30 MiB)
#   BENCH_FLINK_HEAP_ZOO_RECORDS  records of the zoo job (default 50000, about 8 MiB)
#   BENCH_FLINK_HEAP_ROUNDS       runs of each dump, median taken (default 5)
#   BENCH_FLINK_VERSION           Flink version (default 2.3.0)
#   STATEUTIL_CACHE_DIR           where the snapshots are kept between runs
# Needs Java and Maven (scripts/flink-harness.sh); prints a note and exits 0 without them.
# Results go to stdout and, under bench.sh, bench-results.txt.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$(realpath "${1:-$root/bin/stateutil}")
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}/bench-flink
version=${BENCH_FLINK_VERSION:-2.3.0}
rounds=${BENCH_FLINK_HEAP_ROUNDS:-5}
results=${results:-/dev/null}
harness="$root/scripts/flink-harness.sh"

out() { printf '%s\n' "$*" | tee -a "$results"; }
if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
	out "flink heap read: skipped (no java or mvn for the Flink harness)"
	exit 0
fi
"$harness" "$version" build

# snapshot JOB RECORDS KIND: the path of the job's hashmap snapshot of KIND, made once.
snapshot() {
	local dir="$cache/heap-$version-$1-$2-$3"
	if [[ ! -f $dir/path ]]; then
		rm -rf "$dir"
		mkdir -p "$dir"
		STATEUTIL_FLINK_XMX=${STATEUTIL_FLINK_XMX:-2g} "$harness" "$version" snapshot --job "$1" --backend hashmap --kind "$3" \
			--records "$2" --parallelism 2 --max-parallelism 128 --dir "$dir/out" >"$dir/path.tmp"
		mv "$dir/path.tmp" "$dir/path"
	fi
	tail -n 1 "$dir/path"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# timed NAME CMD...: appends the wall seconds of one run of CMD to $work/NAME.
timed() {
	local name=$1
	shift
	/usr/bin/time -f '%e %U %S' -o "$work/time" "$@" >"$work/$name.jsonl" 2>"$work/$name.err" || true
	awk '{printf "%.3f %.2f\n", $1, $2 + $3}' "$work/time" >>"$work/$name"
}

for job in big zoo; do
	schemas=()
	case $job in
	big) records=${BENCH_FLINK_HEAP_BIG_RECORDS:-200000} ;;
	zoo)
		records=${BENCH_FLINK_HEAP_ZOO_RECORDS:-50000}
		"$harness" "$version" proto-descriptors --out "$work/zoo.pb" >/dev/null
		schemas=(--kryo-classes "$root/testenv/flink/witness/zoo.kryo-classes" --proto-descriptors "$work/zoo.pb")
		;;
	esac
	heap=$(snapshot "$job" "$records" checkpoint)
	canonical=$(snapshot "$job" "$records" canonical)
	rm -f "$work/heap" "$work/canonical"
	for _ in $(seq "$rounds"); do
		timed heap "$bin" dump "$heap" --now 0 -o jsonl --skip-unreadable "${schemas[@]}"
		timed canonical "$bin" dump "$canonical" --now 0 -o jsonl "${schemas[@]}"
	done
	h=$(cut -d' ' -f1 "$work/heap" | median)
	c=$(cut -d' ' -f1 "$work/canonical" | median)
	hc=$(cut -d' ' -f2 "$work/heap" | median)
	cc=$(cut -d' ' -f2 "$work/canonical" | median)
	lost=$(grep -c 'cannot be read' "$work/heap.err" || true)
	out "== reading a heap checkpoint against a canonical savepoint of the same state: Flink $version job $job, $records records, hashmap ($(($(du -sb "$heap" | cut -f1) >> 10)) KiB and $(($(du -sb "$canonical" | cut -f1) >> 10)) KiB), stateutil dump, medians of $rounds"
	out "$(printf 'heap checkpoint:     %8.3f s  %6.2f CPU-s  %s lines  (%s subtask states not read)' "$h" "$hc" "$(wc -l <"$work/heap.jsonl")" "$lost")"
	out "$(printf 'canonical savepoint: %8.3f s  %6.2f CPU-s  %s lines' "$c" "$cc" "$(wc -l <"$work/canonical.jsonl")")"
	out "$(awk -v a="$h" -v b="$c" -v x="$hc" -v y="$cc" 'BEGIN {printf "heap/canonical: %.2f (%.2f in CPU-seconds)\n", a / b, x / y}')"
done
