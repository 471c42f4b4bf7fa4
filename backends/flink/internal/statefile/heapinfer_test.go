package statefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// A heap key group of two states of String keys: "count" (Long values)
// first, then "opaque" (Kryo values, which carry no length) with two
// entries, the last of the key group.
type inferCase struct {
	kg, maxP   int
	layouts    []*Layout
	key1, key2 []byte
}

func newInferCase(t *testing.T) *inferCase {
	t.Helper()
	str := &typeser.SerializerSnapshot{Class: basePrefix + "StringSerializer$StringSerializerSnapshot"}
	void := &typeser.SerializerSnapshot{Class: "org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot"}
	state := func(name string, value *typeser.SerializerSnapshot) *Layout {
		return NewLayout(&StateMeta{Name: name, Type: KeyValueState, Options: map[string]string{"KEYED_STATE_TYPE": "VALUE"},
			Serializers: map[string]*typeser.SerializerSnapshot{"NAMESPACE_SERIALIZER": void, "VALUE_SERIALIZER": value}}, str)
	}
	c := &inferCase{kg: 7, maxP: 128, layouts: []*Layout{
		state("opaque", &typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot"}),
		state("count", &typeser.SerializerSnapshot{Class: basePrefix + "LongSerializer$LongSerializerSnapshot"}),
	}}
	var keys [][]byte
	for i := 0; len(keys) < 2; i++ {
		k := fmt.Sprintf("user-%d", i)
		if keygroup.OfHash(keygroup.HashString(k), c.maxP) == c.kg {
			keys = append(keys, append([]byte{byte(len(k) + 1)}, k...))
		}
	}
	c.key1, c.key2 = keys[0], keys[1]
	return c
}

// body lays the key group out as Flink's heap snapshot does.
func (c *inferCase) body(v1, v2 []byte) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint16(b, 1) // count
	b = binary.BigEndian.AppendUint32(b, 1)
	b = append(append(append(b, 0), c.key1...), 0, 0, 0, 0, 0, 0, 0, 42)
	b = binary.BigEndian.AppendUint16(b, 0) // opaque
	b = binary.BigEndian.AppendUint32(b, 2)
	b = append(append(append(b, 0), c.key1...), v1...)
	return append(append(append(b, 0), c.key2...), v2...)
}

func (c *inferCase) read(body []byte) ([]snapshot.Entry, error) {
	es, lost, err := c.readPieces([]heapPiece{{body: body, file: "kg"}})
	for _, err := range lost {
		return es, err
	}
	return es, err
}

// readPieces reads a key group's pieces, and the states it lost.
func (c *inferCase) readPieces(pieces []heapPiece) ([]snapshot.Entry, map[string]error, error) {
	return readPiecesOf(c.kg, c.maxP, c.layouts, pieces, walkPlan{})
}

func readPiecesOf(kg, maxP int, layouts []*Layout, pieces []heapPiece, how walkPlan) ([]snapshot.Entry, map[string]error, error) {
	var out []snapshot.Entry
	lost := map[string]error{}
	var buf []heapRec
	err := readHeap(kg, maxP, pieces, layouts, &buf, func(e snapshot.Entry) bool {
		out = append(out, e.Clone())
		return true
	}, func(state string, err error) {
		if lost[state] == nil {
			lost[state] = err
		}
	}, how)
	return out, lost, err
}

// The end of a Kryo value that is not its section's last is where the
// next entry starts: a key of the key group follows.
func TestHeapKryoValueEndInferred(t *testing.T) {
	c := newInferCase(t)
	// A Kryo object: a class id, then fields, among them a Kryo string
	// (its last character's high bit set).
	v1 := []byte{0x57, 0x01, 0xee, 0x02, 0x01, 'l', 'a', 'b', 'e', 'l', '-', '1' | 0x80}
	v2 := []byte{0x57, 0x01, 0x04, 0x01, 'x' | 0x80}
	es, err := c.read(c.body(v1, v2))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		state      string
		key, value []byte
	}{{"count", c.key1, []byte{0, 0, 0, 0, 0, 0, 0, 42}}, {"opaque", c.key1, v1}, {"opaque", c.key2, v2}}
	if len(es) != len(want) {
		t.Fatalf("%d entries, want %d: %v", len(es), len(want), es)
	}
	for i, w := range want {
		if es[i].State != w.state || !bytes.Equal(es[i].Key, w.key) || !bytes.Equal(es[i].Value, w.value) {
			t.Errorf("entry %d: %s % x = % x, want %s % x = % x", i, es[i].State, es[i].Key, es[i].Value, w.state, w.key, w.value)
		}
	}
}

