package lookup

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// inOrder gives the order a stable sort by (state, key, namespace) gives,
// whatever runs the entries come in: sorted, states one after another
// (each in key order, or in RocksDB's order of shorter keys first), or
// shuffled.
func TestKeyGroupInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var g keyGroup
	for round := range 4000 {
		n := rng.IntN(40)
		es := make([]snapshot.Entry, n)
		for i := range es {
			es[i] = snapshot.Entry{
				State:     []string{"a", "b", "c"}[rng.IntN(3)],
				Key:       randomKey(rng),
				Namespace: []byte{byte(rng.IntN(2))},
				Value:     []byte(fmt.Sprint(i)), // tells equal keys apart
			}
		}
		perm := rng.Perm(3)
		byState := func(a, b snapshot.Entry) int { return perm[a.State[0]-'a'] - perm[b.State[0]-'a'] }
		switch round % 4 {
		case 0: // each state in key order, states in any order
			slices.SortStableFunc(es, byStateKeyNamespace)
			slices.SortStableFunc(es, byState)
		case 1:
			slices.SortStableFunc(es, byStateKeyNamespace)
		case 2: // each state with shorter keys first, as RocksDB stores them
			slices.SortStableFunc(es, byStateKeyNamespace)
			slices.SortStableFunc(es, func(a, b snapshot.Entry) int { return len(a.Key) - len(b.Key) })
			slices.SortStableFunc(es, byState)
		}
		want := slices.Clone(es)
		slices.SortStableFunc(want, byStateKeyNamespace)
		g.reset()
		for i := range es {
			g.add(&es[i])
		}
		got := g.inOrder()
		if len(got) != len(want) {
			t.Fatalf("round %d: %d entries, want %d", round, len(got), len(want))
		}
		for i := range want {
			if !got[i].Equal(&want[i]) {
				t.Fatalf("round %d: entry %d is %+v, want %+v", round, i, got[i], want[i])
			}
		}
	}
}

// randomKey is up to 11 bytes of few values: keys that tie on their
// first eight bytes, zero bytes among them, and keys that are others'
// prefixes.
func randomKey(rng *rand.Rand) []byte {
	k := make([]byte, rng.IntN(12))
	for i := range k {
		k[i] = byte(rng.IntN(3))
	}
	return k
}

func byStateKeyNamespace(a, b snapshot.Entry) int {
	return cmp.Or(strings.Compare(a.State, b.State), bytes.Compare(a.Key, b.Key), bytes.Compare(a.Namespace, b.Namespace))
}

// pieces cut a subtask's key groups into consecutive ranges that cover
// each key group once, of about pieceBytes where sizes are recorded.
func TestPieces(t *testing.T) {
	sub := &snapshot.Subtask{KeyGroups: keygroup.Range{Start: 0, End: 99}}
	for kg := range 100 {
		sub.KeyGroupStats = append(sub.KeyGroupStats, snapshot.KeyGroupStat{KeyGroup: kg, Bytes: pieceBytes / 2})
	}
	for _, tc := range []struct {
		stats []snapshot.KeyGroupStat
		kgs   keygroup.Range
		want  int
	}{
		{sub.KeyGroupStats, keygroup.Range{Start: 0, End: 99}, 50},
		{sub.KeyGroupStats, keygroup.Range{Start: 10, End: 12}, 2},
		{sub.KeyGroupStats, keygroup.Range{Start: 7, End: 7}, 1},
		{nil, keygroup.Range{Start: 0, End: 16*piecesPerSubtask - 1}, piecesPerSubtask},
		{nil, keygroup.Range{Start: 0, End: 99}, 15},
		{nil, keygroup.Range{Start: 3, End: 5}, 3},
		{nil, keygroup.Range{Start: 5, End: 4}, 0},
	} {
		s := *sub
		s.KeyGroupStats = tc.stats
		ps := pieces(&s, tc.kgs)
		if len(ps) != tc.want {
			t.Errorf("%v, stats %v: %d pieces %v, want %d", tc.kgs, tc.stats != nil, len(ps), ps, tc.want)
		}
		next := tc.kgs.Start
		for _, p := range ps {
			if p.Start != next || p.End < p.Start {
				t.Fatalf("%v: pieces %v do not tile it", tc.kgs, ps)
			}
			next = p.End + 1
		}
		if len(ps) > 0 && next != tc.kgs.End+1 {
			t.Fatalf("%v: pieces %v end at %d", tc.kgs, ps, next-1)
		}
	}
}

// compareBytes orders as bytes.Compare does, whether the eight bytes it
// compares as a number differ, are equal, or one side is shorter.
func FuzzCompareBytes(f *testing.F) {
	for _, c := range [][2]string{
		{"", ""}, {"a", "b"}, {"abcdefgh", "abcdefgh"}, {"abcdefgh", "abcdefgi"},
		{"abcdefgh1", "abcdefgh"}, {"abcdefgh1", "abcdefgh2"}, {"\xffbcdefgh", "abcdefghzz"},
		{"abcdefg", "abcdefgh"}, {"\x00\x00\x00\x00\x00\x00\x00\x01", "\x80\x00\x00\x00\x00\x00\x00\x00"},
	} {
		f.Add([]byte(c[0]), []byte(c[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if got, want := compareBytes(a, b), bytes.Compare(a, b); got != want {
			t.Fatalf("compareBytes(%x, %x) = %d, bytes.Compare %d", a, b, got, want)
		}
	})
}
