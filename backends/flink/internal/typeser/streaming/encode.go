package streaming

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
)

// encode writes a value given as walk decodes it.
func encode(b []byte, s *typeser.SerializerSnapshot, v any, depth int) ([]byte, bool, error) {
	if !complete(s) {
		return nil, false, nil
	}
	var err error
	switch typeser.KindOf(s) {
	case kindStreamElement:
		b, err = appendStreamElement(b, s.Nested[0], v, depth)
	case kindBufferEntry:
		var m map[string]any
		if m, err = typeser.Fields(v, "element", "hasBeenJoined"); err != nil {
			return nil, true, fmt.Errorf("buffer entry: %w", err)
		}
		joined, ok := m["hasBeenJoined"].(bool)
		if !ok {
			return nil, true, fmt.Errorf("buffer entry: hasBeenJoined %v is not true or false", m["hasBeenJoined"])
		}
		b, err = typeser.EncodeAny(appendBool(b, joined), s.Nested[0], m["element"], depth+1)
	case kindSinkState:
		b, err = appendSinkState(b, s, v, depth)
	}
	return b, true, err
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// elementKinds are the keys a stream element is shown by.
var elementKinds = []string{"record", "watermark", "internalWatermark", "latencyMarker", "watermarkStatus", "recordAttributes"}

func appendStreamElement(b []byte, elem *typeser.SerializerSnapshot, v any, depth int) ([]byte, error) {
	m, ok := v.(map[string]any)
	var kind string
	for k := range m {
		kind = k
	}
	if !ok || len(m) != 1 || !slices.Contains(elementKinds, kind) {
		return nil, fmt.Errorf("want a stream element, an object of one of %s, not %v", strings.Join(elementKinds, ", "), v)
	}
	var err error
	switch kind {
	case "record":
		f, isMap := m[kind].(map[string]any)
		if _, timed := f["timestamp"]; isMap && timed {
			if f, err = typeser.Fields(f, "value", "timestamp"); err == nil {
				b, err = typeser.AppendInt(append(b, tagRecordWithTimestamp), f["timestamp"], 64, "record timestamp")
			}
		} else {
			b = append(b, tagRecord)
			f, err = typeser.Fields(f, "value")
		}
		if err != nil {
			return nil, fmt.Errorf("record: %w", err)
		}
		return typeser.EncodeAny(b, elem, f["value"], depth+1)
	case "watermark":
		f, err := typeser.Fields(m[kind], "timestamp")
		if err != nil {
			return nil, fmt.Errorf("watermark: %w", err)
		}
		return typeser.AppendInt(append(b, tagWatermark), f["timestamp"], 64, "watermark timestamp")
	case "internalWatermark":
		f, err := typeser.Fields(m[kind], "subpartitionIndex", "timestamp")
		if err != nil {
			return nil, fmt.Errorf("internal watermark: %w", err)
		}
		if b, err = typeser.AppendInt(append(b, tagInternalWatermark), f["subpartitionIndex"], 32, "subpartition index"); err != nil {
			return nil, err
		}
		return typeser.AppendInt(b, f["timestamp"], 64, "internal watermark timestamp")
	case "latencyMarker":
		f, err := typeser.Fields(m[kind], "markedTime", "operatorId", "subtaskIndex")
		if err != nil {
			return nil, fmt.Errorf("latency marker: %w", err)
		}
		if b, err = typeser.AppendInt(append(b, tagLatencyMarker), f["markedTime"], 64, "marked time"); err != nil {
			return nil, err
		}
		text, _ := f["operatorId"].(string)
		id, err := hex.DecodeString(text)
		if err != nil || len(id) != 16 {
			return nil, fmt.Errorf("latency marker: operatorId %v is not 32 hex digits", f["operatorId"])
		}
		return typeser.AppendInt(append(b, id...), f["subtaskIndex"], 32, "subtask index")
	case "watermarkStatus":
		f, err := typeser.Fields(m[kind], "status")
		if err != nil {
			return nil, fmt.Errorf("watermark status: %w", err)
		}
		name, _ := f["status"].(string)
		status, known := map[string]int32{"ACTIVE": statusActive, "IDLE": statusIdle}[name]
		if !known {
			return nil, fmt.Errorf(`watermark status: want "ACTIVE" or "IDLE", not %v`, f["status"])
		}
		return binary.BigEndian.AppendUint32(append(b, tagWatermarkStatus), uint32(status)), nil
	}
	f, err := typeser.Fields(m[kind], "backlog")
	backlog, ok := f["backlog"].(bool)
	if err != nil || !ok {
		return nil, fmt.Errorf("record attributes: want an object of backlog, true or false, not %v", m[kind])
	}
	return appendBool(append(b, tagRecordAttributes), backlog), nil
}

func appendSinkState(b []byte, s *typeser.SerializerSnapshot, v any, depth int) ([]byte, error) {
	m, err := typeser.Fields(v, "pendingTransaction", "pendingCommitTransactions", "context")
	if err != nil {
		return nil, fmt.Errorf("two-phase commit sink state: %w", err)
	}
	holder := func(b []byte, h any, what string) ([]byte, error) {
		f, err := typeser.Fields(h, "handle", "transactionStartTime")
		if err == nil {
			b, err = typeser.EncodeAny(b, s.Nested[0], f["handle"], depth+1)
		}
		if err == nil {
			b, err = typeser.AppendInt(b, f["transactionStartTime"], 64, "transactionStartTime")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return b, nil
	}
	pending := m["pendingTransaction"]
	switch {
	case nullablePending(s):
		b = appendBool(b, pending != nil)
	case pending == nil:
		return nil, fmt.Errorf("this sink state serializer writes a pending transaction always, so not null")
	}
	if pending != nil {
		if b, err = holder(b, pending, "pending transaction"); err != nil {
			return nil, err
		}
	}
	commits, ok := m["pendingCommitTransactions"].([]any)
	if !ok {
		return nil, fmt.Errorf("pendingCommitTransactions %v is not a list", m["pendingCommitTransactions"])
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(commits)))
	for i, c := range commits {
		if b, err = holder(b, c, fmt.Sprintf("pending commit transaction %d", i)); err != nil {
			return nil, err
		}
	}
	if m["context"] == nil {
		return append(b, 0), nil
	}
	return typeser.EncodeAny(append(b, 1), s.Nested[1], m["context"], depth+1)
}
