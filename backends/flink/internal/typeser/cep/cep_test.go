package cep

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

// testTable reads this family's serializers beside flink-core's.
var testTable = typeser.NewTable(Family)

const (
	nfaStateClass = "org.apache.flink.cep.nfa.NFAStateSerializerSnapshot"
	nodeIDClass   = "org.apache.flink.cep.nfa.sharedbuffer.NodeId$NodeIdSerializer$NodeIdSerializerSnapshot"
	eventIDClass  = "org.apache.flink.cep.nfa.sharedbuffer.EventId$EventIdSerializer$EventIdSerializerSnapshot"
	lockableClass = "org.apache.flink.cep.nfa.sharedbuffer.LockableTypeSerializerSnapshot"
	nodeClass     = "org.apache.flink.cep.nfa.sharedbuffer.SharedBufferNodeSerializerSnapshotV2"
	longClass     = "org.apache.flink.api.common.typeutils.base.LongSerializer$LongSerializerSnapshot"
)

func codec(s *typeser.SerializerSnapshot) typeser.Codec {
	return typeser.Codec{S: testTable.Bind(s)}
}

// nfaStateCodec is the codec of a serializer that writes previous
// timestamps (Flink 1.16 on) or not (outer version 1).
func nfaStateCodec(previous bool) typeser.Codec {
	if previous {
		return codec(&typeser.SerializerSnapshot{Class: nfaStateClass, OuterVersion: 2, Outer: []byte{1}})
	}
	return codec(&typeser.SerializerSnapshot{Class: nfaStateClass, OuterVersion: 1})
}

