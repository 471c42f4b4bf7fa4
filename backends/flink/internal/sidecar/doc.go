// Package sidecar is the checksum manifest of the Flink savepoints
// stateutil writes. Flink's files carry no checksums, so every savepoint
// stateutil writes gets a manifest beside `_metadata`, File: each file's path
// (relative to the directory), size and CRC32C, `_metadata`'s too, and the
// CRC32C of the manifest's own bytes, which ends it. Flink restores only
// what `_metadata` refers to and never looks at it. Opening a savepoint
// that has one checks `_metadata` and the manifest, before decoding
// either; verify checks every other file it lists (CheckFiles). A
// snapshot without one (written by Flink) reads as it always did.
//
// The manifest is JSON, one file a line:
//
//	{"stateutil_checksums":1,"files":[
//	{"path":"_metadata","size":1234,"crc32c":"0a1b2c3d"},
//	...
//	],"crc32c":"89abcdef"}
//
// its last field the CRC32C of every byte before `,"crc32c":`, so that any
// change to any byte of it is caught.
package sidecar
