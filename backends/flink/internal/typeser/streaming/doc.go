// Package streaming is the serializer family of flink-streaming-java's
// operators' own state: StreamElementSerializer (the records and
// watermarks an async I/O operator keeps), the interval join's
// BufferEntrySerializer, and TwoPhaseCommitSinkFunction's
// StateSerializer (its pending and committing transactions and its
// context).
package streaming
