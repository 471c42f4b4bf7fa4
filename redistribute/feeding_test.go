package redistribute

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
)

// Every key that lands in one of the chosen new subtasks has its old key
// group inside feeding's runs, for max-parallelism pairs with large and
// small common divisors; and feeding reads less than everything when the
// divisor is large.
func TestFeedingHoldsEveryKeyThatLands(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, c := range []struct{ oldMax, newMax, oldP, newP int }{
		{128, 256, 4, 16}, {128, 4096, 3, 64}, {256, 128, 8, 8}, {128, 1000, 2, 50}, {100, 150, 5, 7},
	} {
		t.Run(fmt.Sprintf("%d->%d", c.oldMax, c.newMax), func(t *testing.T) {
			target := Target{Parallelism: c.newP, MaxParallelism: c.newMax}
			only := []int{rng.IntN(c.newP)}
			in := map[int]bool{}
			read := 0
			for i := range c.oldP {
				old := keygroup.RangeOf(c.oldMax, c.oldP, i)
				for _, run := range feeding(old, c.oldMax, target, only) {
					if run.Start < old.Start || run.End > old.End {
						t.Fatalf("run %v outside old subtask %v", run, old)
					}
					for x := run.Start; x <= run.End; x++ {
						in[x] = true
						read++
					}
				}
			}
			for k := range 20000 {
				code := keygroup.HashString(fmt.Sprintf("key-%d-%d", k, rng.Int()))
				y := keygroup.OfHash(code, c.newMax)
				if keygroup.SubtaskOf(y, c.newMax, c.newP) != only[0] {
					continue
				}
				if x := keygroup.OfHash(code, c.oldMax); !in[x] {
					t.Fatalf("key group %d (new %d, subtask %d) not read", x, y, only[0])
				}
			}
			t.Logf("shard of subtask %d reads %d of %d old key groups", only[0], read, c.oldMax)
			if c.newMax%c.oldMax == 0 && c.newMax/c.newP < c.oldMax/2 && read >= c.oldMax {
				t.Fatalf("read all %d old key groups for a %d-key-group subtask", read, c.newMax/c.newP)
			}
		})
	}
}
