package redistribute

import "github.com/stateutil/stateutil/keygroup"

// feeding is the runs of key groups in old (of max parallelism oldMax)
// whose entries can land, at t, in one of the new subtasks only: a shard
// of a max-parallelism change reads these alone.
//
// A key's key group is one murmur hash h modulo the max parallelism, so
// old key group x = h mod oldMax and new key group y = h mod t's are
// congruent modulo g = gcd(oldMax, newMax): x can feed y only if
// x ≡ y (mod g). A shard whose new key groups cover few residues modulo g
// (a doubling 128 -> 256 at parallelism p: about 2*256/p of 128) reads
// that fraction of the old state; one whose new key groups cover all of
// them (g small: 128 -> 1000 has g = 8) reads everything, as one process
// would.
func feeding(old keygroup.Range, oldMax int, t Target, only []int) []keygroup.Range {
	g := gcd(oldMax, t.MaxParallelism)
	want := make([]bool, g)
	covered := 0
	for _, j := range only {
		r := keygroup.RangeOf(t.MaxParallelism, t.Parallelism, j)
		for y := r.Start; y <= r.End && covered < g; y++ {
			if !want[y%g] {
				want[y%g] = true
				covered++
			}
		}
	}
	if covered == g {
		return []keygroup.Range{old}
	}
	var out []keygroup.Range
	for x := old.Start; x <= old.End; x++ {
		if !want[x%g] {
			continue
		}
		if n := len(out); n > 0 && out[n-1].End == x-1 {
			out[n-1].End = x
		} else {
			out = append(out, keygroup.Range{Start: x, End: x})
		}
	}
	return out
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
