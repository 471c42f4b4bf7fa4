package statefile

import (
	"bytes"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
)

// A read given the walk an earlier read of the key group kept takes its
// entries where that walk found them, without walking the values again;
// a walk is given out once, and only a key group walked whole is kept.
func TestHeapReadTakesKeptWalk(t *testing.T) {
	c := newInferCase(t)
	// The first state's values are Strings here, which walk (Kryo's do
	// only with the decoder's family, which this package does not have).
	walked := *c
	str := &typeser.SerializerSnapshot{Class: basePrefix + "StringSerializer$StringSerializerSnapshot"}
	walked.layouts = []*Layout{NewLayout(&StateMeta{Name: "opaque", Type: KeyValueState, Options: map[string]string{"KEYED_STATE_TYPE": "VALUE"},
		Serializers: map[string]*typeser.SerializerSnapshot{"NAMESPACE_SERIALIZER": c.layouts[0].Namespace, "VALUE_SERIALIZER": str}}, str), c.layouts[1]}
	body := walked.body([]byte{3, 'a', 'b'}, []byte{2, 'c'})
	var ws Walks
	key := walkKey{"kg", 0, c.kg}
	keep := walkPlan{keep: func(w []pieceWalk) { ws.keep(key, w) }}
	es, lost, err := readPiecesOf(c.kg, c.maxP, walked.layouts, []heapPiece{{body: body, file: "kg"}}, keep)
	if err != nil || len(lost) > 0 || len(es) != 3 {
		t.Fatalf("%d entries, lost %v, error %v", len(es), lost, err)
	}
	kept := ws.take(key)
	if kept == nil {
		t.Fatal("the key group's walk was not kept")
	}
	if ws.take(key) != nil {
		t.Fatal("a walk was given out twice")
	}
	// A string's length changed in place: walked again, its value would
	// end elsewhere; the kept walk still says where it was, and the read
	// takes it from there.
	changed := bytes.Clone(body)
	at := bytes.Index(changed, []byte{3, 'a', 'b'})
	changed[at] = 4
	es2, _, err := readPiecesOf(c.kg, c.maxP, walked.layouts, []heapPiece{{body: changed, file: "kg"}}, walkPlan{walked: kept})
	if err != nil || len(es2) != 3 || !bytes.Equal(es2[1].Value, []byte{4, 'a', 'b'}) || !bytes.Equal(es2[2].Value, []byte{2, 'c'}) {
		t.Fatalf("read with the kept walk: %v, error %v", es2, err)
	}
	if es3, _, err := readPiecesOf(c.kg, c.maxP, walked.layouts, []heapPiece{{body: changed, file: "kg"}}, walkPlan{}); err == nil && len(es3) == 3 && bytes.Equal(es3[1].Value, es2[1].Value) {
		t.Fatal("walked again, the changed key group reads as with the kept walk: the test shows nothing")
	}

	// A Kryo object of a class stateutil does not know does not walk: the
	// key group is read in two walks, and nothing is kept.
	opaque := []byte{0x57, 0x01, 0x04, 0x01, 'x' | 0x80}
	if es, _, err := readPiecesOf(c.kg, c.maxP, c.layouts, []heapPiece{{body: c.body(opaque, opaque), file: "kg"}}, keep); err != nil || len(es) != 3 {
		t.Fatalf("%d entries, error %v", len(es), err)
	}
	if ws.take(key) != nil {
		t.Fatal("a key group read in two walks kept a walk")
	}
}

// The Walks of a process hold at most walksBudget bytes of entry places
// together, and give back what they hold when dropped.
func TestWalksBounded(t *testing.T) {
	var a, b Walks
	base := walksHeld.Load()
	small := []pieceWalk{{recs: make([]heapRec, 10)}}
	a.keep(walkKey{"a", 0, 1}, small)
	big := []pieceWalk{{recs: make([]heapRec, walksBudget()/walkSize(small)*10)}}
	b.keep(walkKey{"b", 0, 2}, big)
	if b.take(walkKey{"b", 0, 2}) != nil {
		t.Fatalf("a walk of %d bytes was kept beside one of %d, past the budget of %d", walkSize(big), walkSize(small), walksBudget())
	}
	a.keep(walkKey{"a", 0, 2}, small)
	if a.take(walkKey{"a", 0, 1}) == nil || a.held != walkSize(small) || walksHeld.Load()-base != walkSize(small) {
		t.Fatalf("after one of two walks was given out: %d bytes held, %d by the process; want %d", a.held, walksHeld.Load()-base, walkSize(small))
	}
	a.Drop()
	if a.take(walkKey{"a", 0, 2}) != nil || walksHeld.Load() != base {
		t.Fatalf("dropped, the walks hold %d bytes", walksHeld.Load()-base)
	}
}
