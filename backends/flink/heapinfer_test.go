package flink

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// A heap key group of two states of String keys: "count" (Long values)
// first, then "opaque" (Kryo values, which carry no length) with two
// entries, the last of the key group.
type inferCase struct {
	kg, maxP   int
	layouts    []*layout
	key1, key2 []byte
}

func newInferCase(t *testing.T) *inferCase {
	t.Helper()
	str := &SerializerSnapshot{Class: basePrefix + "StringSerializer$StringSerializerSnapshot"}
	void := &SerializerSnapshot{Class: "org.apache.flink.runtime.state.VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot"}
	state := func(name string, value *SerializerSnapshot) *layout {
		return newLayout(&StateMeta{Name: name, Type: KeyValueState, Options: map[string]string{"KEYED_STATE_TYPE": "VALUE"},
			Serializers: map[string]*SerializerSnapshot{"NAMESPACE_SERIALIZER": void, "VALUE_SERIALIZER": value}}, str)
	}
	c := &inferCase{kg: 7, maxP: 128, layouts: []*layout{
		state("opaque", &SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot"}),
		state("count", &SerializerSnapshot{Class: basePrefix + "LongSerializer$LongSerializerSnapshot"}),
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
	var out []snapshot.Entry
	err := heapEntries(c.kg, c.maxP, body, "kg", 0, c.layouts, nil, func(e snapshot.Entry) bool {
		out = append(out, e.Clone())
		return true
	})
	return out, err
}

// The end of a Kryo value that is not the key group's last is where the
// rest of the key group parses: a key of the key group follows.
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

// Where two ends let the rest parse (the first value holds what could be
// the second entry's namespace and key), the state is refused, not
// guessed.
func TestHeapKryoValueEndAmbiguous(t *testing.T) {
	c := newInferCase(t)
	v1 := append(append([]byte{0x57, 0}, c.key2...), 0x99)
	_, err := c.read(c.body(v1, []byte{0x57, 0x01, 0x04}))
	var ue *unsizedError
	if !errors.As(err, &ue) || ue.state != "opaque" || !errors.Is(err, ErrUnsupportedVersion) || !strings.Contains(err.Error(), "parses with its value ending at offset") {
		t.Fatalf("got %v, want state opaque refused as ambiguous", err)
	}
	if len(ue.before) != 1 || ue.before[0] != "count" {
		t.Errorf("states before it: %v, want [count]", ue.before)
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
