package snapshot

import "fmt"

// CheckNoInFlight fails when a subtask of s holds data in flight (an
// unaligned checkpoint's channel state): what every copy calls before it
// starts, since none can carry it. Flink hands those records back to the
// channels they were in, redistributed by the job graph's partitioning,
// which a checkpoint does not record; a copy without them would lose
// them. The error wraps ErrUnsupportedVersion.
func CheckNoInFlight(s *Snapshot) error {
	var first string
	channels, subtasks, bytes := 0, 0, int64(0)
	for _, op := range s.Operators {
		for _, sub := range op.Subtasks {
			if sub == nil || len(sub.InFlight) == 0 {
				continue
			}
			if first == "" {
				first = fmt.Sprintf("operator %q subtask %d", op.Label(), sub.Index)
			}
			subtasks++
			channels += len(sub.InFlight)
			for _, f := range sub.InFlight {
				bytes += f.Bytes
			}
		}
	}
	if channels == 0 {
		return nil
	}
	return fmt.Errorf("%w: an unaligned checkpoint with data in flight (%d bytes in %d channels of %d subtasks, the first %s), which no copy can carry: "+
		"Flink hands it back to the channels on restore, by the job's partitioning, which the checkpoint does not record; "+
		"restore the checkpoint in Flink and take a savepoint (savepoints are aligned) or an aligned checkpoint, and copy that",
		ErrUnsupportedVersion, bytes, channels, subtasks, first)
}
