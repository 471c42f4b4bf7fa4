// Package rocksdb is stateutil's "rocksdb" format: its reader, its writer
// and the SST fast path of rescaling. It follows the RocksDB layout of
// shared/design/FLINK-FORMATS.md §3; it contains no Flink code. The layout
// below is implemented in internal/rocksdbformat, which the runtime's
// incremental checkpointer (runtime/rocksstate) writes through too, and
// every native RocksDB object belongs to internal/rocksdb.
//
// # Instances
//
// Every keyed subtask has its own RocksDB instance with one column family
// per keyed state, named after the state ("default" stays empty).
//
// # Keys
//
//	[key group: 1 byte if max parallelism <= 128, else 2, big-endian]
//	[key][namespace][user key, map state only]
//
// stateutil keys and namespaces are opaque bytes typed by the state
// descriptor, not the output of self-delimiting Java serializers, so each
// part is serialized the way its type allows it to be split again:
//
//   - int32 / int64: 4 / 8 big-endian bytes, as Flink's Integer and Long
//     serializers write them.
//   - void namespace: one 0x00 byte, as Flink's VoidNamespace.
//   - every other type: an unsigned varint length, then the bytes, in the
//     spirit of Flink's String serializer, which also starts with a varint
//     length.
//   - the map user key is last and takes the rest of the key.
//
// Flink appends the length of key and namespace after each when both
// serializers are variable-length, to keep ("ab","c") and ("a","bc")
// apart. The length prefix above already does that, and does it for every
// combination, so no suffix is written: it would repeat information and
// buy no byte compatibility (Flink's strings are UTF-16 varints, ours
// UTF-8). The key-group prefix stays first, so a key group is one
// contiguous key range and a reader seeks straight to it.
//
// # Values
//
//   - value, reducing, aggregating and map state:
//     [8-byte last-access timestamp if the state has a TTL][value]
//   - list state: the elements joined by ',', each element
//     [8-byte last-access timestamp if TTL][uvarint length][value]
//
// Flink's ',' join only works because its element serialization is
// self-delimiting; the varint length makes ours so (a ',' inside a value is
// harmless). Lists are stored merged, one value per key, written by
// read-append-write rather than merge operands: the SST files then never
// hold operands and ldb, sst_dump or any RocksDB reads them without a
// custom merge operator.
//
// TTL: the model's Entry.ExpiresAt is the expiry; RocksDB stores the last
// access, expiry - ttl, as Flink does. The wrapping int64 arithmetic
// inverts exactly, so any ExpiresAt round-trips.
//
// A stored value (a merged list included) may not exceed
// rocksdbformat.MaxValueSize, 2^31-1 bytes, the limit of RocksDB's Java
// bridge; writes beyond it fail with snapshot.ErrTooLarge naming state and
// key.
//
// # Snapshots
//
// A checkpoint is <root>/<job-id>/chk-N/_metadata (envelope-framed msgpack,
// written last: the commit point) with each subtask's MANIFEST, CURRENT,
// OPTIONS and operator-state files in chk-N/<operator-id>-<subtask>/, and
// its SST files in <root>/<job-id>/shared/, referenced as "shared/<name>"
// (chkdir's job-relative form; every reference is resolved through
// chkdir, which refuses ones that leave the snapshot). An SST an earlier
// retained checkpoint uploaded is referenced again, not copied; the
// checkpointer's registry counts references across the retained
// checkpoints and deletes a shared file when none needs it. Every file is
// listed with size and CRC32C and checked on download.
//
// The snapshot.Writer builds savepoint-like, self-contained snapshots: the
// same _metadata, every file in the subtask directory
// <operator-id>-<subtask>, or <operator-id>-<subtask>-<token> when it
// replaces (--force) a snapshot that uses that name, so the old one stays
// readable until the new _metadata commits. Operator and raw state live in
// a small framed file per subtask, outside RocksDB.
package rocksdb
