package tableruntime

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// The serializers of the Table runtime's operators besides the data
// structures':
//   - CountWindow$Serializer: a count window's long id, shown as {"id": N}
//     (TimeWindow's and, in 2.3, GlobalWindow's are flink-core's layouts).
//   - SortedLongSerializer (2.3): a long with its sign bit flipped, so that
//     its bytes sort as the numbers do.
//   - WindowKeySerializer: a window's long, then a BinaryRowData key;
//     BinaryRowDataSerializer's snapshot records only the number of the
//     row's fields, not their types, so such rows are walked by their
//     length and not decoded.
//   - The linked sequenced multiset state's serializers (2.3): Node,
//     MetaSqnInfo and RowSqnInfo are Flink CompositeSerializers, their
//     fields' values one after another as their composite snapshot nests
//     the fields' serializers, shown as objects by the fields' names;
//     RowDataKey is the row its RowData serializer writes, its snapshot
//     two Java-serialized generated classes (each an int length, then the
//     bytes) and then that serializer's versioned snapshot.

// operatorKind classifies the serializers of this file.
func operatorKind(n string) string {
	switch {
	case strings.Contains(n, "table.runtime.operators.window.CountWindow$Serializer"):
		return "CountWindow"
	case strings.Contains(n, "table.runtime.operators.sink.SortedLongSerializer"):
		return "SortedLong"
	case strings.Contains(n, "table.runtime.typeutils.WindowKeySerializer"):
		return "WindowKey"
	case !strings.Contains(n, "table.runtime.sequencedmultisetstate.linked."):
	case strings.Contains(n, "linked.NodeSerializer"):
		return "SqnNode"
	case strings.Contains(n, "linked.MetaSqnInfoSerializer"):
		return "MetaSqnInfo"
	case strings.Contains(n, "linked.RowSqnInfoSerializer"):
		return "RowSqnInfo"
	case strings.Contains(n, "linked.RowDataKeySerializer"):
		return "RowDataKey"
	}
	return ""
}

// compositeFields names the fields of the CompositeSerializers of this
// file, in the order they are written.
var compositeFields = map[string][]string{
	"SqnNode":     {"row", "seqNo", "prevSeqNo", "nextSeqNo", "nextSeqNoForRecord", "timestamp"},
	"MetaSqnInfo": {"highSqn", "size"},
	"RowSqnInfo":  {"firstSqn", "lastSqn"},
}

// parseBinaryRowSnapshot reads a BinaryRowDataSerializerSnapshot: the
// number of the row's fields.
func parseBinaryRowSnapshot(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
	sr.R.I32("binary row field count")
}

// parseRowDataKeySnapshot reads a RowDataKeySerializerSnapshot.
func parseRowDataKeySnapshot(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
	r := sr.R
	for _, what := range []string{"row equaliser", "row hash function"} {
		at := r.Pos() + 4
		b := r.Bytes32(what)
		if r.Err != nil {
			return
		}
		inner := &typeser.SnapReader{R: wire.NewReader(b, r.File, at), Table: sr.Table}
		if inner.JavaObject(what); inner.R.Err == nil && inner.R.Remaining() != 0 {
			inner.R.Fail("%s: %d bytes after its Java serialization", what, inner.R.Remaining())
		}
		if inner.R.Err != nil {
			r.Err = inner.R.Err
			return
		}
	}
	s.Nested = []*typeser.SerializerSnapshot{sr.Versioned(cont, depth+1)}
}

// walkOperator reads one value of a serializer of this file, decoding it
// when decode is set; false where the snapshot lacks what the walk needs.
func walkOperator(r *wire.Reader, s *typeser.SerializerSnapshot, depth int, decode bool) (any, bool) {
	kind := typeser.KindOf(s)
	switch kind {
	case "CountWindow":
		return map[string]any{"id": r.I64("count window id")}, true
	case "SortedLong":
		return r.I64("sorted long") ^ math.MinInt64, true
	case "WindowKey":
		if len(s.Nested) != 1 {
			return nil, false
		}
		w := r.I64("window")
		if !decode {
			return nil, typeser.SkipValue(r, s.Nested[0], depth+1)
		}
		return map[string]any{"window": w, "key": typeser.DecodeAny(r, s.Nested[0], depth+1)}, true
	case "RowDataKey":
		if len(s.Nested) != 1 {
			return nil, false
		}
		if !decode {
			return nil, typeser.SkipValue(r, s.Nested[0], depth+1)
		}
		return typeser.DecodeAny(r, s.Nested[0], depth+1), true
	}
	names, ok := compositeFields[kind]
	if !ok || len(s.Nested) != len(names) {
		return nil, false
	}
	out := make(map[string]any, len(names))
	for i, n := range s.Nested {
		if !decode {
			if !typeser.SkipValue(r, n, depth+1) {
				return nil, false
			}
			continue
		}
		out[names[i]] = typeser.DecodeAny(r, n, depth+1)
	}
	return out, true
}

func operatorSized(s *typeser.SerializerSnapshot, depth int) bool {
	kind := typeser.KindOf(s)
	switch kind {
	case "CountWindow", "SortedLong":
		return true
	case "WindowKey", "RowDataKey":
		return len(s.Nested) == 1 && typeser.SizedDepth(s.Nested[0], depth+1)
	}
	names, ok := compositeFields[kind]
	if !ok || len(s.Nested) != len(names) {
		return false
	}
	for _, n := range s.Nested {
		if !typeser.SizedDepth(n, depth+1) {
			return false
		}
	}
	return true
}

// encodeOperator writes a value of a serializer of this file from the JSON
// walkOperator makes; it reports false for other serializers.
func encodeOperator(b []byte, s *typeser.SerializerSnapshot, v any, depth int) ([]byte, bool, error) {
	kind := typeser.KindOf(s)
	switch kind {
	case "CountWindow":
		m, _ := v.(map[string]any)
		id, err := typeser.Integer(m["id"], 64)
		if err != nil || len(m) != 1 {
			return nil, true, fmt.Errorf(`want {"id": N}, not %v`, v)
		}
		return binary.BigEndian.AppendUint64(b, uint64(id)), true, nil
	case "SortedLong":
		n, err := typeser.Integer(v, 64)
		if err != nil {
			return nil, true, err
		}
		return binary.BigEndian.AppendUint64(b, uint64(n^math.MinInt64)), true, nil
	case "WindowKey":
		if len(s.Nested) != 1 {
			return nil, false, nil
		}
		m, _ := v.(map[string]any)
		w, err := typeser.Integer(m["window"], 64)
		if err != nil || len(m) != 2 {
			return nil, true, fmt.Errorf(`want {"window": N, "key": row}, not %v`, v)
		}
		b, err = typeser.EncodeAny(binary.BigEndian.AppendUint64(b, uint64(w)), s.Nested[0], m["key"], depth+1)
		return b, true, err
	case "RowDataKey":
		if len(s.Nested) != 1 {
			return nil, false, nil
		}
		b, err := typeser.EncodeAny(b, s.Nested[0], v, depth+1)
		return b, true, err
	}
	names, ok := compositeFields[kind]
	if !ok || len(s.Nested) != len(names) {
		return nil, false, nil
	}
	m, isObject := v.(map[string]any)
	if !isObject || len(m) != len(names) {
		return nil, true, fmt.Errorf("want an object of %s, not %v", strings.Join(names, ", "), v)
	}
	var err error
	for i, name := range names {
		if b, err = typeser.EncodeAny(b, s.Nested[i], m[name], depth+1); err != nil {
			return nil, true, fmt.Errorf("%s: %w", name, err)
		}
	}
	return b, true, nil
}
