#!/usr/bin/env bash
# make test: every Go test, with a real HDFS (MiniDFSCluster) on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -count=1 ./...
