#!/usr/bin/env bash
# Regenerates testdata/flink-table-vectors: per Flink version, the Table
# runtime's serializers' snapshots and values as that version writes them,
# with the JSON of each value (the harness's table-vectors command;
# testenv/flink/README.md). backends/flink/internal/typeser/tableruntime's
# tests read them.
#
#   scripts/flink-table-vectors.sh                 # the default versions
#   scripts/flink-table-vectors.sh 1.20.3 2.3.0    # these only
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/testdata/flink-table-vectors"
versions=("$@")
[[ ${#versions[@]} -gt 0 ]] || versions=(1.15.4 1.18.1 1.20.3 2.0.0 2.3.0)
mkdir -p "$out"
for v in "${versions[@]}"; do
	tmp="$out/.$v.jsonl.tmp"
	"$root/scripts/flink-harness.sh" "$v" table-vectors --out "$tmp" >/dev/null
	mv "$tmp" "$out/$v.jsonl"
	echo "flink-table-vectors: $out/$v.jsonl" >&2
done
