#!/usr/bin/env bash
# The upgrade's whole restore matrix with real Flink (cmd's
# TestUpgradeRestoresInFlink; make test runs one cell of it a day): Flink
# 1.18.1, 1.19.3 and 1.20.5 snapshots (heap and RocksDB; canonical, native,
# checkpoints, incremental, changelog) of the jobs whose POJOs have List,
# Map and Set fields, upgraded with stateutil upgrade for Flink 2.0 to 2.3
# and restored in 2.0.2, 2.1.3, 2.2.1 and 2.3.0; each restored job's state
# must be the 1.x job's. The harness is built for each version first
# (online the first time, about 250 MB a minor). STATEUTIL_UPGRADE_FROM and
# STATEUTIL_UPGRADE_TO (versions, space separated) narrow the matrix. Then
# upgrade --check's verdicts on every Flink 1.20.5 entry of the corpus, state
# by state, against what Flink 2.3.0 does restoring each as it is
# (TestUpgradeCheckMatchesFlink; make test runs one entry a day), with its
# table of agreeing, disagreeing and undetermined states.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
for v in ${STATEUTIL_UPGRADE_FROM:-1.18.1 1.19.3 1.20.5} ${STATEUTIL_UPGRADE_TO:-2.0.2 2.1.3 2.2.1 2.3.0}; do
	nice scripts/flink-harness.sh "$v" build
done
export STATEUTIL_REQUIRE_FLINK=1 STATEUTIL_UPGRADE_MATRIX=full
export STATEUTIL_FLINK_JAVA_OPTS=${STATEUTIL_FLINK_JAVA_OPTS--XX:TieredStopAtLevel=1}
nice go test -count=1 -timeout 8h -v -run 'TestUpgradeRestoresInFlink|TestUpgradeCheckMatchesFlink' ./cmd 2>&1 |
	grep --line-buffered -E '^\s*(=== RUN|--- )|^(ok|FAIL|PASS|panic)|\.go:[0-9]+: |upgrade matrix|^ {8}\S'
