package streaming

import (
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/snapshot"
)

// The values, as Flink's serializers write them (every snapshot is a
// composite one; the JSON names the fields as Flink's classes do):
//
//   - StreamElement: a tag byte, then by tag: 0 a record with its long
//     timestamp, then the value; 1 a record without one, the value only;
//     2 a watermark, its long timestamp; 3 a latency marker, its long
//     marked time, its operator id (the long lower then the long upper
//     part) and its int subtask index; 4 a watermark status, an int, 0
//     active or -1 idle; from Flink 1.19 on, 5 record attributes, a
//     boolean, whether the input is backlogged, and 6 an internal
//     watermark, its int subpartition index, then its long timestamp.
//     Shown as one key naming the element's kind ("record", "watermark",
//     "latencyMarker", "watermarkStatus", "recordAttributes",
//     "internalWatermark") holding its fields.
//   - BufferEntry: a boolean, whether the element was joined, then the
//     element.
//   - TwoPhaseCommitSinkFunction's State: the pending transaction (a
//     boolean, whether there is one, where the serializer allows none;
//     then its handle and its long start time), an int count of the
//     transactions waiting for their commit and each of them, then a
//     boolean and, if it is true, the context.

// Family is flink-streaming-java's serializers of operator state.
var Family = &typeser.Family{
	Name: "streaming",
	Kind: kindOf,
	Snapshots: map[string]typeser.SnapshotParser{
		"TwoPhaseCommitSinkFunction$StateSerializerSnapshot": parseSinkStateSnapshot,
	},
	Exprs: map[string]typeser.ExprLeaf{
		"streamelement": {Class: streamElementSnapshot},
		"bufferentry":   {Class: bufferEntrySnapshot},
	},
	Expr:   typeExpr,
	Walk:   walk,
	Sized:  sized,
	Encode: encode,
	Schema: schema,
}

const (
	streamElementSnapshot = "org.apache.flink.streaming.runtime.streamrecord.StreamElementSerializer$StreamElementSerializerSnapshot"
	bufferEntrySnapshot   = "org.apache.flink.streaming.api.operators.co.IntervalJoinOperator$BufferEntrySerializerSnapshot"
)

// Kinds of the family's serializers.
const (
	kindStreamElement = "StreamElement"
	kindBufferEntry   = "BufferEntry"
	kindSinkState     = "TwoPhaseCommitState"
)

// kindOf classifies the family's serializers and their snapshots.
func kindOf(n string) string {
	switch {
	case !strings.HasPrefix(n, "org.apache.flink.streaming."):
		return ""
	case strings.Contains(n, ".streamrecord.StreamElementSerializer"):
		return kindStreamElement
	case strings.Contains(n, ".IntervalJoinOperator$BufferEntrySerializer"), strings.Contains(n, ".IntervalJoinOperator$BufferSerializerConfigSnapshot"):
		return kindBufferEntry
	case strings.Contains(n, "TwoPhaseCommitSinkFunction$StateSerializer"):
		return kindSinkState
	}
	return ""
}

// nested is how many serializers each kind nests.
var nested = map[string]int{kindStreamElement: 1, kindBufferEntry: 1, kindSinkState: 2}

// complete reports whether s nests the serializers its kind needs.
func complete(s *typeser.SerializerSnapshot) bool {
	n, ok := nested[typeser.KindOf(s)]
	if !ok || len(s.Nested) != n {
		return false
	}
	for _, c := range s.Nested {
		if c == nil {
			return false
		}
	}
	return true
}

func typeExpr(s *typeser.SerializerSnapshot, kind string, inner func() string) (string, bool) {
	switch kind {
	case kindStreamElement, kindBufferEntry:
		if complete(s) {
			return strings.ToLower(kind) + "(" + inner() + ")", true
		}
	}
	// A sink state's layout hangs on its snapshot's outer part, which no
	// type expression spells: its values need the snapshot's bytes.
	return "", false
}

func sized(s *typeser.SerializerSnapshot, depth int) bool {
	if !complete(s) {
		return false
	}
	for _, c := range s.Nested {
		if !typeser.SizedDepth(c, depth+1) {
			return false
		}
	}
	return true
}

