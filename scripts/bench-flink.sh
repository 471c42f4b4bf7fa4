#!/usr/bin/env bash
# The flink writer's benchmark (make bench runs it; BENCH_FLINK=0 skips):
# max parallelism 128 -> 4096 of the canonical Flink savepoint of the
# harness's BENCH_FLINK_JOB (big or counters, BENCH_FLINK_RECORDS records;
# scripts/bench-flink-savepoint.sh makes it once), process start to exit,
# side by side with `cp -r` of the savepoint (median of BENCH_ROUNDS rounds,
# interleaved) and with Flink's State Processor API doing the same job
# (spa-rewrite: read every state, write a savepoint at 4096 with
# SavepointWriter, through the backend that suits the job's size; once, JVM
# start excluded by its own clock and included by ours). Beside them, `keys
# delete` of 1% of the keys (every 100th; both jobs key record r by r)
# through the same copy. Results are appended to bench-results.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-bin/stateutil}")
version=${BENCH_FLINK_VERSION:-2.3.0}
job=${BENCH_FLINK_JOB:-big}
records=${BENCH_FLINK_RECORDS:-}
. scripts/bench-flink-savepoint.sh
rounds=${BENCH_ROUNDS:-3}
work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/stateutil-bench-flink.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=bench-results.txt
. scripts/bench-timed.sh

size=$(du -sb "$snap" | cut -f1)
say "== flink ($job): max parallelism 128 -> 4096 of a canonical Flink $version savepoint, $records records ($what), $((size >> 20)) MiB (median of $rounds rounds)"
seq 0 100 $((records - 1)) >"$work/keys"
for _ in $(seq "$rounds"); do
  rm -rf "$work/cp" "$work/su" "$work/del"
  timed cp cp -r "$snap" "$work/cp"
  rm -rf "$work/cp"
  timed su "$bin" rescale "$snap" --max-parallelism 4096 --output "$work/su" --quiet
  rm -rf "$work/su"
  timed del "$bin" keys delete "$snap" --operator keyed --keys-from "$work/keys" --output "$work/del" --quiet
  rm -rf "$work/del"
done
say "cp -r:                          $(med cp)s   CPU $(cpu cp)s   (runs: $(cut -d' ' -f1 "$work/t.cp" | tr '\n' ' '))"
say "stateutil keys delete (1%):     $(med del)s   CPU $(cpu del)s   cp/stateutil = $(ratio "$(med cp)" "$(med del)")   peak RSS $(rss del) MiB   (runs: $(cut -d' ' -f1 "$work/t.del" | tr '\n' ' '))"
say "stateutil rescale:              $(med su)s   CPU $(cpu su)s   $(awk -v n="$records" -v t="$(med su)" 'BEGIN {printf "%.2fM", n / t / 1e6}') records/s   cp/stateutil = $(ratio "$(med cp)" "$(med su)")   peak RSS $(rss su) MiB   (runs: $(cut -d' ' -f1 "$work/t.su" | tr '\n' ' '))"
if [ "${BENCH_FLINK_SPA:-1}" != 0 ]; then
  t0=$(date +%s.%N)
  # The heap backend holds every key in the JVM: 40M Long pairs take about 6 GiB.
  spa_xmx=768m
  [[ $backend == hashmap ]] && spa_xmx=8g
  STATEUTIL_FLINK_XMX=${STATEUTIL_FLINK_XMX:-$spa_xmx} /usr/bin/time -f '%e %M' -o "$work/spatime" scripts/flink-harness.sh "$version" spa-rewrite --job "$job" --snapshot "$snap" \
    --max-parallelism 4096 --out "$work/spa" --backend "$backend" >"$work/spa.out"
  spa=$(awk '{print $1}' "$work/spatime")
  spa_rss=$(awk '{printf "%.0f", $2/1024}' "$work/spatime")
  inner=$(sed -n 's/^elapsed_seconds //p' "$work/spa.out")
  say "State Processor API rewrite:    ${spa}s process (${inner}s read+write by its own clock)   peak RSS ${spa_rss} MiB"
  say "State Processor API / stateutil = $(ratio "$spa" "$(med su)")   stateutil RSS / JVM RSS = $(ratio "$(rss su)" "$spa_rss")"
fi
say ""