func lockable(element string) typeser.Codec {
	return codec(&typeser.SerializerSnapshot{Class: lockableClass, Nested: []*typeser.SerializerSnapshot{{Class: element}}})
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Values Flink 1.20.5 wrote in the CEP witness job's savepoint
// (testdata/flink-witness/1.20.5/cep-hashmap-canonical, key "c-3"), and
// what the job itself held, as its own dump (dump.jsonl) shows them.
var flinkValues = []struct {
	name  string
	codec typeser.Codec
	hex   string
	want  string
}{
	{"node id", codec(&typeser.SerializerSnapshot{Class: nodeIDClass}), "0100000000000000000000c738067374617274",
		`{"eventId":{"id":0,"timestamp":51000},"pageName":"start"}`},
	{"event id", codec(&typeser.SerializerSnapshot{Class: eventIDClass}), "00000000000000000000c738",
		`{"id":0,"timestamp":51000}`},
	{"locked event", lockable(longClass), "000000010000000000000033", `{"element":51,"refCounter":1}`},
	{"locked node, no target", lockable(nodeClass), "000000010000000100000001000000000100000003",
		`{"element":{"edges":[{"element":{"deweyNumber":"3","target":null},"refCounter":1}]},"refCounter":1}`},
	{"locked node", lockable(nodeClass), "0000000200000001000000020100000000000000000000c738067374617274000000020000000300000000",
		`{"element":{"edges":[{"element":{"deweyNumber":"3.0","target":{"eventId":{"id":0,"timestamp":51000},"pageName":"start"}},"refCounter":2}]},"refCounter":2}`},
	{"NFA state", nfaStateCodec(true), "0000000404656e6401000000000000000000016378076d6964646c65000000050000000300000000000000020000000000000000000000000000c73800000000000163780100000000000000000000c73804656e64010000000000000000000105b8076d6964646c650000000400000003000000000000000100000000000000000000c73800000000000105b80100000000000000000000c738076d6964646c6501000000000000000000016378076d6964646c650000000300000004000000000000000000000000000124f80000000000016378010000000000000000000124f8067374617274000000000100000005ffffffffffffffffffffffffffffffff0000000000",
		`{"completedMatches":[],"partialMatches":[{"currentStateName":"end","previousBufferEntry":{"eventId":{"id":0,"timestamp":91000},"pageName":"middle"},"previousTimestamp":91000,"startEventID":{"id":0,"timestamp":51000},"startTimestamp":51000,"version":"3.0.2.0.0"},{"currentStateName":"end","previousBufferEntry":{"eventId":{"id":0,"timestamp":67000},"pageName":"middle"},"previousTimestamp":67000,"startEventID":{"id":0,"timestamp":51000},"startTimestamp":51000,"version":"3.0.1.0"},{"currentStateName":"middle","previousBufferEntry":{"eventId":{"id":0,"timestamp":91000},"pageName":"middle"},"previousTimestamp":91000,"startEventID":{"id":0,"timestamp":75000},"startTimestamp":75000,"version":"4.0.0"},{"currentStateName":"start","previousBufferEntry":null,"previousTimestamp":-1,"startEventID":null,"startTimestamp":-1,"version":"5"}]}`},
}

func TestFlinkValuesDecodeAndEncodeBack(t *testing.T) {
	for _, c := range flinkValues {
		b := mustHex(t, c.hex)
		v, err := c.codec.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, _ := json.Marshal(v)
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
		var back any
		d := json.NewDecoder(bytes.NewReader([]byte(c.want)))
		d.UseNumber()
		if err := d.Decode(&back); err != nil {
			t.Fatal(err)
		}
		enc, err := c.codec.Encode(back)
		if err != nil || !bytes.Equal(enc, b) {
			t.Errorf("%s: encodes to %x, %v; Flink wrote %x", c.name, enc, err, b)
		}
	}
}

// Before Flink 1.16 (snapshot outer version 1) a computation state has no
// previous timestamp: the same bytes without it decode, and the value
// has no such field.
func TestNFAStateWithoutPreviousTimestamp(t *testing.T) {
	b := mustHex(t, "00000001"+"06737461727400"+"0000000100000005"+"ffffffffffffffff"+"00"+"00000000")
	v, err := nfaStateCodec(false).Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(v)
	want := `{"completedMatches":[],"partialMatches":[{"currentStateName":"start","previousBufferEntry":null,"startEventID":null,"startTimestamp":-1,"version":"5"}]}`
	if string(got) != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if _, err := nfaStateCodec(true).Decode(b); err == nil {
		t.Error("bytes without previous timestamps decode under a serializer that writes them")
	}
}

func TestDamageIsCorrupt(t *testing.T) {
	for _, c := range []struct {
		name  string
		codec typeser.Codec
		hex   string
	}{
		{"node id flag 2", codec(&typeser.SerializerSnapshot{Class: nodeIDClass}), "0200000000000000000000c738067374617274"},
		{"start event flag 7", nfaStateCodec(false), "00000001" + "06737461727400" + "0000000100000005" + "ffffffffffffffff" + "07" + "00000000"},
		{"dewey count past the bytes", lockable(nodeClass), "00000001000000010000000100" + "7fffffff"},
		{"truncated event id", codec(&typeser.SerializerSnapshot{Class: eventIDClass}), "0000000000000000"},
	} {
		_, err := c.codec.Decode(mustHex(t, c.hex))
		if !errors.Is(err, snapshot.ErrCorrupt) {
			t.Errorf("%s: %v, want damage", c.name, err)
		}
	}
}

// A Lockable whose element serializer the snapshot does not give cannot be
// walked: not decoded, never damage.
func TestLockableWithoutElementNotDecoded(t *testing.T) {
	c := codec(&typeser.SerializerSnapshot{Class: lockableClass})
	var nd *snapshot.NotDecodedError
	if _, err := c.Decode(mustHex(t, "000000010000000000000033")); !errors.As(err, &nd) {
		t.Fatalf("%v, want not decoded", err)
	}
}

func FuzzCEP(f *testing.F) {
	for i, c := range flinkValues {
		f.Add(uint8(i), mustHex(f, c.hex))
	}
	codecs := []typeser.Codec{nfaStateCodec(false)}
	for _, c := range flinkValues {
		codecs = append(codecs, c.codec)
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		formattest.CodecRoundTrip(t, codecs[int(which)%len(codecs)], b)
	})
}