// value walks one value of the nested serializer s: decoded, or skipped.
func value(r *wire.Reader, s *typeser.SerializerSnapshot, depth int, decode bool) (any, bool) {
	if !decode {
		return nil, typeser.SkipValue(r, s, depth+1)
	}
	return typeser.DecodeAny(r, s, depth+1), true
}

func walk(r *wire.Reader, s *typeser.SerializerSnapshot, depth int, decode bool) (any, bool) {
	if !complete(s) {
		return nil, false
	}
	switch typeser.KindOf(s) {
	case kindStreamElement:
		return streamElement(r, s.Nested[0], depth, decode)
	case kindBufferEntry:
		joined := r.Bool("buffer entry joined flag")
		element, ok := value(r, s.Nested[0], depth, decode)
		if !decode || r.Err != nil {
			return nil, ok
		}
		return map[string]any{"element": element, "hasBeenJoined": joined}, true
	case kindSinkState:
		return sinkState(r, s, depth, decode)
	}
	return nil, false
}

// Stream element tags (StreamElementSerializer).
const (
	tagRecordWithTimestamp = iota
	tagRecord
	tagWatermark
	tagLatencyMarker
	tagWatermarkStatus
	tagRecordAttributes
	tagInternalWatermark
)

// Watermark statuses (WatermarkStatus).
const (
	statusActive int32 = 0
	statusIdle   int32 = -1
)

func streamElement(r *wire.Reader, elem *typeser.SerializerSnapshot, depth int, decode bool) (any, bool) {
	at := r.Pos()
	tag := r.U8("stream element tag")
	fields := map[string]any{}
	var kind string
	ok := true
	switch tag {
	case tagRecordWithTimestamp, tagRecord:
		kind = "record"
		if tag == tagRecordWithTimestamp {
			fields["timestamp"] = r.I64("record timestamp")
		}
		fields["value"], ok = value(r, elem, depth, decode)
	case tagWatermark:
		kind = "watermark"
		fields["timestamp"] = r.I64("watermark timestamp")
	case tagInternalWatermark:
		kind = "internalWatermark"
		fields["subpartitionIndex"] = int64(r.I32("internal watermark subpartition index"))
		fields["timestamp"] = r.I64("internal watermark timestamp")
	case tagLatencyMarker:
		kind = "latencyMarker"
		fields["markedTime"] = r.I64("latency marker time")
		fields["operatorId"] = hexOf(r.Take(16, "latency marker operator id"))
		fields["subtaskIndex"] = int64(r.I32("latency marker subtask index"))
	case tagWatermarkStatus:
		kind = "watermarkStatus"
		sat := r.Pos()
		switch status := r.I32("watermark status"); {
		case r.Err != nil:
		case status == statusActive:
			fields["status"] = "ACTIVE"
		case status == statusIdle:
			fields["status"] = "IDLE"
		default:
			r.FailAt(sat, "watermark status %d, Flink writes 0 (active) or -1 (idle)", status)
		}
	case tagRecordAttributes:
		kind = "recordAttributes"
		fields["backlog"] = r.Bool("record attributes backlog flag")
	default:
		if r.Err == nil {
			r.FailAt(at, "stream element tag %d is none of Flink's (0 to 6)", tag)
		}
	}
	if !decode || r.Err != nil {
		return nil, ok
	}
	return map[string]any{kind: fields}, true
}

// nullablePending reports whether a sink state serializer writes a flag
// before the pending transaction (it may be none): from outer version 3
// on, in version 4 and later as the outer part's boolean says; for a
// legacy config snapshot, as the Java-serialized serializer's field says
// (Flink 1.6's has none: no flag).
func nullablePending(s *typeser.SerializerSnapshot) bool {
	switch {
	case s.Legacy != nil:
		nullable, _ := s.Legacy.Field("supportNullPendingTransaction").(bool)
		return nullable
	case s.OuterVersion < 3:
		return false
	case s.OuterVersion == 3:
		return true
	}
	return len(s.Outer) == 1 && s.Outer[0] == 1
}

