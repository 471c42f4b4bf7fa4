package kryo

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// kryoSnapshotBytes is a KryoSerializerSnapshot as Flink 1.x writes it:
// the type class, registrations (kind 0, or Avro's array with frame) and
// no default serializers.
func kryoSnapshotBytes(typeClass string, regs []string, avro []byte) []byte {
	w := &wire.Writer{}
	w.UTF("org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot")
	w.I32(2)
	w.UTF(typeClass)
	optionalMap := func(entries [][2][]byte) {
		w.I64(0x4f2c69a3d70)
		w.I32(int32(len(entries)))
		for _, e := range entries {
			name := string(e[0])
			w.UTF(name)
			key := &wire.Writer{}
			key.UTF(name)
			w.Bool(true)
			w.Bytes32(key.B)
			w.Bool(true)
			w.Bytes32(e[1])
		}
	}
	var entries [][2][]byte
	for _, c := range regs {
		f := &wire.Writer{}
		f.UTF(c)
		f.I32(0)
		entries = append(entries, [2][]byte{[]byte(c), f.B})
	}
	entries = append(entries, [2][]byte{[]byte(avroArray), avro})
	optionalMap(entries)
	optionalMap(nil)
	optionalMap(nil)
	return w.B
}

func parsedKryo(t testing.TB, versioned []byte) *typeser.SerializerSnapshot {
	raw := binary.BigEndian.AppendUint32(nil, 2)
	raw = append(raw, versioned...)
	r := wire.NewReader(raw, "snapshot", 0)
	s := (&typeser.SnapReader{R: r, Table: testTable}).SnapshotProxy(func(q int) bool { return q == len(raw) })
	if r.Err != nil || s == nil {
		t.Fatalf("the snapshot does not parse: %v", r.Err)
	}
	return s
}

// TestSnapshot5 checks that a Flink 1.x KryoSerializerSnapshot becomes
// Flink 2.x's: Avro's registration as Flink 2.x writes it, the rest byte
// for byte.
func TestSnapshot5(t *testing.T) {
	v1 := kryoSnapshotBytes("java.lang.Object", []string{"java.lang.Object", "java.util.LinkedList"}, avroArrayFrame1)
	got, why := Snapshot5(parsedKryo(t, v1))
	if why != "" {
		t.Fatal(why)
	}
	want := kryoSnapshotBytes("java.lang.Object", []string{"java.lang.Object", "java.util.LinkedList"}, avroArrayFrame2)
	if !bytes.Equal(got, want) {
		t.Fatalf("Snapshot5 =\n%x\nwant\n%x", got, want)
	}
	// A frame that is not 1.x's Avro one (a job without flink-avro: Flink's dummy) stays.
	dummy := kryoSnapshotBytes("java.lang.Object", nil, []byte("\x00\x05dummy\x00\x00\x00\x01"))
	if got, why := Snapshot5(parsedKryo(t, dummy)); why != "" || !bytes.Equal(got, dummy) {
		t.Fatalf("Snapshot5 of a snapshot without Avro's 1.x frame: %q, changed %v", why, !bytes.Equal(got, dummy))
	}
}

// FuzzSnapshot5 feeds mangled snapshots to the rewrite: no panic, and
// what it writes parses as a Kryo snapshot of the same registrations.
func FuzzSnapshot5(f *testing.F) {
	f.Add(kryoSnapshotBytes("java.lang.Object", []string{"java.lang.Object"}, avroArrayFrame1))
	f.Add(kryoSnapshotBytes("java.util.List", nil, avroArrayFrame2))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, why := rewriteSnapshot(b)
		if why != "" {
			return
		}
		raw := append(binary.BigEndian.AppendUint32(nil, 2), out...)
		r := wire.NewReader(raw, "snapshot", 0)
		s := (&typeser.SnapReader{R: r, Table: testTable}).SnapshotProxy(func(q int) bool { return q == len(raw) })
		in := wire.NewReader(append(binary.BigEndian.AppendUint32(nil, 2), b...), "snapshot", 0)
		old := (&typeser.SnapReader{R: in, Table: testTable}).SnapshotProxy(func(q int) bool { return q == len(in.Buf) })
		if in.Err != nil || old == nil || old.Class != s.Class {
			return // not a Kryo snapshot to begin with: the rewrite copied what it could read
		}
		if r.Err != nil || len(s.KryoRegistrations) != len(old.KryoRegistrations) {
			t.Fatalf("rewritten %x: %v, %d registrations of %d", out, r.Err, len(s.KryoRegistrations), len(old.KryoRegistrations))
		}
	})
}
