#!/usr/bin/env bash
# The restore check of the witness snapshots (internal/flinkwitness's
# TestWitnessRestoresInFlink; make test runs one snapshot a day, make
# test-witness-restore all of them): Flink goes on from each snapshot (the
# harness's continue, to twice its records), from stateutil's `rescale
# --parallelism 3` of it and from its `convert --to flink`, and the outputs
# must be the same, or stateutil must refuse the copies with the exit code
# and message the test lists for that snapshot. Ends with a table: per
# snapshot, the original's outputs and each copy's outcome.
#
#   scripts/flink-witness-restore-check.sh                        # every snapshot
#   scripts/flink-witness-restore-check.sh 2.3.0/cep-rocksdb-native testdata/flink-witness/1.20.5/zoo-hashmap-canonical
#
# Snapshots are VERSION/NAME or paths of entries, of testdata/flink-witness or
# of the set STATEUTIL_FLINK_WITNESS names (scripts/flink-witness-testdata.sh
# makes the whole one in $CACHE/flink-witness); paths name their set.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ids=()
for a in "$@"; do
	if [[ -d $a ]]; then
		dir=$(cd "$a" && pwd)
		root=$(dirname "$(dirname "$dir")")
		if [[ $root != "$(cd testdata/flink-witness && pwd)" ]]; then
			if [[ -n ${STATEUTIL_FLINK_WITNESS:-} && $STATEUTIL_FLINK_WITNESS != "$root" ]]; then
				echo "flink-witness-restore-check: $a is not in $STATEUTIL_FLINK_WITNESS" >&2
				exit 2
			fi
			export STATEUTIL_FLINK_WITNESS=$root
		fi
		ids+=("$(basename "$(dirname "$dir")")/$(basename "$dir")")
	else
		ids+=("$a")
	fi
done
for v in 1.20.5 2.3.0; do
	nice scripts/flink-harness.sh "$v" build
done
export STATEUTIL_REQUIRE_FLINK=1 STATEUTIL_WITNESS_RESTORE=${ids[*]:-full}
export STATEUTIL_FLINK_JAVA_OPTS=${STATEUTIL_FLINK_JAVA_OPTS--XX:TieredStopAtLevel=1}
nice go test -count=1 -timeout 6h -v -run '^TestWitnessRestoresInFlink$' ./internal/flinkwitness 2>&1 |
	grep --line-buffered -vE '^\s*--- PASS|^=== RUN|^PASS$'
