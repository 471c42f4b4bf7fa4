#!/usr/bin/env bash
# Regenerates testdata/flink-core-value-vectors: per Flink version, flink-core's
# serializers of Flink's Value types, of Void and of the single-thread-checking
# wrapper, their snapshots and values as that version writes them, with the JSON
# and hashCode of each value (testenv/flink CoreValueVectors, run on the
# harness's class path). backends/flink/internal/typeser's tests read them.
#
#   scripts/flink-core-value-vectors.sh                 # the default versions
#   scripts/flink-core-value-vectors.sh 1.20.5 2.3.0    # these only
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/flink-vectors.sh"
if [[ $# -eq 0 ]]; then
	set -- 1.15.4 1.20.5 2.3.0
fi
vectors CoreValueVectors flink-core-value-vectors "$@"
