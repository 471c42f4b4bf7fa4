#!/usr/bin/env bash
# Regenerates the connector corpora, testdata/flink-connectors and testdata/flink-kafka
# (testenv/flink/README.md): for each Flink version, the connectors and kafka jobs' heap
# canonical and RocksDB native savepoints and the checkpoints a running job leaves (a full heap
# one, an incremental RocksDB one), 200 records each, with the job's dump and manifest. The
# kafka job runs against a fresh broker each time (scripts/kafka-broker.sh). Neither job's
# snapshots are restored: its files and transactions lived with the run, so the job's dump is
# the witness. Snapshots are written under a temporary directory (the manifests' original_dir)
# and moved into place when complete.
#
#   scripts/flink-connector-testdata.sh                                   # every version and entry
#   scripts/flink-connector-testdata.sh --versions "1.18.1" --entries "kafka-hashmap-canonical"
#
# Options: --versions "V ...", --entries "E ..." (<job>-<backend>-<kind>[-incremental]),
# --jobs N (entries made at once; default 1).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { echo "flink-connector-testdata: $*" >&2; }

versions="1.18.1 1.19.3 1.20.5 2.0.2 2.1.3 2.2.1 2.3.0"
entries=""
jobs=1
while [[ $# -gt 0 ]]; do
	case $1 in
	--versions) versions=$2; shift 2 ;;
	--entries) entries=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	*) say "unknown argument $1"; exit 2 ;;
	esac
done
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { say "--jobs wants a number of at least 1"; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/flink-connector-testdata.XXXXXX")
results="$tmp/results"
trap 'rm -rf "$tmp"' EXIT

# make_entry V E: one snapshot with its dump and manifest, moved into testdata when complete.
make_entry() {
	local v=$1 e=$2 job backend kind
	IFS=- read -r job backend kind _ <<<"$e"
	local work="$tmp/$v/$e" dest="$root/testdata/flink-$job/$v/$e"
	mkdir -p "$work"
	local cmd=("$root/scripts/flink-harness.sh" "$v" snapshot --job "$job" --backend "$backend" --kind "$kind"
		--records 200 --dir "$work/snapshot" --dump "$work/dump.jsonl" --manifest "$work/manifest.json")
	[[ $e == *-incremental ]] && cmd+=(--incremental)
	[[ $job == kafka ]] && cmd=("$root/scripts/kafka-broker.sh" "${cmd[@]}")
	if ! "${cmd[@]}" >/dev/null 2>"$work.err"; then
		say "$v $e: FAILED: $(tail -n 1 "$work.err")"
		echo failed >>"$results"
		return
	fi
	rm -rf "$dest"
	mkdir -p "$(dirname "$dest")"
	mv "$work" "$dest"
	say "$v $e: written"
	echo written >>"$results"
}

touch "$results"
for v in $versions; do
	for job in connectors kafka; do
		for k in hashmap-canonical rocksdb-native hashmap-checkpoint rocksdb-checkpoint-incremental; do
			e=$job-$k
			[[ -z $entries || " $entries " == *" $e "* ]] || continue
			while (($(jobs -rp | wc -l) >= jobs)); do
				wait -n || true
			done
			make_entry "$v" "$e" </dev/null &
		done
	done
done
wait
written=$(grep -cx written "$results" || true)
failed=$(grep -cx failed "$results" || true)
say "$written entries written, $failed failed"
((failed == 0))
