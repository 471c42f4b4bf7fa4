# Sourced by the Flink benchmarks (bench-flink.sh, bench-flink-read.sh): the
# canonical Flink savepoint of about 1 GiB they both work on, made once by
# the harness's job and kept in $STATEUTIL_CACHE_DIR/bench-flink, and the
# harness built, so that no timed run includes a build.
#
# In:  job      big (default: a Long key, a Long value and a map entry of a
#               BENCH_FLINK_PAYLOAD-character string, default 1000, per record)
#               or counters (a Long key and a Long value: the small entries
#               most state is)
#      records  keys, one per record (default about 1 GiB: 1M for big, 40M
#               for counters)
#      version  Flink version (default 2.3.0)
# Out: snap (the savepoint's path), what (its records, in words), backend
#      (the state backend that suits the job's size in a Flink JVM)
job=${job:-big}
version=${version:-2.3.0}
payload=${BENCH_FLINK_PAYLOAD:-1000}
case $job in
big) records=${records:-1000000} job_args=(--payload "$payload") what="a Long, a Long and a $payload-character string a record" backend=rocksdb ;;
# The heap backend makes the 40M-key savepoint (a canonical savepoint is the same whichever
# backend wrote it): through RocksDB, one get and one put a record, it took over 40 minutes.
counters) records=${records:-40000000} job_args=() what="a Long key and a Long value a record" backend=hashmap ;;
*) echo "bench-flink: the job is big or counters, not $job" >&2; exit 2 ;;
esac
bench_flink_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench_flink_cache=${STATEUTIL_CACHE_DIR:-$bench_flink_root/.cache}/bench-flink

"$bench_flink_root/scripts/flink-harness.sh" "$version" build
snapdir=$bench_flink_cache/$version-$job-$records${job_args[1]:+-p${job_args[1]}}
if [[ ! -f $snapdir/path ]]; then
  rm -rf "$snapdir"
  mkdir -p "$snapdir"
  STATEUTIL_FLINK_XMX=${STATEUTIL_FLINK_XMX:-8g} "$bench_flink_root/scripts/flink-harness.sh" "$version" snapshot --job "$job" "${job_args[@]}" \
    --backend "$backend" --kind canonical --records "$records" --parallelism 2 --max-parallelism 128 --dir "$snapdir/out" >"$snapdir/path.tmp"
  mv "$snapdir/path.tmp" "$snapdir/path"
fi
snap=$(tail -n 1 "$snapdir/path")
