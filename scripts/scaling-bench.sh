#!/usr/bin/env bash
# The measured inputs of docs/SCALING.md: what one shard (one process)
# does per second on the test HDFS (scripts/hdfs-start.sh) and on the S3
# server (scripts/s3-start.sh), per operation, beside cp -r of the same
# snapshot on local disk; and the plan and commit of a sharded Flink
# max-parallelism rewrite as the new subtasks grow (the commit's storage
# calls are counted by migrate's TestPlanAndCommitCallsGrowLinearly).
#
#   scripts/hdfs-start.sh && scripts/s3-start.sh && scripts/scaling-bench.sh bin/stateutil
#
# Environment (all optional): SCALING_BYTES (default 256 MiB of 1 KB
# values), SCALING_ROUNDS (default 3, interleaved; medians),
# SCALING_SUBTASKS (default "100 1000"), SCALING_FLINK_SAVEPOINT (a canonical
# Flink savepoint at max parallelism 128, such as bench-flink.sh's, whose
# max-parallelism rewrite is timed on each storage too), STATEUTIL_CACHE_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-bin/stateutil}")
bytes=${SCALING_BYTES:-$((256 << 20))}
rounds=${SCALING_ROUNDS:-3}
cache=${STATEUTIL_CACHE_DIR:-$PWD/.cache}
work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/stateutil-scaling.XXXXXX")
trap 'rm -rf "$work"' EXIT

# shellcheck disable=SC1091
. "$cache/hdfs.env"
# shellcheck disable=SC1091
. "$cache/s3.env"
export HADOOP_USER_NAME=${STATEUTIL_TEST_HDFS_SUPERUSER:-$(id -un)}
hdfs=hdfs://$STATEUTIL_TEST_HDFS/stateutil-scaling-$$
s3=$STATEUTIL_TEST_S3/scaling-$$

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# timed NAME CMD...: appends the seconds of one run of CMD to $work/t.NAME
# and its CPU-seconds (user + system) to $work/c.NAME.
timed() {
  local name=$1
  shift
  /usr/bin/time -f '%e %U %S' -o "$work/time" "$@" >/dev/null
  awk '{printf "%.2f\n", $1}' "$work/time" >>"$work/t.$name"
  awk '{printf "%.2f\n", $2 + $3}' "$work/time" >>"$work/c.$name"
}
med() { median <"$work/t.$1"; }
cpu() { median <"$work/c.$1"; }
mbs() { awk -v b="$1" -v t="$(med "$2")" 'BEGIN {printf "%.0f MB/s", b / t / 1e6}'; }

"$bin" generate --format filesystem --keys $((bytes / 6200 + 1)) --value-bytes 1000 --parallelism 2 --output "$work/fs" >/dev/null
size=$(du -sb "$work/fs" | cut -f1)
echo "== one process per operation, $((size >> 20)) MiB filesystem snapshot of 1 KB values, median of $rounds rounds ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores)"
for r in $(seq "$rounds"); do
  rm -rf "$work/cp"
  timed cp cp -r "$work/fs" "$work/cp"
  for st in hdfs s3; do
    root=${!st}/$r
    timed "$st.write" "$bin" convert "$work/fs" --to filesystem --output "$root/fs" --quiet
    timed "$st.read" "$bin" verify "$root/fs"
    timed "$st.rescale" "$bin" rescale "$root/fs" --max-parallelism 256 --parallelism 4 --output "$root/mp" --quiet
    timed "$st.rocksdb" "$bin" convert "$root/fs" --to rocksdb --output "$root/rdb" --quiet
    timed "$st.down" "$bin" convert "$root/fs" --to filesystem --output "$work/down-$st-$r" --quiet
    rm -rf "$work/down-$st-$r"
  done
done
echo "cp -r on local disk:                  $(med cp)s  $(mbs "$size" cp)"
for st in hdfs s3; do
  for op in write read rescale rocksdb down; do
    printf '%-4s %-34s %6ss  %s  %s CPU-s\n' "$st" "$(case $op in
      write) echo "write (local -> $st, convert)" ;;
      read) echo "read every entry (verify)" ;;
      rescale) echo "max parallelism 128 -> 256, p 4" ;;
      rocksdb) echo "convert to rocksdb ($st -> $st)" ;;
      down) echo "read ($st -> local, convert)" ;;
      esac)" "$(med "$st.$op")" "$(mbs "$size" "$st.$op")" "$(cpu "$st.$op")"
  done
done

if [ -n "${SCALING_FLINK_SAVEPOINT:-}" ]; then
  fsize=$(du -sb "$SCALING_FLINK_SAVEPOINT" | cut -f1)
  echo
  echo "== Flink max-parallelism rewrite of $((fsize >> 20)) MiB, one process, median of $rounds rounds"
  for r in $(seq "$rounds"); do
    rm -rf "$work/fcp" "$work/flocal"
    timed fcp cp -r "$SCALING_FLINK_SAVEPOINT" "$work/fcp"
    timed flocal "$bin" rescale "$SCALING_FLINK_SAVEPOINT" --max-parallelism 4096 --output "$work/flocal" --quiet
    for st in hdfs s3; do
      root=${!st}/flink-$r
      timed "$st.fup" "$bin" rescale "$SCALING_FLINK_SAVEPOINT" --max-parallelism 4096 --output "$root/up" --quiet
      timed "$st.fmp" "$bin" rescale "$root/up" --max-parallelism 8192 --output "$root/mp" --quiet
    done
  done
  echo "cp -r on local disk:                          $(med fcp)s  $(mbs "$fsize" fcp)"
  echo "local -> local, 128 -> 4096:                  $(med flocal)s  $(mbs "$fsize" flocal)  $(cpu flocal) CPU-s"
  for st in hdfs s3; do
    echo "$(printf '%-4s' "$st") local -> $st, 128 -> 4096:               $(med "$st.fup")s  $(mbs "$fsize" "$st.fup")  $(cpu "$st.fup") CPU-s"
    echo "$(printf '%-4s' "$st") $st -> $st, 4096 -> 8192:                $(med "$st.fmp")s  $(mbs "$fsize" "$st.fmp")  $(cpu "$st.fmp") CPU-s"
  done
fi

# Plan and commit of a Flink max-parallelism rewrite of a real savepoint
# into N new subtasks (5 operators), 10 shards, on each storage.
src=$(realpath testdata/flink/1.20.5/basic-hashmap-canonical/snapshot/savepoint-58fe20-3983f452098d)
echo
echo "== plan and commit of a Flink max-parallelism rewrite 128 -> 4096 in 10 shards, by new subtasks (median of $rounds rounds)"
for n in ${SCALING_SUBTASKS:-100 1000}; do
  for st in hdfs s3; do
    for r in $(seq "$rounds"); do
      out=${!st}/plan-$n-$r
      rm -f "$work/plan.json"
      timed "plan.$st.$n" "$bin" rescale "$src" --max-parallelism 4096 --parallelism $((n / 5)) --output "$out" --plan-only "$work/plan.json" --shards 10
      for i in $(seq 10); do
        "$bin" shard "$work/plan.json" --shard "$i/10" --quiet >/dev/null 2>&1
      done
      timed "commit.$st.$n" "$bin" commit "$work/plan.json"
    done
    printf '%-4s %6d new subtasks: plan %ss, commit %ss (%.1f ms a new subtask)\n' "$st" "$n" "$(med "plan.$st.$n")" "$(med "commit.$st.$n")" \
      "$(awk -v t="$(med "commit.$st.$n")" -v n="$n" 'BEGIN {print t / n * 1000}')"
  done
done
