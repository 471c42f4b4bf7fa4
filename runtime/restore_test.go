package runtime

import (
	"testing"

	"github.com/stateutil/stateutil/snapshot"
)

// TestRunSourceAssignments checks that every partition goes to exactly one
// subtask, at exactly its stored offset, in split and union mode.
func TestRunSourceAssignments(t *testing.T) {
	src := &GeneratorSource{NumPartitions: 5, Records: 500}
	stored := []offset{{0, 11}, {1, 12}, {2, 13}, {3, 14}, {4, 15}}
	for _, tc := range []struct {
		mode     snapshot.Mode
		restored [][]offset // per new subtask, as the redistribution hands them out
	}{
		{snapshot.Split, [][]offset{stored[:3], stored[3:]}},              // 1 -> 2, split
		{snapshot.Split, [][]offset{stored[:2], stored[2:4], stored[4:]}}, // -> 3
		{snapshot.Union, [][]offset{stored, stored, stored}},              // union: all to all
		{snapshot.Union, [][]offset{stored[:2], stored[2:], nil}},         // sparse union
		{snapshot.Split, [][]offset{nil, nil, nil, nil, nil, nil, nil}},   // more subtasks than partitions, fresh
	} {
		got, err := sourceAssignments(src, tc.mode, len(tc.restored), tc.restored)
		if err != nil {
			t.Fatalf("%s %v: %v", tc.mode, tc.restored, err)
		}
		seen := map[int]int64{}
		for _, offs := range got {
			for _, o := range offs {
				if _, dup := seen[o.Partition]; dup {
					t.Fatalf("%s: partition %d assigned twice: %v", tc.mode, o.Partition, got)
				}
				seen[o.Partition] = o.Offset
			}
		}
		for p := range 5 {
			want := int64(0)
			for _, offs := range tc.restored {
				for _, o := range offs {
					if o.Partition == p {
						want = o.Offset
					}
				}
			}
			if off, ok := seen[p]; !ok || off != want {
				t.Errorf("%s: partition %d at %d (assigned %v), want %d", tc.mode, p, off, ok, want)
			}
		}
	}
	if _, err := sourceAssignments(src, snapshot.Split, 2, [][]offset{{{1, 0}}, {{1, 5}}}); err == nil {
		t.Error("a partition restored to two subtasks was accepted")
	}
}