// Where the section splits into its entries in two ways (the first value
// holds what could be the second entry's namespace and key), the state is
// refused, not guessed.
func TestHeapKryoValueEndAmbiguous(t *testing.T) {
	c := newInferCase(t)
	v1 := append(append([]byte{0x57, 0}, c.key2...), 0x99)
	es, lost, err := c.readPieces([]heapPiece{{body: c.body(v1, []byte{0x57, 0x01, 0x04}), file: "kg"}})
	if err != nil {
		t.Fatal(err)
	}
	ue := lost["opaque"]
	if len(lost) != 1 || !errors.Is(ue, wire.ErrUnsupportedVersion) || !strings.Contains(ue.Error(), "split in more than one way") {
		t.Fatalf("lost %v, want state opaque refused as ambiguous", lost)
	}
	if len(es) == 0 || es[0].State != "count" {
		t.Errorf("entries %v, want count's first", es)
	}
	wantNotDecoded(t, ue, "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", 2)
}

// wantNotDecoded checks that a state lost as err is no damage: its values
// are not decoded, by serializer, and there are values of them (0: not
// known).
func wantNotDecoded(t *testing.T, err error, serializer string, values int64) {
	t.Helper()
	var nd *snapshot.NotDecodedError
	if !errors.As(err, &nd) || nd.Serializer != serializer || errors.Is(err, wire.ErrCorrupt) {
		t.Errorf("lost as %v, want values of %s not decoded", err, serializer)
	}
	if n := UnsplitValues(err); n != values {
		t.Errorf("lost %d values, want %d", n, values)
	}
}

// A key of another key group cannot follow: without the key-group check
// the value above would be ambiguous.
func TestHeapKryoValueEndSkipsKeysOfOtherGroups(t *testing.T) {
	c := newInferCase(t)
	other := []byte("x")
	for i := 0; keygroup.OfHash(keygroup.HashString(string(other)), c.maxP) == c.kg; i++ {
		other = fmt.Appendf(nil, "x%d", i)
	}
	v1 := append(append([]byte{0x57, 0, byte(len(other) + 1)}, other...), 0x99)
	v2 := []byte{0x57, 0x01, 0x04}
	es, err := c.read(c.body(v1, v2))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 || !bytes.Equal(es[1].Value, v1) || !bytes.Equal(es[2].Value, v2) {
		t.Fatalf("entries %v, want the values % x and % x", es, v1, v2)
	}
}

// A heap key group whose first section is a list of a Kryo user class
// (which no length delimits and stateutil cannot walk), then a Long state
// and a String state.
type resyncCase struct {
	*inferCase
	// elem is one list element: a user class written by Kryo's
	// FieldSerializer (an unregistered class name, a reference marker,
	// then its fields).
	elem []byte
}

func newResyncCase(t *testing.T) *resyncCase {
	c := newInferCase(t)
	str := &typeser.SerializerSnapshot{Class: basePrefix + "StringSerializer$StringSerializerSnapshot"}
	void := &typeser.SerializerSnapshot{Class: "org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot"}
	kryo := &typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot"}
	list := &typeser.SerializerSnapshot{Class: "org.apache.flink.api.common.typeutils.base.ListSerializerSnapshot", Nested: []*typeser.SerializerSnapshot{kryo}}
	c.layouts = []*Layout{
		NewLayout(&StateMeta{Name: "events", Type: KeyValueState, Options: map[string]string{"KEYED_STATE_TYPE": "LIST"},
			Serializers: map[string]*typeser.SerializerSnapshot{"NAMESPACE_SERIALIZER": void, "VALUE_SERIALIZER": list}}, str),
		c.layouts[1], // count: Long values
		NewLayout(&StateMeta{Name: "label", Type: KeyValueState, Options: map[string]string{"KEYED_STATE_TYPE": "VALUE"},
			Serializers: map[string]*typeser.SerializerSnapshot{"NAMESPACE_SERIALIZER": void, "VALUE_SERIALIZER": str}}, str),
	}
	elem := append([]byte{0x01, 0x00}, "com.acme.Even"...)
	elem = append(elem, 't'|0x80, 0x01, 0x84, 0x01, 'x'|0x80)
	return &resyncCase{inferCase: c, elem: elem}
}

