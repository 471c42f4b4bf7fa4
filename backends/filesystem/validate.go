package filesystem

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/stateutil/stateutil/snapshot"
)

// validate checks every figure of m that a read will rely on, so later
// reads can trust offsets, lengths and counts as far as they bounds-check
// against the files' recorded sizes (each file's real size is checked when
// it is opened). file names _metadata in errors.
func validate(m *metadata, file string) error {
	bad := func(format string, args ...any) error { return snapshot.Corrupt(file, -1, format, args...) }
	s := m.Snapshot
	if err := snapshot.Validate(s, file); err != nil {
		return err
	}
	if len(m.Layouts) != len(s.Operators) {
		return bad("%d operator layouts for %d operators", len(m.Layouts), len(s.Operators))
	}
	for i, op := range s.Operators {
		if len(m.Layouts[i]) != len(op.Subtasks) {
			return bad("operator %q: %d subtask layouts for %d subtasks", op.Label(), len(m.Layouts[i]), len(op.Subtasks))
		}
		for j, sub := range op.Subtasks {
			where := fmt.Sprintf("operator %q subtask %d", op.Label(), sub.Index)
			if err := validateSubtask(sub, &m.Layouts[i][j]); err != nil {
				return bad("%s: %v", where, err)
			}
		}
	}
	return nil
}

func validateSubtask(sub *snapshot.Subtask, l *subtaskLayout) error {
	kgs := sub.KeyGroups
	if sub.KeyGroupStats != nil {
		if len(sub.KeyGroupStats) != kgs.Len() {
			return fmt.Errorf("%d key-group stats for %d key groups", len(sub.KeyGroupStats), kgs.Len())
		}
		var sum snapshot.Stats
		for i, st := range sub.KeyGroupStats {
			if st.KeyGroup != kgs.Start+i || st.Entries < 0 || st.Bytes < 0 {
				return fmt.Errorf("key-group stat %d is {%d %d %d}", i, st.KeyGroup, st.Entries, st.Bytes)
			}
			sum.Entries += st.Entries
			sum.Bytes += st.Bytes
		}
		if sum.Entries != sub.Keyed.Entries || sum.Bytes != sub.Keyed.Bytes {
			return fmt.Errorf("key groups hold %d entries / %d bytes, the subtask says %d / %d", sum.Entries, sum.Bytes, sub.Keyed.Entries, sub.Keyed.Bytes)
		}
	}
	if k := l.Keyed; k != nil {
		if err := validateKeyed(sub, k); err != nil {
			return fmt.Errorf("keyed state: %w", err)
		}
	} else if sub.Keyed.Entries != 0 {
		return fmt.Errorf("%d keyed entries but no keyed state", sub.Keyed.Entries)
	}
	if o := l.Operator; o != nil {
		if err := validateOperator(sub, o); err != nil {
			return fmt.Errorf("operator state: %w", err)
		}
	} else if sub.Operator.Entries != 0 {
		return fmt.Errorf("%d operator-state elements but no operator state", sub.Operator.Entries)
	}
	if err := validateRaw(l.RawKeyed, sub.RawKeyedBytes); err != nil {
		return fmt.Errorf("raw keyed state: %w", err)
	}
	if err := validateRaw(l.RawOperator, sub.RawOperatorBytes); err != nil {
		return fmt.Errorf("raw operator state: %w", err)
	}
	return nil
}

func validateBlob(b *blob) error {
	switch {
	case b.Size < 0:
		return fmt.Errorf("negative size %d", b.Size)
	case b.File == "" && int64(len(b.Inline)) != b.Size:
		return fmt.Errorf("inline bytes %d, size says %d", len(b.Inline), b.Size)
	case b.File != "" && len(b.Inline) > 0:
		return fmt.Errorf("both a file %q and inline bytes", b.File)
	}
	return nil
}

