// Package buildinfo tells what this stateutil binary is: its version (the
// module's, the source revision of a development build, or what a release
// build stamps in with -ldflags -X), the Go and RocksDB it was built with,
// and the snapshot formats, Flink _metadata versions and storages it knows.
package buildinfo
