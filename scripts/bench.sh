#!/usr/bin/env bash
# make bench: stateutil side by side with plain copies of the same bytes, in
# one run on one disk, reported as ratios. BENCH_BYTES sizes the large
# snapshot (default 1 GiB); BENCH_RSS_BYTES the one peak memory is also
# measured on (default 4 GiB; 0 skips it). Conversions run on two sets of
# about those bytes, 1 KB values and 8-byte values (small entries), with
# entries/s, and against the SstFileWriter floor (internal/sstfloor).
# Results go to stdout and to bench-results.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-bin/stateutil}")
big=${BENCH_BYTES:-$((1 << 30))}
huge=${BENCH_RSS_BYTES:-$((4 << 30))}
work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/stateutil-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=bench-results.txt
: > "$results"

say() { printf '%s\n' "$*" | tee -a "$results"; }
# rss_seconds CMD...: "seconds peak-RSS-MiB CPU-seconds" of one run, the
# seconds including the sync of what it wrote (earlier writes are synced
# first), the CPU-seconds user and system time.
rss_seconds() {
  sync
  /usr/bin/time -f '%e %M %U %S' -o "$work/time" "$@" >/dev/null
  local t0 t1
  t0=$(date +%s.%N)
  sync
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" '{printf "%.2f %.0f %.2f\n", $1 + b - a, $2/1024, $3 + $4}' "$work/time"
}
# median_ms N CMD...: median wall-clock milliseconds over N runs.
median_ms() {
  local n=$1
  shift
  for _ in $(seq "$n"); do
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000))
  done | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f\n", a / b}'; }
bytes_of() { du -sb "$1" | cut -f1; }
mib() { echo $(($1 >> 20)); }

# keys_for BYTES [VALUE-BYTES]: keys of the example topology that make
# about BYTES of state with values of VALUE-BYTES (default 1000): about 6
# padded values and 200 bytes of keys and framing per key.
keys_for() { echo $(($1 / (6 * ${2:-1000} + 200) + 1)); }
generate() { # FORMAT BYTES OUT [VALUE-BYTES]
  "$bin" generate --format "$1" --keys "$(keys_for "$2" "${4:-1000}")" --value-bytes "${4:-1000}" --parallelism 2 --output "$3" >/dev/null
}
entries_of() { "$bin" inspect "$1" -o json | python3 -c 'import json, sys; print(json.load(sys.stdin)["totals"]["keyed_entries"])'; }
per_s() { awk -v n="$1" -v t="$2" 'BEGIN {printf "%.2fM", n / t / 1e6}'; }
# The floor of a conversion to RocksDB: internal/sstfloor writes the same
# sorted pairs straight into SST files.
floor_bin="$work/sstfloor"
go build -o "$floor_bin" ./internal/sstfloor

say "stateutil benchmarks, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, work dir $work"
say ""

# The disk under a VM varies from minute to minute: each comparison runs
# BENCH_ROUNDS times (default 5), stateutil and its baseline interleaved,
# and reports medians.
rounds=${BENCH_ROUNDS:-5}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# round NAME OUT CMD...: one timed run of CMD (which writes OUT, removed
# first; "-" when it writes nothing), its "seconds peak-RSS-MiB" appended
# to $work/NAME.
round() {
  local name=$1 out=$2
  shift 2
  if [ "$out" != - ]; then rm -rf "$out"; fi
  rss_seconds "$@" >>"$work/$name"
}
med_s() { cut -d' ' -f1 "$work/$1" | median; }
med_cpu() { cut -d' ' -f3 "$work/$1" | median; }
max_rss() { cut -d' ' -f2 "$work/$1" | sort -n | tail -1; }

say "== filesystem format vs cp ($(mib "$big") MiB, median of $rounds rounds)"
generate filesystem "$big" "$work/fs"
size=$(bytes_of "$work/fs")
for _ in $(seq "$rounds"); do
  round cp "$work/fs-cp" cp -r "$work/fs" "$work/fs-cp"
  round read - "$bin" verify "$work/fs"
  round write "$work/fs2" "$bin" convert "$work/fs" --to filesystem --output "$work/fs2" --quiet
done
t_cp=$(med_s cp)
say "snapshot bytes:                 $size"
say "cp -r (read + write):           ${t_cp}s   (runs: $(cut -d' ' -f1 "$work/cp" | tr '\n' ' '))"
say "read all entries (verify):      $(med_s read)s   cp/read  = $(ratio "$t_cp" "$(med_s read)")"
say "read + write (convert fs->fs):  $(med_s write)s   cp/write = $(ratio "$t_cp" "$(med_s write)")"
say ""

