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
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/testdata/flink-core-value-vectors"
versions=("$@")
[[ ${#versions[@]} -gt 0 ]] || versions=(1.15.4 1.20.5 2.3.0)
mkdir -p "$out"
for v in "${versions[@]}"; do
	"$root/scripts/flink-harness.sh" "$v" build
	target="$root/testenv/flink/target/$v"
	tmp="$out/.$v.jsonl.tmp"
	java -cp "$target/classes:$(cat "$target/classpath.txt")" stateutil.flink.CoreValueVectors "$tmp"
	mv "$tmp" "$out/$v.jsonl"
	echo "flink-core-value-vectors: $out/$v.jsonl" >&2
done
