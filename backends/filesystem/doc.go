// Package filesystem is stateutil's directory format ("filesystem", also
// accepted as "fs" and "hashmap"), on any storage: local disk or HDFS.
//
// # Layout
//
// A snapshot is a directory in the chkdir layout (a chk-<N> of a job
// directory, or a self-contained savepoint directory):
//
//	_metadata                      envelope "STUTILFS" v1 around a msgpack body; written last
//	op<k>-<subtask>.<token>.keyed  a subtask's keyed state, key group by key group
//	op<k>-<subtask>.<token>.oper   a subtask's operator state, element by element
//	op<k>-<subtask>.<token>.rawk   raw keyed state (opaque bytes)
//	op<k>-<subtask>.<token>.rawo   raw operator state (opaque bytes)
//
// token is random per write, so a forced rewrite never touches the files of
// the snapshot it replaces until the new _metadata is committed. Any of
// these blobs smaller than the inline threshold (WriteOptions.InlineThreshold,
// 20 KiB by default) is kept inside _metadata instead of a file; the bytes
// are the same either way.
//
// The _metadata body is the snapshot.Snapshot (operators, descriptors,
// subtasks with their statistics: entries and bytes per key group,
// elements per operator state, files with size and CRC32C) and, per
// subtask, where its state lies: for keyed state the state-name table, the
// offset of every key group of the subtask's range (one more offset than
// key groups; key group i spans offsets[i]..offsets[i+1]) and the CRC32C of
// every key-group section; for operator state each state's element offsets
// and lengths. Every blob records its size and CRC32C. A reader checks all
// of it against the file sizes before it reads a byte of state.
//
// # Key-group section
//
// A keyed file is the concatenation of its key-group sections in key-group
// order; an empty key group is an empty section. A section is a sequence of
// entries, each:
//
//	uvarint  head = stateIndex<<1 | hasTTL
//	uvarint  len(key)       key
//	uvarint  len(namespace) namespace
//	uvarint  len(userKey)   userKey    (map state; empty otherwise)
//	uvarint  len(value)     value
//	varint   expiresAt                 (only when hasTTL; Unix ms, never 0)
//
// Varints are encoding/binary's, and must be minimal, so one sequence of
// entries has exactly one encoding. List state has one entry per element,
// map state one per user key. The entry count and the bytes of key,
// namespace, user key and value of each section are in _metadata and are
// checked when the section is read.
//
// # Operator state
//
// An operator-state file is the elements' bytes, concatenated in the order
// they were written; _metadata gives each element's offset and length per
// state name. The elements must tile the file exactly.
package filesystem
