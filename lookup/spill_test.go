package lookup

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
)

// A key group larger than spillBytes comes out as one in memory does: in
// the order of a stable sort by (state, key, namespace), grouped by key,
// every byte kept.
func TestKeyGroupSpillsInOrder(t *testing.T) {
	defer func(n int) { spillBytes = n }(spillBytes)
	rng := rand.New(rand.NewPCG(5, 6))
	var g keyGroup
	defer g.reset()
	spilled := 0
	for round := range 300 {
		spillBytes = entryFootprint * (1 + rng.IntN(60))
		n := rng.IntN(400)
		es := make([]snapshot.Entry, n)
		for i := range es {
			es[i] = snapshot.Entry{
				KeyGroup:  7,
				State:     []string{"a", "b", "c"}[rng.IntN(3)],
				Key:       []byte{byte(rng.IntN(5)), byte(rng.IntN(3))}[:1+rng.IntN(2)],
				Namespace: []byte{byte(rng.IntN(2))},
				UserKey:   []byte(fmt.Sprint(rng.IntN(3))),
				Value:     []byte(fmt.Sprint(i)), // tells equal keys apart
				ExpiresAt: int64(rng.IntN(3)),
			}
			switch rng.IntN(10) {
			case 0:
				es[i].Value = nil
			case 1:
				es[i].UserKey = []byte{}
			}
		}
		if round%2 == 0 {
			slices.SortStableFunc(es, byStateKeyNamespace)
		}
		want := make([]snapshot.Entry, len(es))
		for i := range es {
			want[i] = es[i].Clone()
		}
		slices.SortStableFunc(want, byStateKeyNamespace)
		for i := range es {
			if err := g.add(&es[i]); err != nil {
				t.Fatal(err)
			}
			clear(es[i].Value) // the reader's bytes change after
		}
		if g.spill != nil {
			spilled++
		}
		var got []snapshot.Entry
		err := g.groups(sameKey, func(run []snapshot.Entry) error {
			for i := range run {
				if !sameKey(&run[0], &run[i]) {
					t.Fatalf("round %d: a group holds %q/%x and %q/%x", round, run[0].State, run[0].Key, run[i].State, run[i].Key)
				}
			}
			if len(got) > 0 && sameKey(&got[len(got)-1], &run[0]) {
				t.Fatalf("round %d: key %q/%x split over two groups", round, run[0].State, run[0].Key)
			}
			for _, e := range run {
				got = append(got, e.Clone())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d entries, want %d", round, len(got), len(want))
		}
		for i := range want {
			w := &want[i]
			if !got[i].Equal(w) {
				t.Fatalf("round %d: entry %d is %+v, want %+v", round, i, got[i], *w)
			}
		}
		if g.spill != nil || len(g.entries) != 0 {
			t.Fatalf("round %d: the key group holds entries after groups", round)
		}
	}
	if spilled < 200 {
		t.Fatalf("only %d of 300 rounds spilled", spilled)
	}
}

// Without a writable temporary directory a key group too large for memory
// fails with what it tried, and none is left half ordered.
func TestKeyGroupSpillNeedsATemporaryDirectory(t *testing.T) {
	defer func(n int) { spillBytes = n }(spillBytes)
	spillBytes = entryFootprint
	t.Setenv("TMPDIR", t.TempDir()+"/missing")
	var g keyGroup
	err := g.add(&snapshot.Entry{State: "a", Key: []byte("k"), Value: []byte("v")})
	if err == nil || !strings.Contains(err.Error(), "temporary file") || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("add = %v, want the temporary file's error", err)
	}
}
