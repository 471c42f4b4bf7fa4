package typeser

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// encodeBuiltin writes values of Flink's composite serializers from the
// JSON their decoders make: POJOs, List, Map, Set, NullableSerializer,
// Either, Option, enums, Row, arrays of primitives, strings and objects,
// TTL values, timers, and broadcast entries. It reports false for serializers it does not write.
// Map entries are written in the order of their keys' text: a JSON
// object keeps no order, and Flink reads any.
func encodeBuiltin(b []byte, s *SerializerSnapshot, v any, depth int) ([]byte, bool, error) {
	var err error
	switch KindOf(s) {
	case "Pojo":
		if len(s.Fields) != len(s.Nested) || len(s.Nested) == 0 {
			return nil, false, nil
		}
		if v == nil {
			return append(b, pojoNull), true, nil
		}
		m, ok := v.(map[string]any)
		if !ok || len(m) != len(s.Fields) {
			return nil, true, fmt.Errorf("want a JSON object of the %d fields %v, not %v", len(s.Fields), s.Fields, v)
		}
		b = append(b, pojoNoSubclass)
		for i, f := range s.Fields {
			fv, ok := m[f]
			if !ok {
				return nil, true, fmt.Errorf("POJO field %q missing", f)
			}
			if b, err = EncodeNullFlagged(b, s.Nested[i], fv, depth); err != nil {
				return nil, true, fmt.Errorf("POJO field %q: %w", f, err)
			}
		}
		return b, true, nil
	case "List", "Set", "GenericArray":
		if len(s.Nested) != 1 {
			return nil, false, nil
		}
		elems, ok := v.([]any)
		if !ok {
			return nil, true, fmt.Errorf("want a JSON array, not %v", v)
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(elems)))
		for i, e := range elems {
			switch KindOf(s) {
			case "Set": // a null flag before each element
				b, err = EncodeNullFlagged(b, s.Nested[0], e, depth)
			case "GenericArray": // a presence flag before each element
				if e == nil {
					b = append(b, 0)
				} else {
					b, err = EncodeAny(append(b, 1), s.Nested[0], e, depth+1)
				}
			default:
				b, err = EncodeAny(b, s.Nested[0], e, depth+1)
			}
			if err != nil {
				return nil, true, fmt.Errorf("element %d: %w", i, err)
			}
		}
		return b, true, nil
	case "Map":
		if len(s.Nested) != 2 {
			return nil, false, nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, true, fmt.Errorf("want a JSON object, not %v", v)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = binary.BigEndian.AppendUint32(b, uint32(len(keys)))
		for _, k := range keys {
			if b, err = EncodeAny(b, s.Nested[0], mapKeyValue(s.Nested[0], k), depth+1); err != nil {
				return nil, true, fmt.Errorf("map key %q: %w", k, err)
			}
			if b, err = EncodeNullFlagged(b, s.Nested[1], m[k], depth); err != nil {
				return nil, true, fmt.Errorf("map key %q: %w", k, err)
			}
		}
		return b, true, nil
	case "Nullable":
		pad, ok := nullPadding(s)
		if !ok || len(s.Nested) != 1 {
			return nil, false, nil
		}
		if v == nil {
			b = append(b, 1)
			return append(b, make([]byte, pad)...), true, nil
		}
		b, err = EncodeAny(append(b, 0), s.Nested[0], v, depth+1)
		return b, true, err
	case "Option":
		if len(s.Nested) != 1 {
			return nil, false, nil
		}
		if v == nil {
			return append(b, 0), true, nil
		}
		b, err = EncodeAny(append(b, 1), s.Nested[0], v, depth+1)
		return b, true, err
	case "IntEnum":
		if len(s.Constants) == 0 {
			n, err := Integer(v, 32)
			return binary.BigEndian.AppendUint32(b, uint32(n)), true, err
		}
		for i, c := range s.Constants {
			if c == v {
				return binary.BigEndian.AppendUint32(b, uint32(i)), true, nil
			}
		}
		return nil, true, fmt.Errorf("want one of the constants %v, not %v", s.Constants, v)
	case "Row":
		if len(s.Nested) == 0 {
			return nil, false, nil
		}
		rowKind, v, err := RowKindOf(v)
		if err != nil {
			return nil, true, err
		}
		fields, ok := v.([]any)
		if !ok || len(fields) != len(s.Nested) {
			return nil, true, fmt.Errorf("want a JSON array of %d fields, not %v", len(s.Nested), v)
		}
		kind := rowKindBits(s)
		if rowKind != 0 && kind == 0 {
			return nil, true, fmt.Errorf("this Row serializer writes no row kind, so not %s", RowKinds[rowKind])
		}
		mask := make([]byte, (kind+len(fields)+7)/8)
		if kind == 2 {
			mask[0] = rowKind&1<<7 | rowKind&2<<5
		}
		for i, f := range fields {
			if f == nil {
				mask[(kind+i)/8] |= 0x80 >> ((kind + i) % 8)
			}
		}
		b = append(b, mask...)
		for i, f := range fields {
			if f == nil {
				continue
			}
			if b, err = EncodeAny(b, s.Nested[i], f, depth+1); err != nil {
				return nil, true, fmt.Errorf("row field %d: %w", i, err)
			}
		}
		return b, true, nil
	case "Entry":
		m, ok := v.(map[string]any)
		if len(s.Nested) != 2 {
			return nil, false, nil
		}
		if !ok || len(m) != 2 {
			return nil, true, fmt.Errorf(`want {"key": .., "value": ..}, not %v`, v)
		}
		if b, err = EncodeAny(b, s.Nested[0], m["key"], depth+1); err != nil {
			return nil, true, fmt.Errorf("entry key: %w", err)
		}
		b, err = EncodeAny(b, s.Nested[1], m["value"], depth+1)
		return b, true, err
	case "TTL":
		first, second, tsFirst, ok := ttlParts(s)
		if !ok {
			return nil, false, nil
		}
		m, isMap := v.(map[string]any)
		ts, hasTS := m["last_access"]
		value, hasValue := m["value"]
		if !isMap || len(m) != 2 || !hasTS || !hasValue {
			return nil, true, fmt.Errorf(`want {"last_access": .., "value": ..}, not %v`, v)
		}
		stored := [2]any{ts, value} // in the order the serializer writes them
		if !tsFirst {
			stored = [2]any{value, ts}
		}
		if b, err = EncodeAny(b, first, stored[0], depth+1); err != nil {
			return nil, true, err
		}
		b, err = EncodeAny(b, second, stored[1], depth+1)
		return b, true, err
	case "Timer":
		if len(s.Nested) != 2 {
			return nil, false, nil
		}
		m, isMap := v.(map[string]any)
		if !isMap || len(m) != 3 {
			return nil, true, fmt.Errorf(`want {"timestamp": .., "key": .., "namespace": ..}, not %v`, v)
		}
		ts, err := Integer(m["timestamp"], 64)
		if err != nil {
			return nil, true, fmt.Errorf("timer timestamp: %w", err)
		}
		// Flink flips the sign bit, so that timers sort by time as bytes.
		b = binary.BigEndian.AppendUint64(b, uint64(ts)^1<<63)
		for i, part := range []string{"key", "namespace"} {
			pv, found := m[part]
			if !found {
				return nil, true, fmt.Errorf("timer %s missing", part)
			}
			if b, err = EncodeAny(b, s.Nested[i], pv, depth+1); err != nil {
				return nil, true, fmt.Errorf("timer %s: %w", part, err)
			}
		}
		return b, true, nil
	case "Tuple0":
		if fields, ok := v.([]any); !ok || len(fields) != 0 {
			return nil, true, fmt.Errorf("want [], not %v", v)
		}
		return append(b, tuple0Byte), true, nil
	case "Union":
		if len(s.Nested) != 2 {
			return nil, false, nil
		}
		m, ok := v.(map[string]any)
		for side, name := range unionSides {
			if x, found := m[name]; ok && found && len(m) == 1 {
				b, err = EncodeAny(append(b, byte(side+1)), s.Nested[side], x, depth+1)
				return b, true, err
			}
		}
		return nil, true, fmt.Errorf(`want {"one": ..} or {"two": ..}, not %v`, v)
	case "Either":
		if len(s.Nested) != 2 {
			return nil, false, nil
		}
		m, ok := v.(map[string]any)
		if l, left := m["left"]; ok && left && len(m) == 1 {
			b, err = EncodeAny(append(b, 1), s.Nested[0], l, depth+1)
			return b, true, err
		}
		if r, right := m["right"]; ok && right && len(m) == 1 {
			b, err = EncodeAny(append(b, 0), s.Nested[1], r, depth+1)
			return b, true, err
		}
		return nil, true, fmt.Errorf(`want {"left": ..} or {"right": ..}, not %v`, v)
	}
	if e, ok := strings.CutPrefix(KindOf(s), "Array:"); ok {
		elems, isArray := v.([]any)
		if !isArray {
			return nil, true, fmt.Errorf("want a JSON array, not %v", v)
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(elems)))
		es := elementSnapshot(e)
		for i, x := range elems {
			if b, err = EncodeAny(b, es, x, depth+1); err != nil {
				return nil, true, fmt.Errorf("element %d: %w", i, err)
			}
		}
		return b, true, nil
	}
	return nil, false, nil
}

// EncodeNullFlagged writes a boolean null flag, then v unless it is null
// (how POJO fields, map values and set elements are written).
func EncodeNullFlagged(b []byte, s *SerializerSnapshot, v any, depth int) ([]byte, error) {
	if v == nil {
		return append(b, 1), nil
	}
	return EncodeAny(append(b, 0), s, v, depth+1)
}

// mapKeyValue turns a JSON object key back into the key mapKeyText made
// it from: a string key as it is, any other its JSON text parsed.
func mapKeyValue(s *SerializerSnapshot, k string) any {
	for KindOf(s) == "Nullable" && len(s.Nested) == 1 {
		s = s.Nested[0]
	}
	if KindOf(s) == "String" || KindOf(s) == "Char" {
		return k
	}
	d := json.NewDecoder(bytes.NewReader([]byte(k)))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return k
	}
	return v
}
