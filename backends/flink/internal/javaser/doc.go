// Package javaser parses and writes Java Object Serialization streams
// (`AC ED 00 05`, the grammar of the Java Object Serialization
// Specification, chapter 6) as far as Flink's files need them: the
// CheckpointProperties at the end of `_metadata` (FLINK-FORMATS.md §5),
// the LogicalTypes of RowData serializer snapshots and the legacy
// serializers of Flink 1.3–1.6 (§9).
//
// Parse walks any stream into plain values (Object, Enum, Array, Class)
// without running Java and without unbounded allocation; Writer writes
// exactly the class descriptions, enums and objects it is given, with
// handles assigned as ObjectOutputStream assigns them.
package javaser
