#!/usr/bin/env bash
# make test: every Go test, with a real HDFS (Hadoop's MiniDFSCluster) on
# loopback. HDFS tests fail rather than skip here if the cluster is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/hdfs-start.sh
trap scripts/hdfs-stop.sh EXIT
. .cache/hdfs.env
export STATEUTIL_REQUIRE_HDFS=1
# The storage tests stop and restart the DataNode; run them before the
# packages that write to HDFS, not beside them.
# -v so that the log shows each HDFS test running against the cluster.
go test -count=1 -v ./storage/... 2>&1 | grep -E '^(=== RUN|--- |ok|FAIL|PASS|panic)|_test\.go:[0-9]+:'

# -v again so that the log names every HDFS test and every skip; other
# passing tests show only in their package's ok line.
go test -count=1 -v $(go list ./... | grep -v '/storage') 2>&1 |
  grep -E '^(ok|FAIL|panic)|^\s*--- (FAIL|SKIP)|^\s*--- PASS: \S*(HDFS|Hdfs|YARN)|_test\.go:[0-9]+:'