// parseSinkStateSnapshot reads a TwoPhaseCommitSinkFunction
// StateSerializerSnapshot: the composite framing, whose outer part is,
// from outer version 4 on, the boolean saying whether the pending
// transaction may be none; then the transaction's and the context's
// serializers.
func parseSinkStateSnapshot(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
	sr.CompositeOuter(s, cont, depth, 2, "two-phase commit sink state", func() {
		if s.OuterVersion >= 4 {
			sr.R.Bool("two-phase commit sink state null-transaction flag")
		}
	})
}

func sinkState(r *wire.Reader, s *typeser.SerializerSnapshot, depth int, decode bool) (any, bool) {
	txn, ctx := s.Nested[0], s.Nested[1]
	holder := func(what string) (any, bool) {
		h, ok := value(r, txn, depth, decode)
		start := r.I64(what + " start time")
		return map[string]any{"handle": h, "transactionStartTime": start}, ok
	}
	var pending any
	ok := true
	if !nullablePending(s) || r.Bool("pending transaction flag") {
		pending, ok = holder("pending transaction")
	}
	n := r.Count32(8, "pending commit transaction count")
	commits := make([]any, 0, n)
	for i := 0; i < n && ok && r.Err == nil; i++ {
		var h any
		h, ok = holder("pending commit transaction")
		commits = append(commits, h)
	}
	var context any
	if ok && r.Bool("context flag") {
		if context, ok = value(r, ctx, depth, decode); decode && context == nil && r.Err == nil {
			// Flink's context is an Optional: a present one shown as null
			// would be written back absent.
			typeser.NotDecoded(r, s)
			return nil, true
		}
	}
	if !decode || r.Err != nil {
		return nil, ok
	}
	return map[string]any{"pendingTransaction": pending, "pendingCommitTransactions": commits, "context": context}, true
}

const hexDigits = "0123456789abcdef"

// hexOf is b in lower-case hex, as Flink's AbstractID.toHexString shows
// an operator id.
func hexOf(b []byte) string {
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, hexDigits[c>>4], hexDigits[c&15])
	}
	return string(out)
}

// Schemas: a struct of the element's kinds, one present (as a Union's
// sides); a buffer entry's and a sink state's fields.
func schema(s *typeser.SerializerSnapshot, depth int) (snapshot.Schema, bool) {
	if !complete(s) {
		return snapshot.Schema{}, false
	}
	long := snapshot.Schema{Kind: snapshot.SchemaInt64}
	text := snapshot.Schema{Kind: snapshot.SchemaString}
	nestedSchema := func(i int) snapshot.Schema { return typeser.SchemaOf(s.Nested[i], depth+1) }
	switch typeser.KindOf(s) {
	case kindStreamElement:
		return typeser.Struct(
			[]string{"record", "watermark", "internalWatermark", "latencyMarker", "watermarkStatus", "recordAttributes"},
			[]snapshot.Schema{
				typeser.Struct([]string{"value", "timestamp"}, []snapshot.Schema{nestedSchema(0), long}),
				typeser.Struct([]string{"timestamp"}, []snapshot.Schema{long}),
				typeser.Struct([]string{"subpartitionIndex", "timestamp"}, []snapshot.Schema{long, long}),
				typeser.Struct([]string{"markedTime", "operatorId", "subtaskIndex"}, []snapshot.Schema{long, text, long}),
				typeser.Struct([]string{"status"}, []snapshot.Schema{text}),
				typeser.Struct([]string{"backlog"}, []snapshot.Schema{{Kind: snapshot.SchemaBool}}),
			}), true
	case kindBufferEntry:
		return typeser.Struct([]string{"element", "hasBeenJoined"}, []snapshot.Schema{nestedSchema(0), {Kind: snapshot.SchemaBool}}), true
	case kindSinkState:
		holder := typeser.Struct([]string{"handle", "transactionStartTime"}, []snapshot.Schema{nestedSchema(0), long})
		holders := snapshot.Schema{Kind: snapshot.SchemaList, Elem: &holder, Partial: holder.Partial}
		return typeser.Struct([]string{"pendingTransaction", "pendingCommitTransactions", "context"}, []snapshot.Schema{holder, holders, nestedSchema(1)}), true
	}
	return snapshot.Schema{}, false
}
