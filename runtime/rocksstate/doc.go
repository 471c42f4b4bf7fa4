// Package rocksstate is the stream runtime's RocksDB keyed state: one
// local instance per keyed subtask with the point reads the runtime's
// state backend makes, and Incremental, which checkpoints the instances
// in the rocksdb format (internal/rocksdbformat) and restores them. A
// checkpoint uploads only the SST files no retained checkpoint has, into
// the job's shared/ directory; the Registry counts the retained
// checkpoints that reference each shared file, so retention deletes
// exactly the files none needs.
package rocksstate
