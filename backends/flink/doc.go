// Package flink is the snapshot format "flink": real Apache Flink
// checkpoints and savepoints, read into stateutil's model and written as
// canonical savepoints that Flink restores.
//
// It assembles the packages below it. From the bottom up:
//
//   - internal/wire: the sticky-error reader and writer of big-endian
//     values, modified UTF-8, the damage and version errors;
//   - internal/javaser: Java Object Serialization, parsed and written;
//   - metadata: the `_metadata` file, its handles and CheckpointProperties;
//   - internal/typeser: serializer snapshots and the codecs of their values,
//     with the table of serializer families, and beside each other the
//     families under it (kryo, avro, tableruntime, scala, connectors,
//     cep, streaming, coretypes, javaserial);
//   - internal/statefile: keyed and operator state files, key-group
//     streams, heap, canonical and native layouts, the file resolver;
//   - internal/changelog: the changelog state backend's changes;
//   - internal/carried: what a snapshot records beyond the model (the
//     serializer snapshots' bytes, coordinator and master states, raw
//     state offsets), carried from the reader to the writer, and the
//     state file headers written from it;
//   - internal/upgrade: one state carried from Flink 1.x to Flink 2.x
//     (which serializers change, their new snapshots, each value written
//     again and checked), given the Kryo family's part by this package.
//
// This package holds what joins them: the format's registration and the
// table of serializer families (format.go), the model it builds, the
// reader, the writer and its re-hashing copies, the checksum sidecar, and
// the table of Flink releases it writes for, and the upgrade to Flink 2.x
// (upgrade.go). layers_test.go enforces the order.
//
// Everything here reads untrusted bytes: every length is checked against
// the bytes that remain before anything is allocated, and every failure
// names the file and the byte offset where the bytes stopped making sense.
// The layout facts come from shared/design/FLINK-FORMATS.md; none of this
// is Flink code.
package flink
