#!/usr/bin/env bash
# Regenerates testdata/flink, the small checked-in slice of the real-Flink
# corpus (see testenv/flink/README.md), with scripts/flink-corpus.sh --verify:
# for the newest 1.20 and the newest 2.x, basic (hashmap canonical, RocksDB
# native, RocksDB incremental checkpoint, one compressed, one changelog), types
# (hashmap canonical, and heap native for its Kryo values), tuplekeys,
# longkeys, orders, avro, rowtypes and collections, heapkryo (heap native, and a compressed
# heap checkpoint), kryojdk (hashmap canonical, RocksDB native), windows (hashmap canonical and native, RocksDB native), scala (1.x only: hashmap
# canonical and checkpoint, RocksDB native), and the planner's
# sql and sqltime (hashmap canonical), 200 records each, with the job's dump, Flink's restore dump and the State
# Processor API's dump (spa.err where it cannot read the job).
#
#   scripts/flink-testdata.sh            # replaces testdata/flink
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/testdata/flink"
entries="basic-hashmap-canonical basic-rocksdb-native basic-rocksdb-checkpoint-incremental
basic-rocksdb-canonical-compressed basic-hashmap-checkpoint-changelog types-hashmap-canonical types-hashmap-native
tuplekeys-hashmap-canonical longkeys-hashmap-canonical orders-hashmap-canonical avro-hashmap-canonical
rowtypes-hashmap-canonical collections-hashmap-canonical heapkryo-hashmap-native heapkryo-hashmap-checkpoint-compressed
kryojdk-hashmap-canonical kryojdk-rocksdb-native
windows-hashmap-canonical windows-hashmap-native windows-rocksdb-native sql-hashmap-canonical sqltime-hashmap-canonical
scala-hashmap-canonical scala-rocksdb-native scala-hashmap-checkpoint"
tmp="$root/testdata/.flink.new"
rm -rf "$tmp"
"$root/scripts/flink-corpus.sh" --out "$tmp" --versions "1.20.5 2.3.0" --entries "$(echo $entries)" \
	--records 200 --verify --force
rm -rf "$out"
mv "$tmp" "$out"
echo "flink-testdata: $(du -sb --apparent-size "$out" | cut -f1) bytes in $out" >&2
