#!/usr/bin/env bash
# Makes the witness jobs' snapshots (CEP, the SQL operators and the DataStream value zoo;
# testenv/flink/README.md) for the newest 1.20 and 2.3.0 with scripts/flink-corpus.sh (100
# records each) into $CACHE/flink-witness: a heap canonical savepoint, a RocksDB native
# savepoint and incremental checkpoint, and on 2.3.0 a changelog checkpoint, ForSt's native
# savepoint and checkpoint and an unaligned checkpoint with records in flight (50 entries,
# about 13 MB). Each entry's dump.jsonl is the job's own dump (Flink
# restores the snapshot into dumpers); the zoo entries get descriptors.pb, the
# FileDescriptorSet of their Protobuf message (what protoc --descriptor_set_out writes), and
# kryo-classes.txt, the fields of the classes Kryo writes with its FieldSerializer and what
# the job's TokenSerializer writes (testenv/flink/witness/zoo.kryo-classes, written from the
# job's source), which the
# witness test gives stateutil as --proto-descriptors and --kryo-classes.
# Then it replaces testdata/flink-witness with the slice below (31 entries, about 5.0 MB):
# every job on every kind of snapshot at least once.
#
#   scripts/flink-witness-testdata.sh              # all of it
#   scripts/flink-witness-testdata.sh --jobs 2     # two entries at once
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}
full="$cache/flink-witness"
out="$root/testdata/flink-witness"
versions="1.20.5 2.3.0"
checked_in="
1.20.5/cep-hashmap-canonical 1.20.5/cep-rocksdb-native 1.20.5/cep-rocksdb-checkpoint-incremental
2.3.0/cep-hashmap-canonical 2.3.0/cep-rocksdb-native 2.3.0/cep-rocksdb-checkpoint-incremental
2.3.0/cep-forst-native 2.3.0/cep-forst-checkpoint 2.3.0/cep-hashmap-checkpoint-changelog 2.3.0/cep-hashmap-checkpoint-unaligned
1.20.5/zoo-hashmap-canonical 2.3.0/zoo-hashmap-canonical 2.3.0/zoo-rocksdb-native 2.3.0/zoo-forst-checkpoint
2.3.0/zoo-hashmap-checkpoint-changelog 2.3.0/zoo-hashmap-checkpoint-unaligned
1.20.5/sqlops-hashmap-canonical 1.20.5/sqlops-rocksdb-native 2.3.0/sqlops-hashmap-canonical 2.3.0/sqlops-hashmap-checkpoint-changelog
1.20.5/sqlevents-hashmap-canonical 2.3.0/sqlevents-hashmap-canonical 2.3.0/sqlevents-hashmap-checkpoint-changelog
2.3.0/sqlevents-hashmap-checkpoint-unaligned
1.20.5/sqlbatch-hashmap-canonical 1.20.5/sqlbatch-rocksdb-native 2.3.0/sqlbatch-hashmap-canonical
2.3.0/sqlbatch-rocksdb-checkpoint-incremental 2.3.0/sqlbatch-forst-native 2.3.0/sqlbatch-hashmap-checkpoint-changelog
2.3.0/sqlbatch-hashmap-checkpoint-unaligned"

entries=$("$root/scripts/flink-corpus.sh" --list --versions "$versions" | awk '$2 ~ /^(cep|zoo|sqlops|sqlevents|sqlbatch)-/ { print $2 }' | sort -u)
"$root/scripts/flink-corpus.sh" --out "$full" --versions "$versions" --entries "$(echo $entries)" --records 100 --force "$@"
for v in $versions; do
	for e in "$full/$v"/zoo-*/; do
		"$root/scripts/flink-harness.sh" "$v" proto-descriptors --out "$e/descriptors.pb" >/dev/null
		cp "$root/testenv/flink/witness/zoo.kryo-classes" "$e/kryo-classes.txt"
	done
done
tmp="$root/testdata/.flink-witness.new"
rm -rf "$tmp"
for e in $checked_in; do
	mkdir -p "$tmp/$(dirname "$e")"
	cp -a "$full/$e" "$tmp/$e"
done
rm -rf "$out"
mv "$tmp" "$out"
echo "flink-witness-testdata: $(du -sb --apparent-size "$out" | cut -f1) bytes in $out" >&2