# convert_set NAME FS RDB: filesystem <-> rocksdb of the filesystem
# snapshot FS (RDB is where the rocksdb copy stays, for what follows)
# against cp -r of each and against the SstFileWriter floor, with
# entries/s.
convert_set() {
  local name=$1 fs=$2 rdb=$3
  say "== $name: convert filesystem <-> rocksdb vs cp -r and vs the SstFileWriter floor ($(mib "$(bytes_of "$fs")") MiB, median of $rounds rounds)"
  rm -f "$work/$name".*
  "$bin" convert "$fs" --to rocksdb --output "$rdb" --quiet >/dev/null
  "$floor_bin" extract "$rdb" "$work/pairs" >/dev/null
  local entries
  entries=$(entries_of "$fs")
  for _ in $(seq "$rounds"); do
    round "$name.cp" "$work/fs-cp" cp -r "$fs" "$work/fs-cp"
    round "$name.f2r" "$rdb" "$bin" convert "$fs" --to rocksdb --output "$rdb" --quiet
    round "$name.floor" "$work/floor" "$floor_bin" write "$work/pairs" "$work/floor"
    round "$name.cprdb" "$work/rdb-cp" cp -r "$rdb" "$work/rdb-cp"
    round "$name.r2f" "$work/fs3" "$bin" convert "$rdb" --to filesystem --output "$work/fs3" --quiet
  done
  local f2r floor
  f2r=$(med_s "$name.f2r")
  floor=$(med_s "$name.floor")
  say "keyed entries:                  $entries"
  say "cp -r of each snapshot:         $(med_s "$name.cp")s / $(med_s "$name.cprdb")s"
  say "SstFileWriter floor:            ${floor}s   $(per_s "$entries" "$floor") entries/s   (runs: $(cut -d' ' -f1 "$work/$name.floor" | tr '\n' ' '))"
  say "filesystem -> rocksdb:          ${f2r}s   $(per_s "$entries" "$f2r") entries/s   floor/convert = $(ratio "$floor" "$f2r")   cp/convert = $(ratio "$(med_s "$name.cp")" "$f2r")   peak RSS $(max_rss "$name.f2r") MiB   (runs: $(cut -d' ' -f1 "$work/$name.f2r" | tr '\n' ' '))"
  say "rocksdb -> filesystem:          $(med_s "$name.r2f")s   $(per_s "$entries" "$(med_s "$name.r2f")") entries/s   cp/convert = $(ratio "$(med_s "$name.cprdb")" "$(med_s "$name.r2f")")   peak RSS $(max_rss "$name.r2f") MiB   (runs: $(cut -d' ' -f1 "$work/$name.r2f" | tr '\n' ' '))"
  rm -rf "$work/fs3" "$work/fs-cp" "$work/rdb-cp" "$work/floor" "$work/pairs"
  say ""
}
convert_set "1 KB values" "$work/fs" "$work/rdb"
# Small entries: the same topology with 8-byte values, about as many bytes.
generate filesystem "$big" "$work/fs-8" 8
say "== 8-byte values: filesystem format vs cp ($(mib "$(bytes_of "$work/fs-8")") MiB, $(entries_of "$work/fs-8") keyed entries, median of $rounds rounds)"
for _ in $(seq "$rounds"); do
  round cp8 "$work/fs-cp" cp -r "$work/fs-8" "$work/fs-cp"
  round read8 - "$bin" verify "$work/fs-8"
  round write8 "$work/fs2" "$bin" convert "$work/fs-8" --to filesystem --output "$work/fs2" --quiet
done
say "read all entries (verify):      $(med_s read8)s   $(per_s "$(entries_of "$work/fs-8")" "$(med_s read8)") entries/s   cp/read  = $(ratio "$(med_s cp8)" "$(med_s read8)")"
say "read + write (convert fs->fs):  $(med_s write8)s   $(per_s "$(entries_of "$work/fs-8")" "$(med_s write8)") entries/s   cp/write = $(ratio "$(med_s cp8)" "$(med_s write8)")"
rm -rf "$work/fs2" "$work/fs-cp"
say ""
convert_set "8-byte values" "$work/fs-8" "$work/rdb-8"
rm -rf "$work/fs-8" "$work/rdb-8"

say "== metadata only: inspect and rescale --dry-run, 1 MiB vs $(mib "$big") MiB (median of 10 runs)"
generate filesystem $((1 << 20)) "$work/fs-small"
generate rocksdb $((1 << 20)) "$work/rdb-small"
for pair in "fs-small fs" "rdb-small rdb"; do
  set -- $pair
  s1=$(median_ms 10 "$bin" inspect "$work/$1")
  s2=$(median_ms 10 "$bin" inspect "$work/$2")
  d1=$(median_ms 10 "$bin" rescale "$work/$1" --parallelism 3 --dry-run --output "$work/none")
  d2=$(median_ms 10 "$bin" rescale "$work/$2" --parallelism 3 --dry-run --output "$work/none")
  say "$(printf '%-10s inspect %4s ms vs %4s ms   rescale --dry-run %4s ms vs %4s ms' "$2" "$s1" "$s2" "$d1" "$d2")"
done
say ""

say "== rescale rocksdb 2 -> 3 ($(mib "$big") MiB, median of $rounds rounds): SST fast path vs entry by entry"
for _ in $(seq "$rounds"); do
  round fast "$work/rdb-fast" "$bin" rescale "$work/rdb" --parallelism 3 --output "$work/rdb-fast" --quiet
  round slow "$work/rdb-slow" "$bin" rescale "$work/rdb" --parallelism 3 --output "$work/rdb-slow" --quiet --entry-by-entry
