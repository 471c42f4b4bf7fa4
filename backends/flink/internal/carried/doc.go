// Package carried is what a Flink snapshot records beyond stateutil's
// model, carried in snapshot.Snapshot.Carried and snapshot.Operator.Carried
// so that the flink writer can write it back: serializer snapshots as
// bytes, the coordinator state, master states, CheckpointProperties, raw
// state offsets, and the state file headers written from them. The reader
// fills it in; only the writer reads it. It travels as JSON inside the
// model, so a plan written by one process can be executed by another.
//
// The headers are Flink's KeyedBackendSerializationProxy and
// OperatorBackendSerializationProxy (FLINK-FORMATS.md), in the layouts the
// Flink lines written for read.
package carried
