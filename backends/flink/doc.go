// Package flink reads Apache Flink checkpoints and savepoints: the `_metadata`
// file (format versions 2 to 7) and the state files it points to.
//
// Everything here is a bounded, panic-free decoder of untrusted bytes: every
// length is checked against the bytes that remain before anything is
// allocated, and every failure names the file and the byte offset where the
// bytes stopped making sense.
//
// The layout facts come from shared/design/FLINK-FORMATS.md; this package
// contains no Flink code.
package flink
