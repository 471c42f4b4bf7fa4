#!/usr/bin/env bash
# Regenerates testdata/flink-serializer-vectors: per Flink version, the
# serializers of flink-core, flink-runtime and flink-streaming-java that the
# other vector files leave out (generic arrays, TTL values, TtlAwareSerializer,
# timers, stream elements, interval join buffer entries, two-phase commit sink
# state), their snapshots and values as that version writes them, with the JSON
# of each value (testenv/flink SerializerVectors, run on the harness's class
# path). The tests of backends/flink/internal/typeser and its families read them.
#
#   scripts/flink-serializer-vectors.sh                 # the default versions
#   scripts/flink-serializer-vectors.sh 1.20.5 2.3.0    # these only
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/flink-vectors.sh"
if [[ $# -eq 0 ]]; then
	set -- 1.15.4 1.16.3 1.20.5 2.1.3 2.3.0
fi
vectors SerializerVectors flink-serializer-vectors "$@"
