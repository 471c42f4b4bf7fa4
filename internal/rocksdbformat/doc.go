// Package rocksdbformat is what the rocksdb format (backends/rocksdb, which
// documents the layout) and the runtime's RocksDB checkpointer
// (runtime/rocksstate) both write and read: the key and value layout
// (Codec), the _metadata model and codec, the operator-state file, the
// live Instance of one keyed subtask and its upload into a snapshot
// directory, file transfer checked by size and CRC32C, and the entry scan.
package rocksdbformat
