package arena

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// Every copy keeps its bytes while later copies are made, whatever their
// sizes, and the arena holds no more than the copies and one block.
func TestKeepCopiesStayPut(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var a Arena
	for round := range 4 {
		var want, got [][]byte
		total := 0
		for range 3000 {
			n := rng.IntN(2000)
			if rng.IntN(200) == 0 {
				n = BlockSize + rng.IntN(BlockSize) // a string of its own block
			}
			b := make([]byte, n)
			seed := byte(rng.Uint32())
			for i := range b {
				b[i] = seed + byte(i*7)
			}
			src := bytes.Clone(b)
			c := a.Keep(b)
			clear(b) // the source may change after
			if !bytes.Equal(c, src) {
				t.Fatalf("round %d: the copy is not the bytes kept", round)
			}
			want, got = append(want, src), append(got, c)
			total += n
			if len(c) != n || cap(c) != n {
				t.Fatalf("round %d: a copy of %d bytes has len %d cap %d", round, n, len(c), cap(c))
			}
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("round %d: copy %d changed by later copies", round, i)
			}
		}
		// Each block wastes less than the string that did not fit it.
		if held := held(&a); held > 2*total+BlockSize {
			t.Fatalf("round %d: %d bytes held for %d copied", round, held, total)
		}
		a.Reset()
		if held(&a) != 0 {
			t.Fatalf("round %d: %d bytes held after Reset", round, held(&a))
		}
	}
}

// A copy's capacity ends with it: appending to it never writes over the
// next copy.
func TestKeepCapacityEndsWithTheCopy(t *testing.T) {
	var a Arena
	x := a.Keep([]byte("abc"))
	y := a.Keep([]byte("def"))
	_ = append(x, 'Z')
	if string(y) != "def" {
		t.Fatalf("appending to a copy changed the next: %q", y)
	}
}

// held is the bytes of the blocks a holds in use.
func held(a *Arena) int {
	n := 0
	for _, b := range a.blocks {
		n += cap(b)
	}
	return n
}
