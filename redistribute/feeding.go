package redistribute

import (
	"context"
	"fmt"
	"math"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

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

// estimateRehash plans a max-parallelism change from the old key groups'
// figures alone (what the metadata records; formats without figures are
// read): old key group x feeds the new key groups congruent to it modulo
// g = gcd(old, new max parallelism) (see feeding), newMax/g of them, and
// with hashed keys each gets an equal share. The old subtasks feeding a
// new one are exact up to empty key groups; entries and bytes are
// estimates (OperatorPlan.Estimated). With sizes, the old key groups'
// figures are their stored bytes alone (see storedSizes).
func estimateRehash(ctx context.Context, r snapshot.Reader, op *snapshot.Operator, p *OperatorPlan, codecs *snapshot.Codecs, sizes snapshot.KeyGroupSizer) error {
	if err := checkHashable(op, codecs); err != nil {
		return err
	}
	p.Estimated = true
	newMax := p.New.MaxParallelism
	g := gcd(p.Old.MaxParallelism, newMax)
	share := float64(g) / float64(newMax)
	entries := make([]float64, len(p.Subtasks))
	bytes := make([]float64, len(p.Subtasks))
	for _, sub := range op.Subtasks {
		if len(op.KeyedStates) == 0 {
			continue
		}
		var stats []snapshot.KeyGroupStat
		var err error
		if sizes != nil {
			stats, _, err = sizes.StoredKeyGroupBytes(ctx, op, sub.Index)
		} else {
			stats, err = snapshot.KeyGroupStats(ctx, r, op, sub)
		}
		if err != nil {
			return fmt.Errorf("subtask %d: %w", sub.Index, err)
		}
		// Summed by residue: the new key groups y = x (mod g) each get
		// an equal share of old key group x.
		resEntries, resBytes := make([]float64, g), make([]float64, g)
		for _, st := range stats {
			resEntries[st.KeyGroup%g] += float64(st.Entries)
			resBytes[st.KeyGroup%g] += float64(st.Bytes)
		}
		fed := make([]bool, len(p.Subtasks))
		for y := range newMax {
			if resEntries[y%g] == 0 && resBytes[y%g] == 0 {
				continue
			}
			j := keygroup.SubtaskOf(y, newMax, p.New.Parallelism)
			entries[j] += resEntries[y%g] * share
			bytes[j] += resBytes[y%g] * share
			fed[j] = true
		}
		for j, ok := range fed {
			if ok {
				p.Subtasks[j].Sources = append(p.Subtasks[j].Sources, sub.Index)
			}
		}
	}
	for j := range p.Subtasks {
		p.Subtasks[j].KeyedEntries = int64(math.Round(entries[j]))
		p.Subtasks[j].KeyedBytes = int64(math.Round(bytes[j]))
	}
	return nil
}

// storedSizes reports whether r records the stored sizes of every key
// group of op (snapshot.KeyGroupSizer) and one max parallelism divides
// the other, as a writer re-hashing stored pairs needs.
func storedSizes(ctx context.Context, r snapshot.Reader, op *snapshot.Operator, t Target) bool {
	ks, ok := r.(snapshot.KeyGroupSizer)
	m, m2 := op.MaxParallelism, t.MaxParallelism
	if !ok || len(op.KeyedStates) == 0 || (m2%m != 0 && m%m2 != 0) {
		return false
	}
	for _, sub := range op.Subtasks {
		if _, ok, err := ks.StoredKeyGroupBytes(ctx, op, sub.Index); err != nil || !ok {
			return false
		}
	}
	return true
}
