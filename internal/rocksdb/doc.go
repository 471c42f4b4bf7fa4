// Package rocksdb owns every native RocksDB object stateutil makes, and
// the small C++ shim (native.h, native.cc) for what RocksDB's C API does
// not reach or does slowly. Nothing else imports grocksdb.
//
// A DB is a writable instance opened through grocksdb (v1.7.15, against
// Debian's librocksdb 7.8.3). A ReadOnlyDB is opened by the shim, so that
// its iterators are the shim's too: they move pairs to Go a batch per cgo
// call, and an SSTWriter copies from them into a file without any pair
// crossing into Go. Debian's build has assertions on: every type here
// frees what it holds, iterators and column-family handles before their
// database.
package rocksdb
