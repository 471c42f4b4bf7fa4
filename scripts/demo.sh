#!/usr/bin/env bash
# make demo: what a new user sees. The built-in wordcount job runs with
# checkpoints in each backend on local disk; the snapshots are inspected,
# rescaled, converted, verified and compared.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-bin/stateutil}")
out=$(mktemp -d "${TMPDIR:-/tmp}/stateutil-demo.XXXXXX")
cd "$out"
step() { printf '\n\033[1m$ stateutil %s\033[0m\n' "$*"; "$bin" "$@"; }
note() { printf '\n\033[1;34m# %s\033[0m\n' "$*"; }

note "wordcount with checkpoints in each backend"
step run wordcount --backend memory --parallelism 2 --records 200000 --checkpoint-dir chk-memory --job-id demo-memory
step run wordcount --backend filesystem --parallelism 2 --records 200000 --checkpoint-dir chk-fs --job-id demo-fs
note "RocksDB checkpoints are incremental: each uploads only new SST files and reuses the rest (see 'reused')"
step run wordcount --backend rocksdb --parallelism 2 --records 40000 --checkpoint-every 10000 --retain 2 --checkpoint-dir chk-rocksdb --job-id demo-rocksdb

note "inspect what they wrote (a job directory means its latest complete checkpoint)"
step inspect chk-memory/demo-memory/chk-*.dump
step inspect chk-fs/demo-fs --subtasks
step inspect chk-rocksdb/demo-rocksdb
step inspect chk-fs/demo-fs --key-groups --operator word-counter
step inspect chk-fs/demo-fs --operator-state --values --operator words-source

note "a savepoint at parallelism 2, restored at 3 and at 1"
step run wordcount --parallelism 2 --records 100000 --savepoint savepoint-p2.dump
step run wordcount --parallelism 3 --records 150000 --restore savepoint-p2.dump
step run wordcount --parallelism 1 --records 150000 --restore savepoint-p2.dump

note "plan a rescale without writing, then do it, and check the result"
step rescale chk-fs/demo-fs --parallelism 3 --dry-run --output rescaled
step rescale chk-fs/demo-fs --parallelism 3 --output rescaled --quiet
step inspect rescaled --subtasks
step verify rescaled

note "move the checkpoint to another backend, and prove nothing changed"
step convert chk-fs/demo-fs --to rocksdb --output converted-rocksdb --verify --quiet
step inspect converted-rocksdb
step diff chk-fs/demo-fs converted-rocksdb
step diff chk-fs/demo-fs rescaled || true

note "rescale the RocksDB copy from its SST files (no entry decoded), and check it"
step rescale converted-rocksdb --parallelism 3 --output rescaled-rocksdb --quiet
step verify rescaled-rocksdb
step diff rescaled rescaled-rocksdb --entries

note "SQL over the checkpoint (embedded DuckDB): the busiest words, and keys per subtask"
step sql chk-fs/demo-fs -e 'SELECT key, value AS count FROM "word-counter"."count" ORDER BY value DESC LIMIT 5'
step sql chk-fs/demo-fs -e 'SELECT subtask, count(*) AS keys, sum(value) AS words FROM "word-counter"."count" GROUP BY subtask ORDER BY subtask'

note "where Flink routes a key"
step keygroup user-1 --key-type string --max-parallelism 128 --parallelism 3

fixture=$root/../shared/fixtures/flink/new-stateful-udf-migration-itcase-flink1.17-rocksdb-savepoint
if [ -d "$fixture" ]; then
  note "a real Apache Flink savepoint, read without a JVM"
  step inspect "$fixture" --key-groups
fi

# A canonical savepoint Flink 1.20.5 wrote (testdata/flink, made by testenv/flink's harness).
flink_sp=$(echo "$root"/testdata/flink/1.20.5/basic-hashmap-canonical/snapshot/savepoint-*)
note "a real Flink 1.20 savepoint: max parallelism 128 -> 256, which Flink itself cannot change; operator keyed (named by its uid, which this _metadata records only as a hash) to parallelism 3"
step inspect "$flink_sp"
step rescale "$flink_sp" --max-parallelism 256 --operator keyed=3 --output flink-maxp-256 --quiet
note "the result is a Flink savepoint (relative state files) that Flink restores at max parallelism 256"
step inspect flink-maxp-256 --subtasks
step verify flink-maxp-256
step diff "$flink_sp" flink-maxp-256 || true

printf '\ndemo output is in %s\n' "$out"
