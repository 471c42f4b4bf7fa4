// Package statefile reads the state files `_metadata` points to
// (FLINK-FORMATS.md §3, §6 and §8): keyed state files, whose header lists
// the states and their serializer snapshots and whose key groups are
// canonical (length-prefixed) or heap (walked by decoding each value);
// operator state files and broadcast state; the meta data of native
// RocksDB snapshots; the channel state of unaligned checkpoints, checked
// against its handles and copied into a stream of a savepoint's own; and
// the Resolver that finds each handle's bytes on any storage.
//
// Entries come out split into key, namespace, user key and value by the
// layout of their state, or whole where a serializer cannot be walked
// (never guessed). Every read is bounded by the stream's declared length.
package statefile
