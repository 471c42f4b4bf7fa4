# Sourced by scripts/bench.sh (it uses its helpers and $work/fs, the 1 GiB
# filesystem snapshot): the sharded path (plan, N shards at once as
# separate processes, commit) against the single process on the same
# data, in 1, 2 and 4 shards; and, with the test cluster up
# (scripts/hdfs-start.sh), the fixed cost of a YARN application.

# sharded OP N OUT ARGS...: plan OP (rescale|convert) of $work/fs for N
# shards, run the N shards at once as separate processes, commit; prints
# "total plan shards commit" seconds (total includes the sync).
sharded() {
  local op=$1 n=$2 out=$3
  shift 3
  rm -rf "$out" "$work/plan.json"
  sync
  local t0 t1 t2 t3 t4
  t0=$(date +%s.%N)
  "$bin" "$op" "$work/fs" "$@" --output "$out" --plan-only "$work/plan.json" --shards "$n" >/dev/null
  t1=$(date +%s.%N)
  local pids=()
  for i in $(seq "$n"); do
    "$bin" shard "$work/plan.json" --shard "$i/$n" --quiet >/dev/null 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  t2=$(date +%s.%N)
  "$bin" commit "$work/plan.json" >/dev/null
  t3=$(date +%s.%N)
  sync
  t4=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v e="$t4" 'BEGIN {printf "%.2f %.2f %.2f %.2f\n", e - a, b - a, c - b, e - c}'
}
srounds=${BENCH_SHARD_ROUNDS:-3}
for job in "rescale 2->4|rescale|--parallelism 4" "convert to rocksdb|convert|--to rocksdb" "max-parallelism 128->256|rescale|--max-parallelism 256 --parallelism 4"; do
  IFS='|' read -r title op args <<<"$job"
  say "== sharded path vs single process: $title ($(mib "$size") MiB filesystem, median of $srounds rounds; shards run at once on $(nproc) cores)"
  rm -f "$work"/single "$work"/sh-*
  for _ in $(seq "$srounds"); do
    # shellcheck disable=SC2086
    round single "$work/one" "$bin" "$op" "$work/fs" $args --output "$work/one" --quiet
    for n in 1 2 4; do
      # shellcheck disable=SC2086
      sharded "$op" "$n" "$work/sh" $args >>"$work/sh-$n"
    done
  done
  t1=$(med_s single)
  say "single process:                 ${t1}s   (runs: $(cut -d' ' -f1 "$work/single" | tr '\n' ' '))"
  for n in 1 2 4; do
    tn=$(cut -d' ' -f1 "$work/sh-$n" | median)
    say "$(printf '%d shard(s): %6ss  sharded/single = %s   plan %ss, shards %ss, commit %ss   (runs: %s)' "$n" "$tn" "$(ratio "$tn" "$t1")" \
      "$(cut -d' ' -f2 "$work/sh-$n" | median)" "$(cut -d' ' -f3 "$work/sh-$n" | median)" "$(cut -d' ' -f4 "$work/sh-$n" | median)" "$(cut -d' ' -f1 "$work/sh-$n" | tr '\n' ' ')")"
  done
  rm -rf "$work/one" "$work/sh"
  say ""
done

# With the test cluster up (scripts/hdfs-start.sh), the fixed cost of a
# YARN application: 3 shards of a small snapshot on the MiniYARNCluster.
shard_env=${STATEUTIL_CACHE_DIR:-$PWD/.cache}/hdfs.env
if [ -f "$shard_env" ] && grep -q STATEUTIL_TEST_YARN= "$shard_env"; then
  # shellcheck disable=SC1090
  . "$shard_env"
  export HADOOP_USER_NAME=${STATEUTIL_TEST_HDFS_SUPERUSER:-$(id -un)}
  nn=hdfs://$STATEUTIL_TEST_HDFS/stateutil-bench-$$
  "$bin" generate --format filesystem --keys "$(keys_for $((16 << 20)))" --value-bytes 1000 --parallelism 2 --output "$nn/src" >/dev/null
  say "== YARN: 16 MiB rescale 2 -> 4 on the MiniYARNCluster over MiniDFSCluster (median of $srounds rounds)"
  rm -f "$work/ysingle" "$work/yarn"
  for r in $(seq "$srounds"); do
    t0=$(date +%s.%N)
    "$bin" rescale "$nn/src" --parallelism 4 --output "$nn/single-$r" --quiet >/dev/null
    t1=$(date +%s.%N)
    "$bin" rescale "$nn/src" --parallelism 4 --output "$nn/yarn-$r" --yarn "$STATEUTIL_TEST_YARN" --shards 3 \
      --yarn-am-classpath "$STATEUTIL_TEST_YARN_AM_CLASSPATH" --quiet >/dev/null 2>&1
    t2=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f\n", b - a}' >>"$work/ysingle"
    awk -v a="$t1" -v b="$t2" 'BEGIN {printf "%.2f\n", b - a}' >>"$work/yarn"
  done
  say "single process on HDFS: $(median <"$work/ysingle")s; 3 shards on YARN (submit to commit): $(median <"$work/yarn")s   (runs: $(tr '\n' ' ' <"$work/yarn"))"
  say ""
fi
