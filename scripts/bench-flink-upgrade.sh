#!/usr/bin/env bash
# The upgrade's benchmark (make bench runs it; BENCH_FLINK=0 skips): stateutil
# upgrade of a canonical Flink 1.20.5 savepoint of the harness's
# BENCH_FLINK_JOB (big: about 1 GiB, or counters; BENCH_FLINK_RECORDS records;
# scripts/bench-flink-savepoint.sh makes it once) for Flink 2.3, process
# start to exit, side by side with `cp -r` of the savepoint (median of
# BENCH_ROUNDS rounds, interleaved) and with Flink's State Processor API doing
# the same carry: a Flink 1.20.5 job reading every key through the heap backend
# (spa-export, its rows written by a sink in the job with the rows'
# serializer) and a Flink 2.3.0 job writing them as a savepoint (spa-import),
# once each, JVM start included by our clock.
# Results are appended to bench-results.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-bin/stateutil}")
version=${BENCH_FLINK_FROM:-1.20.5}
to=${BENCH_FLINK_TO:-2.3.0}
job=${BENCH_FLINK_JOB:-big}
records=${BENCH_FLINK_RECORDS:-}
. scripts/bench-flink-savepoint.sh
scripts/flink-harness.sh "$to" build
rounds=${BENCH_ROUNDS:-3}
work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/stateutil-bench-upgrade.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=${results:-bench-results.txt}
. scripts/bench-timed.sh

size=$(du -sb "$snap" | cut -f1)
line=${to%.*}
say "== flink upgrade ($job): a canonical Flink $version savepoint, $records records ($what), $((size >> 20)) MiB, carried to Flink $line (median of $rounds rounds)"
for _ in $(seq "$rounds"); do
  rm -rf "$work/cp" "$work/su"
  timed cp cp -r "$snap" "$work/cp"
  rm -rf "$work/cp"
  timed su "$bin" upgrade "$snap" --flink-version "$line" --output "$work/su" --quiet
  rm -rf "$work/su"
done
say "cp -r:                          $(med cp)s   CPU $(cpu cp)s   (runs: $(cut -d' ' -f1 "$work/t.cp" | tr '\n' ' '))"
say "stateutil upgrade:              $(med su)s   CPU $(cpu su)s   cp/stateutil = $(ratio "$(med cp)" "$(med su)")   peak RSS $(rss su) MiB   (runs: $(cut -d' ' -f1 "$work/t.su" | tr '\n' ' '))"
if [ "${BENCH_FLINK_SPA:-1}" != 0 ]; then
  # spa-export reads through the heap backend, the faster of the two here, with a heap that
  # holds the state: big's 1 GiB savepoint was 1.3 GiB live, so 4 times the savepoint's size;
  # counters' 40M small entries take 8 GiB. Through RocksDB under Flink's managed memory (256
  # MiB, and 2 GiB alike) that read made 30 to 60 keys a second: the reader deletes each key
  # it has read, the write buffer manager flushed a memtable of some 75 deletes every few
  # seconds, compactions rewrote 64 MiB files, and the time went in reading and decompressing
  # blocks again. With RocksDB's own memory (state.backend.rocksdb.memory.managed=false) it
  # took 1.4 to 1.9 times as long as through the heap.
  spa_xmx=$(((size >> 20) * 4))m
  (((size >> 20) * 4 < 768)) && spa_xmx=768m
  [[ $job == counters ]] && spa_xmx=8g
  export STATEUTIL_FLINK_XMX=${STATEUTIL_FLINK_XMX:-$spa_xmx}
  /usr/bin/time -f '%e %M' -o "$work/exptime" scripts/flink-harness.sh "$version" spa-export --job "$job" --snapshot "$snap" \
    --out "$work/rows" --backend hashmap --records "$records" >"$work/exp.out"
  /usr/bin/time -f '%e %M' -o "$work/imptime" scripts/flink-harness.sh "$to" spa-import --job "$job" --in "$work/rows" \
    --max-parallelism 128 --out "$work/spa" --backend "$backend" --records "$records" >"$work/imp.out"
  exp=$(awk '{print $1}' "$work/exptime")
  imp=$(awk '{print $1}' "$work/imptime")
  spa=$(awk -v a="$exp" -v b="$imp" 'BEGIN {printf "%.2f", a + b}')
  spa_rss=$(cat "$work/exptime" "$work/imptime" | awk '{m = $2 > m ? $2 : m} END {printf "%.0f", m/1024}')
  say "State Processor API carry:      ${spa}s process (Flink $version reading ${exp}s, Flink $to writing ${imp}s; $(sed -n 's/^elapsed_seconds //p' "$work/exp.out")s + $(sed -n 's/^elapsed_seconds //p' "$work/imp.out")s by their own clocks)   peak RSS ${spa_rss} MiB"
  say "State Processor API / stateutil = $(ratio "$spa" "$(med su)")   stateutil RSS / JVM RSS = $(ratio "$(rss su)" "$spa_rss")"
fi
say ""
