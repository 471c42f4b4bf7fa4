package upgrade

import (
	"fmt"

	"github.com/stateutil/stateutil/snapshot"
)

// restoredFromMajor1 are serializer snapshot classes, beyond those the
// flink format knows across the majors, that Flink 2.3.0 restores from Flink 1.20.5 as they
// are, values intact (seen restoring DataStream windows and joins, Table
// and SQL operators and CEP's operator from their Flink 1.20.5 savepoints
// and checkpoints), by the snapshot version both write. Only the upgrade
// takes them as carried unchanged; whether Flink 1.x restores them from
// 2.x is not known, so a copy across the majors still refuses them.
var restoredFromMajor1 = map[string]int32{
	"org.apache.flink.streaming.api.windowing.windows.TimeWindow$Serializer$TimeWindowSerializerSnapshot":                  3,
	"org.apache.flink.streaming.api.windowing.windows.GlobalWindow$Serializer$GlobalWindowSerializerSnapshot":              3,
	"org.apache.flink.streaming.api.datastream.CoGroupedStreams$UnionSerializerSnapshot":                                   3,
	"org.apache.flink.api.java.typeutils.runtime.Tuple0SerializerSnapshot":                                                 3,
	"org.apache.flink.table.runtime.typeutils.RowDataSerializer$RowDataSerializerSnapshot":                                 3,
	"org.apache.flink.table.runtime.typeutils.ExternalSerializer$ExternalSerializerSnapshot":                               3,
	"org.apache.flink.table.runtime.typeutils.SortedMapSerializerSnapshot":                                                 3,
	"org.apache.flink.table.runtime.operators.window.TimeWindow$Serializer$TimeWindowSerializerSnapshot":                   3,
	"org.apache.flink.table.runtime.typeutils.StringDataSerializer$StringDataSerializerSnapshot":                           3,
	"org.apache.flink.table.runtime.typeutils.ArrayDataSerializer$ArrayDataSerializerSnapshot":                             3,
	"org.apache.flink.table.runtime.typeutils.MapDataSerializer$MapDataSerializerSnapshot":                                 3,
	"org.apache.flink.table.runtime.typeutils.DecimalDataSerializer$DecimalSerializerSnapshot":                             3,
	"org.apache.flink.table.runtime.typeutils.RawValueDataSerializer$RawValueDataSerializerSnapshot":                       3,
	"org.apache.flink.table.runtime.typeutils.TimestampDataSerializer$TimestampDataSerializerSnapshot":                     1,
	"org.apache.flink.cep.nfa.DeweyNumber$DeweyNumberSerializer$DeweyNumberSerializerSnapshot":                             3,
	"org.apache.flink.cep.nfa.sharedbuffer.SharedBufferNodeSerializerSnapshotV2":                                           3,
	"org.apache.flink.table.dataview.NullSerializer$NullSerializerSnapshot":                                                3,
	"org.apache.flink.cep.nfa.sharedbuffer.SharedBufferEdge$SharedBufferEdgeSerializer$SharedBufferEdgeSerializerSnapshot": 3,
	"org.apache.flink.cep.nfa.NFAStateSerializerSnapshot":                                                                  3,
	"org.apache.flink.cep.nfa.sharedbuffer.EventId$EventIdSerializer$EventIdSerializerSnapshot":                            3,
	"org.apache.flink.cep.nfa.sharedbuffer.LockableTypeSerializerSnapshot":                                                 3,
	"org.apache.flink.cep.nfa.sharedbuffer.NodeId$NodeIdSerializer$NodeIdSerializerSnapshot":                               3,
}

// RestoredFromMajor1 is the snapshot version of class, if it is one
// Flink 2.x restores from Flink 1.x as it is (restoredFromMajor1).
func RestoredFromMajor1(class string) (int32, bool) {
	v, ok := restoredFromMajor1[class]
	return v, ok
}

// legacySourceStates are the operator states of Flink 1.x's
// SourceFunction sources (the Kafka and Kinesis consumers, the file
// monitoring source, FromElementsFunction).
var legacySourceStates = map[string]bool{
	"topic-partition-offset-states": true, "Kinesis-Stream-Shard-State": true,
	"file-monitoring-state": true, "from-elements-state": true,
}

// LegacySource says why an operator state named name blocks the upgrade
// of its operator: it is a legacy SourceFunction source's ("" if not).
func LegacySource(name string) string {
	if !legacySourceStates[name] {
		return ""
	}
	return fmt.Sprintf("it holds %q, the state of a legacy SourceFunction source, which Flink 2.x removed: the job must use a FLIP-27 source, whose state is another", name)
}

// InFlightFinding is the verdict on an operator whose subtasks hold data
// in flight, t: Flink 2.x (to) restores an unaligned checkpoint's data in
// flight as it is, with the checkpoint, so it restores as is unless the
// checkpoint must be copied (copied: a state is rewritten or blocked),
// and no copy for the other major can carry it: its records are the
// job's serialized by Flink 1.x, which a copy does not rewrite.
func InFlightFinding(op string, t snapshot.InFlightTotals, copied bool, to string) snapshot.UpgradeFinding {
	if copied {
		return snapshot.UpgradeFinding{Operator: op, Scope: snapshot.ScopeWholeOperator, Verdict: snapshot.Blocked,
			Reason: fmt.Sprintf("%d of its subtasks hold data in flight (an unaligned checkpoint: %d bytes in %d channels), which no copy for Flink 2.x can carry: "+
				"restore the checkpoint in Flink 1.x, take a savepoint (savepoints are aligned), and upgrade that", t.Subtasks, t.Bytes, t.Channels)}
	}
	return snapshot.UpgradeFinding{Operator: op, Scope: snapshot.ScopeWholeOperator, Verdict: snapshot.RestoresAsIs,
		Reason: fmt.Sprintf("%d of its subtasks hold data in flight (an unaligned checkpoint: %d bytes in %d channels), which %s restores with the checkpoint as it is: "+
			"restore the checkpoint itself (no copy for Flink 2.x can carry data in flight)", t.Subtasks, t.Bytes, t.Channels, to)}
}
