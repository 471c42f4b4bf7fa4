package snapshot

import "context"

// StagedSubtask is one subtask a Writer wrote for another process's Writer
// of the same format, at the same location, to commit: a shard of a
// sharded rescale or convert writes subtasks (Stager) and the commit
// adopts them (Adopter) before it writes the metadata.
type StagedSubtask struct {
	// OperatorID and Index name the subtask; Operator is the operator's
	// label, for messages.
	OperatorID string `json:"operator_id"`
	Operator   string `json:"operator"`
	Index      int    `json:"index"`
	// Subtask is the subtask's figures as its Close recorded them.
	Subtask *Subtask `json:"subtask"`
	// Files are the files the subtask wrote: storage paths, sizes and
	// CRC32C, for the commit to check before it adopts them.
	Files []FileRef `json:"files"`
	// Layout is what the format's Commit needs beyond Subtask (where state
	// lies in the files, state kept inline), in the format's encoding.
	Layout []byte `json:"layout,omitempty"`
}

// Stager is implemented by a Writer created with WriteOptions.Staging:
// its subtasks are committed by another Writer (an Adopter of the same
// format at the same location), not by its own Commit.
type Stager interface {
	// Staged ends the writer, as Commit would, and returns what every
	// closed subtask wrote. The files stay; Abort after Staged removes
	// nothing.
	Staged(ctx context.Context) ([]StagedSubtask, error)
}

// Adopter is implemented by a Writer that can commit subtasks staged by
// Stagers of its format at its location.
type Adopter interface {
	// Adopt records s as subtask s.Index of op (op as it will appear in
	// the committed snapshot, as for Subtask), as if written here. The
	// caller has checked that s's files are there, whole. Abort leaves
	// adopted files alone: they belong to the staging area.
	Adopt(ctx context.Context, op *Operator, s StagedSubtask) error
}
