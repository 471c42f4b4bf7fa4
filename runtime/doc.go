// Package runtime is stateutil's small stream runtime: it runs jobs in
// Apache Flink's model and produces, restores and rescales the snapshots the
// rest of stateutil reads.
//
// A Job is a simple chain: one partitioned, replayable source, then one or
// more keyed stages (each reached through a keyBy), then a transactional
// sink. Every operator runs at its own parallelism as goroutines joined by
// bounded channels, so a slow consumer slows its producers (backpressure).
// keyBy sends each record to the subtask Flink would: the key group of the
// key's Java hashCode (keygroup.OfHash), then keygroup.SubtaskOf.
//
// Keyed functions keep state through typed handles (ValueState, ListState,
// MapState, ReducingState, AggregatingState) that are scoped to the key of
// the record being processed and may carry a TTL. State lives in a
// KeyedBackend: the heap backend (maps per key group) is built in, and
// RocksDBStateBackend keeps each keyed subtask's state in an embedded
// RocksDB instance, read with point lookups and prefix seeks, and takes
// incremental checkpoints (Result.Incremental reports, per checkpoint,
// what it uploaded and what it reused from earlier ones).
//
// Checkpoints use aligned barriers. The coordinator injects a barrier at
// every source subtask every N records or T milliseconds; an operator with
// several inputs stops reading an input once its barrier arrived until the
// barrier arrived on all of them, then snapshots its state into the
// checkpoint's snapshot.Writer and forwards the barrier. The coordinator
// commits the checkpoint only when every subtask acknowledged it, then lets
// the sinks commit the output they staged for it, which makes the output
// exactly-once. A job that ends takes a final checkpoint, so its last output
// is committed too.
//
// A job can start from any snapshot stateutil reads (snapshot.Open) at any
// parallelism up to the snapshot's max parallelism: keyed state by key
// group, the sources' (partition, offset) pairs in split or union mode.
package runtime