// sections lays out the key group's sections (events first), each as
// Flink's heap snapshot writes it.
func (c *resyncCase) sections(elems int) [][]byte {
	var events []byte
	events = binary.BigEndian.AppendUint16(events, 0)
	events = binary.BigEndian.AppendUint32(events, 1)
	events = append(append(events, 0), c.key1...)
	events = binary.BigEndian.AppendUint32(events, uint32(elems))
	for range elems {
		events = append(events, c.elem...)
	}
	var count []byte
	count = binary.BigEndian.AppendUint16(count, 1)
	count = binary.BigEndian.AppendUint32(count, 2)
	count = append(append(append(count, 0), c.key1...), 0, 0, 0, 0, 0, 0, 0, 42)
	count = append(append(append(count, 0), c.key2...), 0, 0, 0, 0, 0, 0, 0, 7)
	var label []byte
	label = binary.BigEndian.AppendUint16(label, 2)
	label = binary.BigEndian.AppendUint32(label, 1)
	label = append(append(append(label, 0), c.key2...), 4, 'a', 'b', 'c')
	return [][]byte{events, count, label}
}

func (c *resyncCase) wantLater(t *testing.T, es []snapshot.Entry) {
	t.Helper()
	var got []string
	for _, e := range es {
		if e.State != "events" {
			got = append(got, fmt.Sprintf("%s %x %x", e.State, e.Key, e.Value))
		}
	}
	want := []string{
		fmt.Sprintf("count %x %x", c.key1, []byte{0, 0, 0, 0, 0, 0, 0, 42}),
		fmt.Sprintf("count %x %x", c.key2, []byte{0, 0, 0, 0, 0, 0, 0, 7}),
		fmt.Sprintf("label %x %x", c.key2, []byte{4, 'a', 'b', 'c'}),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("entries after the list:\n got %q\nwant %q", got, want)
	}
}

