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
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/testdata/flink-serializer-vectors"
versions=("$@")
[[ ${#versions[@]} -gt 0 ]] || versions=(1.15.4 1.16.3 1.20.5 2.1.3 2.3.0)
mkdir -p "$out"
for v in "${versions[@]}"; do
	"$root/scripts/flink-harness.sh" "$v" build
	target="$root/testenv/flink/target/$v"
	tmp="$out/.$v.jsonl.tmp"
	java -cp "$target/classes:$(cat "$target/classpath.txt")" stateutil.flink.SerializerVectors "$tmp"
	mv "$tmp" "$out/$v.jsonl"
	echo "flink-serializer-vectors: $out/$v.jsonl" >&2
done
