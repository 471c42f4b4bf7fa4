package snapshot

import "fmt"

// InFlightTotals is what an operator's subtasks hold in flight (an
// unaligned checkpoint's channel state).
type InFlightTotals struct {
	Channels, Subtasks int
	Bytes              int64
	// First is the index of the first subtask whose channels hold
	// records, -1 if none.
	First int
}

// InFlightOf adds up the data in flight of op's subtasks.
func InFlightOf(op *Operator) InFlightTotals {
	t := InFlightTotals{First: -1}
	for _, sub := range op.Subtasks {
		if sub == nil || len(sub.InFlight) == 0 {
			continue
		}
		t.Subtasks++
		t.Channels += len(sub.InFlight)
		for _, f := range sub.InFlight {
			t.Bytes += f.Bytes
			if f.Bytes > 0 && t.First < 0 {
				t.First = sub.Index
			}
		}
	}
	return t
}

// Holds reports whether the channels hold records: Flink also snapshots
// a channel whose buffers are empty (a result subpartition's buffer that
// nothing was written into yet), which holds none.
func (t InFlightTotals) Holds() bool { return t.Bytes > 0 }

// CheckNoInFlight fails when a subtask of s holds data in flight, which
// a copy that cannot carry it would lose: the message says what s holds,
// then why, which says why this copy cannot (a clause that follows
// "which"), then what to do. Channels whose buffers are all empty lose
// nothing. The error wraps ErrUnsupportedVersion.
func CheckNoInFlight(s *Snapshot, why string) error {
	var first string
	var all InFlightTotals
	for _, op := range s.Operators {
		t := InFlightOf(op)
		if !t.Holds() {
			continue
		}
		if first == "" {
			first = fmt.Sprintf("operator %q subtask %d", op.Label(), t.First)
		}
		all.Channels, all.Subtasks, all.Bytes = all.Channels+t.Channels, all.Subtasks+t.Subtasks, all.Bytes+t.Bytes
	}
	if !all.Holds() {
		return nil
	}
	return fmt.Errorf("%w: an unaligned checkpoint with data in flight (%d bytes in %d channels of %d subtasks, the first %s), which %s; "+
		"restore the checkpoint in Flink, at any parallelism (Flink redistributes data in flight itself), and take a savepoint (savepoints are aligned) or an aligned checkpoint to copy",
		ErrUnsupportedVersion, all.Bytes, all.Channels, all.Subtasks, first, why)
}

// HasInFlight reports whether a subtask of s lists channels of an
// unaligned checkpoint, whether or not their buffers hold records.
func HasInFlight(s *Snapshot) bool {
	for _, op := range s.Operators {
		for _, sub := range op.Subtasks {
			if sub != nil && len(sub.InFlight) > 0 {
				return true
			}
		}
	}
	return false
}