// The states after one whose values cannot be walked are read from the
// one place where the rest of the key group splits into sections; the
// list state is reported lost, never read as empty.
func TestHeapReadsOnAfterUnwalkableState(t *testing.T) {
	c := newResyncCase(t)
	es, lost, err := c.readPieces([]heapPiece{{body: bytes.Join(c.sections(3), nil), file: "kg"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) != 1 || !errors.Is(lost["events"], wire.ErrUnsupportedVersion) || !strings.Contains(lost["events"].Error(), "KryoSerializerSnapshot writes no length") {
		t.Fatalf("lost %v, want events alone, as not walkable", lost)
	}
	wantNotDecoded(t, lost["events"], "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", 1)
	c.wantLater(t, es)
}

// Where the rest of the key group splits into sections from two places,
// the states whose sections were not reached are lost too, with the
// reason. Here the
// last state is a list of the user class too, whose values may end
// anywhere, and an element of the first holds what reads as the sections
// that follow it.
func TestHeapUnwalkableStateAmbiguousEnd(t *testing.T) {
	c := newResyncCase(t)
	more := *c.layouts[0]
	more.Name = "more"
	c.layouts[2] = &more
	s := c.sections(1)
	var tail []byte
	tail = binary.BigEndian.AppendUint16(tail, 2)
	tail = binary.BigEndian.AppendUint32(tail, 1)
	tail = append(append(tail, 0), c.key2...)
	tail = binary.BigEndian.AppendUint32(tail, 1)
	tail = append(tail, c.elem...)
	body := bytes.Join([][]byte{s[0], s[1], tail, s[1], tail}, nil)
	_, lost, err := c.readPieces([]heapPiece{{body: body, file: "kg"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"events", "count", "more"} {
		if !errors.Is(lost[name], wire.ErrUnsupportedVersion) {
			t.Errorf("state %s: lost %v, want it lost", name, lost[name])
		}
	}
	if why := fmt.Sprint(lost["count"]); !strings.Contains(why, `state "events"`) || !strings.Contains(why, "can end at offset") {
		t.Errorf("count lost as %q, want the events section's ambiguous end named", why)
	}
	wantNotDecoded(t, lost["count"], "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", 0)
}

// Compressed, each section is a stream of its own: its end is known, so
// even a section that holds what reads as another is skipped exactly.
func TestHeapCompressedSectionsSkipped(t *testing.T) {
	c := newResyncCase(t)
	s := c.sections(1)
	s[0] = append(s[0], s[2]...)
	var pieces []heapPiece
	for _, b := range s {
		pieces = append(pieces, heapPiece{body: b, file: "kg", one: true})
	}
	es, lost, err := c.readPieces(pieces)
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) != 1 || lost["events"] == nil {
		t.Fatalf("lost %v, want events alone", lost)
	}
	c.wantLater(t, es)
}

// FuzzHeapKeyGroup reads mutated heap key groups, whole or as one stream
// per section: no panic, no hang, and a state is lost only for a reason
// that is no damage.
func FuzzHeapKeyGroup(f *testing.F) {
	c := newResyncCase(&testing.T{})
	for _, n := range []int{0, 1, 3} {
		s := c.sections(n)
		f.Add(bytes.Join(s, nil), false)
		f.Add(bytes.Join(s, []byte{0xff}), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, split bool) {
		pieces := []heapPiece{{body: b, file: "kg"}}
		if split {
			pieces = nil
			for _, p := range bytes.Split(b, []byte{0xff}) {
				pieces = append(pieces, heapPiece{body: p, file: "kg", one: true})
			}
		}
		es, lost, err := c.readPieces(pieces)
		if err != nil && !errors.Is(err, wire.ErrCorrupt) {
			t.Fatalf("unclassified error: %v", err)
		}
		// Reading a piece in one walk finds what splitting it into
		// sections first finds.
		same := func(es2 []snapshot.Entry) bool {
			return slices.EqualFunc(es, es2, func(a, b snapshot.Entry) bool { return a.Equal(&b) })
		}
		es2, lost2, err2 := readPiecesOf(c.kg, c.maxP, c.layouts, pieces, walkPlan{twoWalks: true})
		if fmt.Sprint(err) != fmt.Sprint(err2) || fmt.Sprint(lost) != fmt.Sprint(lost2) || !same(es2) {
			t.Fatalf("in one walk: %d entries, lost %v, error %v; by sections: %d entries, lost %v, error %v", len(es), lost, err, len(es2), lost2, err2)
		}
		// A read given the walk an earlier read kept finds the same.
		var ws Walks
		key := walkKey{"kg", 0, c.kg}
		if _, _, err := readPiecesOf(c.kg, c.maxP, c.layouts, pieces, walkPlan{keep: func(w []pieceWalk) { ws.keep(key, w) }}); fmt.Sprint(err) != fmt.Sprint(err2) {
			t.Fatalf("keeping its walk: error %v, want %v", err, err2)
		}
		if kept := ws.take(key); kept != nil {
			es3, lost3, err3 := readPiecesOf(c.kg, c.maxP, c.layouts, pieces, walkPlan{walked: kept})
			if len(lost) > 0 || err != nil || len(lost3) > 0 || err3 != nil || !same(es3) {
				t.Fatalf("kept walk: %d entries, lost %v, error %v; walked: %d entries, lost %v, error %v", len(es3), lost3, err3, len(es), lost, err)
			}
		}
		for name, why := range lost {
			if !errors.Is(why, wire.ErrUnsupportedVersion) {
				t.Errorf("state %s lost as %v", name, why)
			}
		}
	})
}

const basePrefix = "org.apache.flink.api.common.typeutils.base."

// A piece of more small entries than its records may hold (a list of
// single bytes) is read in two walks, to the same entries.
func TestHeapPieceOfManySmallEntries(t *testing.T) {
	c := newInferCase(t)
	str := &typeser.SerializerSnapshot{Class: basePrefix + "StringSerializer$StringSerializerSnapshot"}
	void := &typeser.SerializerSnapshot{Class: "org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot"}
	list := &typeser.SerializerSnapshot{Class: basePrefix + "ListSerializerSnapshot", Nested: []*typeser.SerializerSnapshot{{Class: basePrefix + "ByteSerializer$ByteSerializerSnapshot"}}}
	layouts := []*Layout{NewLayout(&StateMeta{Name: "bytes", Type: KeyValueState, Options: map[string]string{"KEYED_STATE_TYPE": "LIST"},
		Serializers: map[string]*typeser.SerializerSnapshot{"NAMESPACE_SERIALIZER": void, "VALUE_SERIALIZER": list}}, str)}
	const n = 20000
	var b []byte
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = append(append(b, 0), c.key1...)
	b = binary.BigEndian.AppendUint32(b, n)
	for i := range n {
		b = append(b, byte(i))
	}
	pieces := []heapPiece{{body: b, file: "kg"}}
	es, lost, err := readPiecesOf(c.kg, c.maxP, layouts, pieces, walkPlan{})
	if err != nil || len(lost) > 0 || len(es) != n {
		t.Fatalf("%d entries, lost %v, error %v; want %d", len(es), lost, err, n)
	}
	for i, e := range es {
		if len(e.Value) != 1 || e.Value[0] != byte(i) {
			t.Fatalf("element %d: %x", i, e.Value)
		}
	}
	es2, _, _ := readPiecesOf(c.kg, c.maxP, layouts, pieces, walkPlan{twoWalks: true})
	if !slices.EqualFunc(es, es2, func(a, b snapshot.Entry) bool { return a.Equal(&b) }) {
		t.Fatal("in one walk and by sections, the entries differ")
	}
}
