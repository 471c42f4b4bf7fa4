package snapshot

import (
	"context"
	"slices"
)

// KeyGroupStats returns the size of every key group of a subtask's range
// that holds state: from the metadata when the format records it, else by
// scanning the subtask's entries.
func KeyGroupStats(ctx context.Context, r Reader, op *Operator, sub *Subtask) ([]KeyGroupStat, error) {
	if sub.KeyGroupStats != nil || (sub.Keyed.Known && sub.Keyed.Entries == 0) {
		var held []KeyGroupStat // formats may record empty key groups too
		for _, g := range sub.KeyGroupStats {
			if g.Entries > 0 {
				held = append(held, g)
			}
		}
		return held, nil
	}
	var out []KeyGroupStat
	for e, err := range r.Entries(ctx, op, sub.Index, sub.KeyGroups) {
		if err != nil {
			return nil, err
		}
		if n := len(out); n == 0 || out[n-1].KeyGroup != e.KeyGroup {
			out = append(out, KeyGroupStat{KeyGroup: e.KeyGroup})
		}
		out[len(out)-1].Entries++
		out[len(out)-1].Bytes += e.Size()
	}
	return out, nil
}

// KeyedStats totals a subtask's keyed state, scanning when the metadata
// does not know.
func KeyedStats(ctx context.Context, r Reader, op *Operator, sub *Subtask) (Stats, error) {
	if sub.Keyed.Known {
		return sub.Keyed, nil
	}
	groups, err := KeyGroupStats(ctx, r, op, sub)
	if err != nil {
		return Stats{}, err
	}
	s := Stats{Known: true}
	for _, g := range groups {
		s.Entries += g.Entries
		s.Bytes += g.Bytes
	}
	return s, nil
}

// Skew is max/mean of values: 1 for a perfect balance, 0 for no data.
func Skew(values []int64) float64 {
	if len(values) == 0 {
		return 0
	}
	var sum int64
	for _, v := range values {
		sum += v
	}
	if sum == 0 {
		return 0
	}
	return float64(slices.Max(values)) * float64(len(values)) / float64(sum)
}
