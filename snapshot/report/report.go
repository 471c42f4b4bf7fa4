// Package report computes what `stateutil inspect` shows: typed results
// with a stable JSON schema, independent of how they are printed.
package report

import (
	"context"
	"fmt"
	"time"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// SchemaVersion is the version of the JSON documents in this package. It
// changes only when a field is removed or changes meaning.
const SchemaVersion = 1

// Summary is the default inspect view.
type Summary struct {
	SchemaVersion int               `json:"schema_version"`
	Location      string            `json:"location"`
	Format        string            `json:"format"`
	JobID         string            `json:"job_id"`
	CheckpointID  int64             `json:"checkpoint_id"`
	Kind          snapshot.Kind     `json:"kind"`
	Created       time.Time         `json:"created"`
	Properties    map[string]string `json:"properties,omitempty"`
	Totals        Totals            `json:"totals"`
	Operators     []OperatorSummary `json:"operators"`
	// Unreadable is state the snapshot holds that cannot be read; the
	// figures leave it out.
	Unreadable []snapshot.UnreadablePart `json:"unreadable"`
	// InFlight is the data in flight of an unaligned checkpoint, one row
	// a subtask's channel; the figures leave it out.
	InFlight []InFlightRow `json:"in_flight"`
}

// InFlightRow is what an unaligned checkpoint holds for one channel of one
// subtask.
type InFlightRow struct {
	Operator string `json:"operator"`
	Subtask  int    `json:"subtask"`
	snapshot.InFlight
}

// Totals sums state over the whole snapshot.
type Totals struct {
	Operators        int   `json:"operators"`
	Subtasks         int   `json:"subtasks"`
	KeyedEntries     int64 `json:"keyed_entries"`
	KeyedBytes       int64 `json:"keyed_bytes"`
	OperatorElements int64 `json:"operator_elements"`
	OperatorBytes    int64 `json:"operator_bytes"`
	// InFlightChannels and InFlightBytes sum the in-flight data.
	InFlightChannels int   `json:"in_flight_channels"`
	InFlightBytes    int64 `json:"in_flight_bytes"`
}

// OperatorSummary is one operator's row.
type OperatorSummary struct {
	ID               string                   `json:"id"`
	UID              string                   `json:"uid"`
	Name             string                   `json:"name"`
	Parallelism      int                      `json:"parallelism"`
	MaxParallelism   int                      `json:"max_parallelism"`
	KeyedStates      []snapshot.KeyedState    `json:"keyed_states"`
	OperatorStates   []snapshot.OperatorState `json:"operator_states"`
	KeyedEntries     int64                    `json:"keyed_entries"`
	KeyedBytes       int64                    `json:"keyed_bytes"`
	OperatorElements int64                    `json:"operator_elements"`
	OperatorBytes    int64                    `json:"operator_bytes"`
	// UnreadableBytes is what its unreadable state takes, where known.
	UnreadableBytes int64            `json:"unreadable_bytes"`
	Unreadable      bool             `json:"unreadable"`
	Subtasks        []SubtaskSummary `json:"subtasks,omitempty"`
}

// SubtaskSummary is one subtask's row of `inspect --subtasks`.
type SubtaskSummary struct {
	Index            int            `json:"index"`
	KeyGroups        keygroup.Range `json:"key_groups"`
	KeyedEntries     int64          `json:"keyed_entries"`
	KeyedBytes       int64          `json:"keyed_bytes"`
	OperatorElements int64          `json:"operator_elements"`
	OperatorBytes    int64          `json:"operator_bytes"`
	Files            int            `json:"files"`
}

// Summarize builds the summary, scanning state only where the metadata
// lacks figures. withSubtasks adds per-subtask rows.
func Summarize(ctx context.Context, location string, r snapshot.Reader, withSubtasks bool) (*Summary, error) {
	r, unreadable := snapshot.WithoutUnreadable(r)
	s := r.Snapshot()
	out := &Summary{
		SchemaVersion: SchemaVersion, Location: location, Format: s.Format, JobID: s.JobID,
		CheckpointID: s.CheckpointID, Kind: s.Kind, Created: s.Created, Properties: s.Properties,
		Operators: []OperatorSummary{}, Unreadable: nonNil(unreadable), InFlight: []InFlightRow{},
	}
	for _, op := range s.Operators {
		row := OperatorSummary{
			ID: op.ID, UID: op.UID, Name: op.Name, Parallelism: op.Parallelism, MaxParallelism: op.MaxParallelism,
			KeyedStates: nonNil(op.KeyedStates), OperatorStates: nonNil(op.OperatorStates),
		}
		for _, sub := range op.Subtasks {
			keyed, err := snapshot.KeyedStats(ctx, r, op, sub)
			if err != nil {
				return nil, fmt.Errorf("operator %q subtask %d: %w", op.Label(), sub.Index, err)
			}
			row.KeyedEntries += keyed.Entries
			row.KeyedBytes += keyed.Bytes
			row.OperatorElements += sub.Operator.Entries
			row.OperatorBytes += sub.Operator.Bytes
			for _, f := range sub.InFlight {
				out.InFlight = append(out.InFlight, InFlightRow{Operator: op.Label(), Subtask: sub.Index, InFlight: f})
				out.Totals.InFlightChannels++
				out.Totals.InFlightBytes += f.Bytes
			}
			if withSubtasks {
				row.Subtasks = append(row.Subtasks, SubtaskSummary{
					Index: sub.Index, KeyGroups: sub.KeyGroups, KeyedEntries: keyed.Entries, KeyedBytes: keyed.Bytes,
					OperatorElements: sub.Operator.Entries, OperatorBytes: sub.Operator.Bytes, Files: len(sub.Files),
				})
			}
		}
		if withSubtasks && row.Subtasks == nil {
			row.Subtasks = []SubtaskSummary{}
		}
		for _, u := range unreadable {
			if u.Operator == op.Label() {
				row.Unreadable = true
				row.UnreadableBytes += u.Bytes
			}
		}
		out.Totals.Operators++
		out.Totals.Subtasks += len(op.Subtasks)
		out.Totals.KeyedEntries += row.KeyedEntries
		out.Totals.KeyedBytes += row.KeyedBytes
		out.Totals.OperatorElements += row.OperatorElements
		out.Totals.OperatorBytes += row.OperatorBytes
		out.Operators = append(out.Operators, row)
	}
	return out, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
