package connectors

import (
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// Flink's Kafka connector (flink-connector-kafka): the KafkaSource's
// splits, the exactly-once KafkaSink's writer state and its committables.

// kafkaSplitLayout is KafkaPartitionSplitSerializer version 0. Offsets
// are as the connector writes them: -1 latest, -2 earliest, -3 committed,
// and a stopping offset of Long.MIN_VALUE for none.
var kafkaSplitLayout = connectorLayout{
	name: "KafkaPartitionSplit",
	tag:  "split",
	decode: func(r *wire.Reader, version int32) any {
		if version != 0 {
			return nil
		}
		m := map[string]any{"topic": r.UTF("topic"), "partition": num(int64(r.I32("partition")))}
		m["startingOffset"] = num(r.I64("starting offset"))
		m["stoppingOffset"] = num(r.I64("stopping offset"))
		return m
	},
	encode: func(w *connWriter, m map[string]any) int32 {
		w.utf(m["topic"], "topic")
		w.i32(m["partition"], "partition")
		w.i64(m["startingOffset"], "startingOffset")
		w.i64(m["stoppingOffset"], "stoppingOffset")
		return 0
	},
}

// kafkaWriterStateLayout is KafkaWriterStateSerializer versions 1 (the
// transactional id prefix alone; connector 3.x) and 2 as connectors 4.0
// and 5.0 write it (the subtask owning the transactions, how many own
// them, the TransactionOwnership ordinal, and the precommitted
// transactions with their checkpoints).
var kafkaWriterStateLayout = connectorLayout{
	name: "KafkaWriterState",
	tag:  "writerState",
	decode: func(r *wire.Reader, version int32) any {
		if version != 1 && version != 2 {
			return nil
		}
		m := map[string]any{"@version": num(int64(version)), "transactionalIdPrefix": r.UTF("transactional id prefix")}
		if version == 1 {
			return m
		}
		m["ownedSubtaskId"] = num(int64(r.I32("owned subtask id")))
		m["totalNumberOfOwnedSubtasks"] = num(int64(r.I32("owned subtasks")))
		m["transactionOwnership"] = num(int64(r.I32("transaction ownership")))
		n := r.Count32(10, "precommitted transactions")
		txs := make([]any, 0, n)
		for i := 0; i < n && r.Err == nil; i++ {
			txs = append(txs, map[string]any{"transactionalId": r.UTF("transactional id"), "checkpointId": num(r.I64("checkpoint id"))})
		}
		m["precommittedTransactions"] = txs
		return m
	},
	encode: func(w *connWriter, m map[string]any) int32 {
		version := int32(w.int(m["@version"], 32, "@version"))
		if version != 1 && version != 2 {
			w.fail("KafkaWriterState version %d: want 1 or 2", version)
		}
		w.utf(m["transactionalIdPrefix"], "transactionalIdPrefix")
		if version == 2 {
			w.i32(m["ownedSubtaskId"], "ownedSubtaskId")
			w.i32(m["totalNumberOfOwnedSubtasks"], "totalNumberOfOwnedSubtasks")
			w.i32(m["transactionOwnership"], "transactionOwnership")
			txs := w.list(m["precommittedTransactions"], "precommittedTransactions")
			w.i32(int64(len(txs)), "precommittedTransactions")
			for _, t := range txs {
				tx := w.obj(t, "precommitted transaction")
				w.utf(tx["transactionalId"], "transactionalId")
				w.i64(tx["checkpointId"], "checkpointId")
			}
		}
		return version
	},
}

// kafkaCommittable reads KafkaCommittableSerializer version 1: the
// producer's epoch and id and its transactional id.
func kafkaCommittable(r *wire.Reader, version int32) any {
	if version != 1 {
		return nil
	}
	m := map[string]any{"@committable": "KafkaCommittable", "epoch": num(int64(r.I16("epoch")))}
	m["producerId"] = num(r.I64("producer id"))
	m["transactionalId"] = r.UTF("transactional id")
	return m
}

func (w *connWriter) kafkaCommittable(m map[string]any) {
	w.framed(1, func(w *connWriter) {
		w.i16(m["epoch"], "epoch")
		w.i64(m["producerId"], "producerId")
		w.utf(m["transactionalId"], "transactionalId")
	})
}
