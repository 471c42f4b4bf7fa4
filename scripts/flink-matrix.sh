#!/usr/bin/env bash
# make test-flink-matrix: the real-Flink matrices whole, where make test runs
# one slice a day. The corpus of every Flink minor from 1.18 (scripts/
# flink-corpus.sh, entries already in the cache kept; --force regenerates),
# each snapshot restored in Flink and read by the State Processor API, then
# every Go test that uses the harness or the corpus, with the writer's
# restore matrix on the newest 1.20 and the newest 2.x, then the --flink-version
# table on the newest release of every line the harness knows
# (STATEUTIL_FLINK_LINES). Hours on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${STATEUTIL_CACHE_DIR:-$PWD/.cache}
export STATEUTIL_REQUIRE_FLINK=1
export STATEUTIL_FLINK_CORPUS="$cache/flink-corpus"
scripts/flink-corpus.sh --verify --out "$STATEUTIL_FLINK_CORPUS" "$@"
STATEUTIL_FLINK_VERSIONS=${STATEUTIL_FLINK_VERSIONS:-1.20.5 2.3.0} \
  go test -count=1 -timeout 8h -v ./internal/flinkharness ./backends/flink ./cmd 2>&1 |
  grep -E '^(ok|FAIL|panic)|^\s*--- (FAIL|SKIP)|_test\.go:[0-9]+:'
STATEUTIL_FLINK_VERSIONS=${STATEUTIL_FLINK_LINES:-1.15.4 1.16.3 1.17.2 1.18.1 1.19.3 1.20.5 2.0.2 2.1.3 2.2.1 2.3.0} \
  go test -count=1 -timeout 2h -v -run 'TestFlinkVersionRestoresInFlink|TestSerializerTableIsWhatFlinkWrites' ./backends/flink ./cmd 2>&1 |
  grep -E '^(ok|FAIL|panic)|^\s*--- (FAIL|SKIP)|_test\.go:[0-9]+:'