func validateKeyed(sub *snapshot.Subtask, k *keyedLayout) error {
	if err := validateBlob(&k.Data); err != nil {
		return err
	}
	n := sub.KeyGroups.Len()
	if sub.KeyGroupStats == nil {
		return fmt.Errorf("no key-group stats")
	}
	if len(k.Offsets) != n+1 || len(k.CRCs) != n {
		return fmt.Errorf("%d offsets and %d checksums for %d key groups", len(k.Offsets), len(k.CRCs), n)
	}
	if k.Offsets[0] != 0 || k.Offsets[n] != k.Data.Size {
		return fmt.Errorf("sections span %d..%d of a %d-byte blob", k.Offsets[0], k.Offsets[n], k.Data.Size)
	}
	for i := range n {
		l := k.Offsets[i+1] - k.Offsets[i]
		st := sub.KeyGroupStats[i]
		switch {
		case l < 0:
			return fmt.Errorf("key group %d: offsets %d..%d go backwards", st.KeyGroup, k.Offsets[i], k.Offsets[i+1])
		case st.Bytes > l || st.Entries > l/minEntrySize || (l > 0 && st.Entries == 0):
			return fmt.Errorf("key group %d: %d entries / %d bytes cannot fill a %d-byte section", st.KeyGroup, st.Entries, st.Bytes, l)
		}
	}
	if sub.Keyed.Entries > 0 && len(k.States) == 0 {
		return fmt.Errorf("entries but no state names")
	}
	return nil
}

func validateOperator(sub *snapshot.Subtask, o *operatorLayout) error {
	if err := validateBlob(&o.Data); err != nil {
		return err
	}
	type span struct{ off, len int64 }
	var spans []span
	names := map[string]bool{}
	var total snapshot.Stats
	for _, s := range o.States {
		if names[s.Name] {
			return fmt.Errorf("state %q listed twice", s.Name)
		}
		names[s.Name] = true
		if len(s.Offsets) != len(s.Lengths) {
			return fmt.Errorf("state %q: %d offsets, %d lengths", s.Name, len(s.Offsets), len(s.Lengths))
		}
		if int64(len(s.Offsets)) != sub.OperatorElements[s.Name] {
			return fmt.Errorf("state %q: %d elements located, %d counted", s.Name, len(s.Offsets), sub.OperatorElements[s.Name])
		}
		for i, off := range s.Offsets {
			l := s.Lengths[i]
			if off < 0 || l < 0 || off > o.Data.Size || l > o.Data.Size-off {
				return fmt.Errorf("state %q element %d: %d bytes at %d outside the %d-byte blob", s.Name, i, l, off, o.Data.Size)
			}
			spans = append(spans, span{off, l})
			total.Entries++
			total.Bytes += l
		}
	}
	if total.Entries != sub.Operator.Entries || total.Bytes != sub.Operator.Bytes {
		return fmt.Errorf("elements hold %d / %d bytes, the subtask says %d / %d", total.Entries, total.Bytes, sub.Operator.Entries, sub.Operator.Bytes)
	}
	// Elements must tile the blob: no gaps, no overlaps.
	slices.SortFunc(spans, func(a, b span) int {
		return cmp.Or(cmp.Compare(a.off, b.off), cmp.Compare(a.len, b.len))
	})
	var end int64
	for _, sp := range spans {
		if sp.off != end {
			return fmt.Errorf("elements leave a gap or overlap at offset %d", min(sp.off, end))
		}
		end += sp.len
	}
	if end != o.Data.Size {
		return fmt.Errorf("elements end at %d, the blob at %d", end, o.Data.Size)
	}
	return nil
}

func validateRaw(b *blob, size int64) error {
	if b == nil {
		if size != 0 {
			return fmt.Errorf("%d bytes but no blob", size)
		}
		return nil
	}
	if err := validateBlob(b); err != nil {
		return err
	}
	if b.Size != size {
		return fmt.Errorf("blob of %d bytes, the subtask says %d", b.Size, size)
	}
	return nil
}
