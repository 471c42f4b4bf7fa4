package tableruntime

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// The serializers of aggregate accumulators' collections and DataViews,
// Flink 1.15 to 2.3 alike:
//   - LinkedListSerializer (flink-table-runtime; ARRAY_AGG's and
//     LISTAGG's lists): an int size, a null mask (MaskUtils': a bit per
//     element, the first one the high bit) where the serializer keeps one,
//     then the elements that are not null. Its composite snapshot's outer
//     part is, from outer version 3 on, the flag saying whether it keeps
//     the mask; version 2 keeps it, earlier ones do not.
//   - NullSerializer (flink-table-common's dataview): one zero byte for
//     the null that stands in for a DataView kept in state of its own.
//   - ListViewSerializer, MapViewSerializer: a ListView or MapView held in
//     the accumulator itself, written by the List or Map serializer their
//     composite snapshot nests.
//   - NullAwareMapSerializer (a MapView's map, whose keys may be null): an
//     int size, then per entry a null flag and the key, a null flag and
//     the value; shown as [key, value] pairs, since JSON has no null key.

// viewKind classifies the serializers of this file.
func viewKind(n string) string {
	switch {
	case strings.Contains(n, "table.runtime.typeutils.LinkedListSerializer"):
		return "LinkedList"
	case strings.HasPrefix(n, "org.apache.flink.table.dataview.NullSerializer"):
		return "NullView"
	case strings.HasPrefix(n, "org.apache.flink.table.dataview.ListViewSerializer"):
		return "ListView"
	case strings.HasPrefix(n, "org.apache.flink.table.dataview.MapViewSerializer"):
		return "MapView"
	case strings.HasPrefix(n, "org.apache.flink.table.dataview.NullAwareMapSerializer"):
		return "NullAwareMap"
	}
	return ""
}

// parseLinkedListSnapshot reads a LinkedListSerializerSnapshot.
func parseLinkedListSnapshot(sr *typeser.SnapReader, s *typeser.SerializerSnapshot, cont typeser.ContFunc, depth int) {
	sr.CompositeOuter(s, cont, depth, 1, "linked list", func() {
		if s.OuterVersion >= 3 {
			sr.R.Bool("linked list null mask flag")
		}
	})
}

// nullMask says whether a LinkedListSerializer writes a null mask: ok is
// false where its snapshot does not say.
func nullMask(s *typeser.SerializerSnapshot) (mask, ok bool) {
	switch {
	case s.OuterVersion < 2:
		return false, true
	case s.OuterVersion == 2:
		return true, true
	case len(s.Outer) == 1 && s.Outer[0] <= 1:
		return s.Outer[0] == 1, true
	}
	return false, false
}

// walkView reads one value of a serializer of this file, decoding it when
// decode is set; false where the snapshot lacks what the walk needs.
func walkView(r *wire.Reader, s *typeser.SerializerSnapshot, depth int, decode bool) (any, bool) {
	switch typeser.KindOf(s) {
	case "LinkedList":
		return walkLinkedList(r, s, depth, decode)
	case "NullView":
		at := r.Pos()
		if b := r.U8("DataView placeholder"); r.Err == nil && b != 0 {
			r.FailAt(at, "DataView placeholder byte %d, Flink writes 0", b)
		}
		return nil, true
	case "ListView", "MapView":
		if len(s.Nested) != 1 {
			return nil, false
		}
		if !decode {
			return nil, typeser.SkipValue(r, s.Nested[0], depth+1)
		}
		return typeser.DecodeAny(r, s.Nested[0], depth+1), true
	case "NullAwareMap":
		return walkPairs(r, s, depth, decode, true)
	}
	return nil, false
}

func walkLinkedList(r *wire.Reader, s *typeser.SerializerSnapshot, depth int, decode bool) (any, bool) {
	mask, ok := nullMask(s)
	if !ok || len(s.Nested) != 1 {
		return nil, false
	}
	// Every element takes a byte at least, or with a mask, a bit of it:
	// a list of nulls is its mask alone.
	at := r.Pos()
	size := int64(r.I32("linked list size"))
	var nulls []byte
	n := 0
	switch {
	case r.Err != nil:
	case !mask || size < 0:
		n = r.Count(size, 1, "linked list size", at)
	case (size+7)/8 > int64(r.Remaining()):
		r.FailAt(at, "linked list of %d elements: its null mask needs %d bytes, %d left", size, (size+7)/8, r.Remaining())
	default:
		n = int(size)
		nulls = r.Take((n+7)/8, "linked list null mask")
	}
	out, ok := typeser.WalkElements(r, s.Nested[0], n, depth, decode, func(i int) bool {
		return mask && nulls[i/8]&(0x80>>(i%8)) != 0
	})
	if r.Err == nil && mask && n%8 != 0 && nulls[n/8]&(0xff>>(n%8)) != 0 {
		r.Fail("linked list null mask has bits set past its %d elements", n)
	}
	return out, ok
}

func viewSized(s *typeser.SerializerSnapshot, depth int) bool {
	switch typeser.KindOf(s) {
	case "LinkedList":
		_, ok := nullMask(s)
		return ok && len(s.Nested) == 1 && typeser.SizedDepth(s.Nested[0], depth+1)
	case "NullView":
		return true
	case "ListView", "MapView", "NullAwareMap":
		for _, n := range s.Nested {
			if !typeser.SizedDepth(n, depth+1) {
				return false
			}
		}
		return len(s.Nested) > 0
	}
	return false
}

// encodeView writes a value of a serializer of this file from the JSON
// walkView makes; it reports false for other serializers.
func encodeView(b []byte, s *typeser.SerializerSnapshot, v any, depth int) ([]byte, bool, error) {
	switch typeser.KindOf(s) {
	case "LinkedList":
		mask, ok := nullMask(s)
		if !ok || len(s.Nested) != 1 {
			return nil, false, nil
		}
		elems, isArray := v.([]any)
		if !isArray {
			return nil, true, fmt.Errorf("want a JSON array, not %v", v)
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(elems)))
		if mask {
			nulls := make([]byte, (len(elems)+7)/8)
			for i, e := range elems {
				if e == nil {
					nulls[i/8] |= 0x80 >> (i % 8)
				}
			}
			b = append(b, nulls...)
		}
		var err error
		for i, e := range elems {
			if e == nil && mask {
				continue
			}
			if b, err = typeser.EncodeAny(b, s.Nested[0], e, depth+1); err != nil {
				return nil, true, fmt.Errorf("element %d: %w", i, err)
			}
		}
		return b, true, nil
	case "NullView":
		if v != nil {
			return nil, true, fmt.Errorf("a DataView placeholder is null, not %v", v)
		}
		return append(b, 0), true, nil
	case "ListView", "MapView":
		if len(s.Nested) != 1 {
			return nil, false, nil
		}
		b, err := typeser.EncodeAny(b, s.Nested[0], v, depth+1)
		return b, true, err
	case "NullAwareMap":
		return encodePairs(b, s, v, depth, true)
	}
	return nil, false, nil
}