done
say "fast $(med_s fast)s, entry by entry $(med_s slow)s: fast path $(ratio "$(med_s slow)" "$(med_s fast)")x faster   (runs: $(cut -d' ' -f1 "$work/fast" | tr '\n' ' ')/ $(cut -d' ' -f1 "$work/slow" | tr '\n' ' '))"
rm -rf "$work/rdb-fast" "$work/rdb-slow"
say ""

# The sharded path and YARN: scripts/shard-bench.sh.
. scripts/shard-bench.sh

# get, dump: scripts/lookup-bench.sh.
. scripts/lookup-bench.sh

# The state browser's first page: scripts/serve-bench.sh.
. scripts/serve-bench.sh

# S3: scripts/s3-bench.sh (BENCH_S3=0 skips it).
if [ "${BENCH_S3:-1}" != 0 ]; then
  . scripts/s3-bench.sh
fi

# GCS and Azure: scripts/cloud-bench.sh (BENCH_CLOUD=0 skips it).
if [ "${BENCH_CLOUD:-1}" != 0 ]; then
  . scripts/cloud-bench.sh
fi

# Peak memory at 4 GiB, of both sets: 1 KB values and 8-byte values.
if [ "$huge" -gt 0 ]; then
  for vb in 1000 8; do
    say "== peak memory of convert at $(mib "$huge") MiB, $vb-byte values"
    generate filesystem "$huge" "$work/fs-huge" "$vb"
    read -r t rss _ < <(rss_seconds "$bin" convert "$work/fs-huge" --to rocksdb --output "$work/rdb-huge" --quiet)
    say "filesystem -> rocksdb:          ${t}s   peak RSS ${rss} MiB"
    read -r t rss _ < <(rss_seconds "$bin" convert "$work/rdb-huge" --to filesystem --output "$work/fs-huge2" --quiet)
    say "rocksdb -> filesystem:          ${t}s   peak RSS ${rss} MiB"
    rm -rf "$work/fs-huge" "$work/rdb-huge" "$work/fs-huge2"
    say ""
  done
fi

fixtures=../shared/fixtures/flink
if [ -d "$fixtures" ]; then
  say "== real Flink savepoints (process start to exit, median of 20 runs)"
  for f in new-stateful-udf-migration-itcase-flink1.17-rocksdb-savepoint new-stateful-udf-migration-itcase-flink1.17-rocksdb-checkpoint; do
    say "$(printf '%-60s inspect %s ms   inspect --key-groups %s ms' "$f" "$(median_ms 20 "$bin" inspect "$fixtures/$f")" "$(median_ms 20 "$bin" inspect "$fixtures/$f" --key-groups)")"
  done
  say ""
fi

# Flink (BENCH_FLINK=0 skips them): the writer's rescale, reading a real
# savepoint and upgrading a Flink 1.x one for Flink 2.x, against the State
# Processor API; reading a heap checkpoint against a canonical savepoint of
# the same state; their peak memory at BENCH_RSS_BYTES of state.
if [ "${BENCH_FLINK:-1}" != 0 ]; then
  scripts/bench-flink.sh "$bin"
  BENCH_FLINK_JOB=counters scripts/bench-flink.sh "$bin"
  results="$results" scripts/bench-flink-read.sh
  BENCH_FLINK_READ_JOB=counters results="$results" scripts/bench-flink-read.sh
  results="$results" scripts/bench-flink-upgrade.sh "$bin"
  results="$results" scripts/bench-flink-heap.sh "$bin"
  say ""
  if [ "$huge" -gt 0 ]; then
    BENCH_RSS_BYTES=$huge scripts/bench-flink-rss.sh "$bin"
  fi
  # stateutil sql's GROUP BY over the 40M-key savepoint against dump | read_json and the
  # State Processor API (BENCH_SQL_RECORDS sizes it).
  results="$results" scripts/bench-sql.sh "$bin"
fi

say "== Go benchmarks"
go test -run '^$' -bench . -benchtime 3x ./backends/rocksdb/ ./internal/rocksdb/ ./runtime/ ./runtime/rocksstate/ ./backends/flink/ 2>&1 | grep -E '^(Benchmark|ok|FAIL)' | tee -a "$results"
say "== filesystem format: write and read through the Go API vs a sequential copy of the same bytes, with and without fsync ($(mib "$big") MiB)"
STATEUTIL_BENCH_BYTES=$big go test -run '^$' -bench WriteRead -benchtime 2x ./backends/filesystem/ 2>&1 | grep -E '^(Benchmark|ok|FAIL)' | tee -a "$results"
say "== rocksdb checkpoint upload vs cp, entry scan vs ldb scan ($(mib "$big") MiB, one iteration)"
for pkg in ./runtime/rocksstate/ ./backends/rocksdb/; do # one at a time: go test runs packages in parallel
  STATEUTIL_BENCH_BYTES=$big go test -run '^$' -bench 'FirstCheckpointVsCopy|ScanVsLdb' -benchtime 1x -timeout 60m "$pkg" 2>&1 | grep -E '^(Benchmark|ok|FAIL)' | tee -a "$results"
done
