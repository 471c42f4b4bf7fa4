// Package migrate is the one copy pipeline: every command that writes a
// snapshot from another (convert, rescale, operator remove and rename)
// opens SRC, plans, checks capacity, claims and creates DST, streams
// state, commits or aborts, and optionally verifies, here.
//
// A Plan is data: what each new subtask of each operator holds and where
// it comes from. Execute writes a plan's subtasks and Commit its metadata,
// as separate steps, so that a plan's subtasks can be written by several
// processes before one commits.
package migrate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
)

// ErrConflict reports an edit that would leave two operators with one uid.
var ErrConflict = errors.New("conflicting operator")

// Edit changes one operator of the copy.
type Edit struct {
	// Operator names the operator by uid, id or name.
	Operator string
	// Remove leaves the operator and all its state out.
	Remove bool
	// UID, when set, is the operator's new uid (its id is kept; the flink
	// writer derives a new one from the uid, as Flink does).
	UID string
	// ID, when set, is the operator's new id (32 hex digits): Flink's
	// setUidHash.
	ID string
}

// Plan is what a copy writes: per source operator, its new parallelism
// and where each new subtask's state comes from (the embedded
// redistribute plan), and the metadata to commit.
type Plan struct {
	*redistribute.Plan
	// Format is the format written.
	Format string `json:"format"`
	// Removed lists the operators left out, by label.
	Removed []string `json:"removed"`
	// Renamed maps old uids (ids of operators without one) to new uids.
	Renamed map[string]string `json:"renamed,omitempty"`
	// InFlight is the source's data in flight the copy carries, subtask by
	// subtask (inFlightCopy); nil when it carries none.
	InFlight *InFlight `json:"in_flight,omitempty"`
	// out is the metadata to commit, without subtasks: one operator per
	// source operator, nil where removed.
	out      *snapshot.Snapshot
	outputOf []*snapshot.Operator
}

// output is the operator source operator i becomes, nil when removed.
func (p *Plan) output(i int) *snapshot.Operator { return p.outputOf[i] }

// committed is the metadata to commit: a fresh copy, since writers fill
// in subtasks and format.
func (p *Plan) committed() *snapshot.Snapshot {
	s := *p.out
	s.Operators = nil
	for _, op := range p.outputOf {
		if op != nil {
			c := *op
			s.Operators = append(s.Operators, &c)
		}
	}
	return &s
}

// NewPlan plans the copy of r's snapshot with the given changes into
// format: the redistribution, then the edits. It reads state only where
// the format records no figures, or where max parallelism changes.
func NewPlan(ctx context.Context, r snapshot.Reader, format *snapshot.Format, change redistribute.Request, edits []Edit) (*Plan, error) {
	rp, err := redistribute.NewPlan(ctx, r, change)
	if err != nil {
		return nil, err
	}
	return planFrom(r.Snapshot(), rp, format, edits)
}

// planFrom is NewPlan with the redistribution given: a shard's plan, read
// from the plan file rather than computed again.
func planFrom(s *snapshot.Snapshot, rp *redistribute.Plan, format *snapshot.Format, edits []Edit) (*Plan, error) {
	p := &Plan{Plan: rp, Format: format.Name, Removed: []string{}, out: Rewritten(s)}
	p.outputOf = make([]*snapshot.Operator, len(s.Operators))
	for i, op := range p.out.Operators {
		op.Parallelism, op.MaxParallelism = rp.Operators[i].New.Parallelism, rp.Operators[i].New.MaxParallelism
		p.outputOf[i] = op
	}
	for _, e := range edits {
		if err := p.apply(s, e); err != nil {
			return nil, err
		}
	}
	if err := p.checkCapacity(format); err != nil {
		return nil, err
	}
	return p, nil
}

// apply makes one edit.
func (p *Plan) apply(s *snapshot.Snapshot, e Edit) error {
	target, ok := s.Operator(e.Operator)
	if !ok {
		return fmt.Errorf("%w: no operator %q in the snapshot (operators: %s)", snapshot.ErrNotFound, e.Operator, labels(s))
	}
	i := indexOf(s, target)
	if p.outputOf[i] == nil {
		return fmt.Errorf("%w: operator %q is removed", ErrConflict, e.Operator)
	}
	switch {
	case e.Remove:
		p.Removed = append(p.Removed, target.Label())
		p.outputOf[i] = nil
	case e.ID != "":
		for j, other := range p.outputOf {
			if j != i && other != nil && other.ID == e.ID {
				return fmt.Errorf("%w: operator %q already has id %q", ErrConflict, other.Label(), e.ID)
			}
		}
		p.outputOf[i].ID = e.ID
	case e.UID != "":
		for j, other := range p.outputOf {
			if j != i && other != nil && (other.UID == e.UID || other.ID == e.UID || (other.UID == "" && other.Name == e.UID)) {
				return fmt.Errorf("%w: operator %q already has uid, id or name %q", ErrConflict, other.Label(), e.UID)
			}
		}
		if p.Renamed == nil {
			p.Renamed = map[string]string{}
		}
		p.Renamed[cmp.Or(target.UID, target.ID)] = e.UID
		p.outputOf[i].UID = e.UID
	default:
		return fmt.Errorf("%w: an edit of %q that changes nothing", ErrConflict, e.Operator)
	}
	return nil
}

func labels(s *snapshot.Snapshot) string {
	var out []string
	for _, op := range s.Operators {
		out = append(out, op.Label())
	}
	return strings.Join(out, ", ")
}

func indexOf(s *snapshot.Snapshot, op *snapshot.Operator) int {
	for i, o := range s.Operators {
		if o == op {
			return i
		}
	}
	return -1
}

// checkCapacity refuses, before anything is written, a new subtask that
// holds more state than format accepts.
func (p *Plan) checkCapacity(format *snapshot.Format) error {
	capBytes := format.StateSizeCap
	if capBytes <= 0 {
		return nil
	}
	for i, op := range p.Operators {
		if p.outputOf[i] == nil {
			continue
		}
		for _, sub := range op.Subtasks {
			if sub.Bytes() > capBytes {
				return fmt.Errorf("%w: operator %q new subtask %d would hold %d bytes of state, more than the %d bytes per subtask format %q allows; choose another format or raise the cap with --max-state-size",
					snapshot.ErrTooLarge, op.Label(), sub.Index, sub.Bytes(), capBytes, format.Name)
			}
		}
	}
	return nil
}

// checkWrite has format refuse, before anything is written, what it
// cannot write of the plan as opts ask (Format.CheckWrite).
func (p *Plan) checkWrite(format *snapshot.Format, opts snapshot.WriteOptions) error {
	if format.CheckWrite == nil {
		return nil
	}
	return format.CheckWrite(p.committed(), opts)
}

// Totals are a plan's figures: what the copy holds.
type Totals struct {
	Operators int   `json:"operators"`
	Subtasks  int   `json:"subtasks"`
	Entries   int64 `json:"keyed_entries"`
	Elements  int64 `json:"operator_elements"`
	Bytes     int64 `json:"bytes"`
	// InFlightChannels and InFlightBytes are the data in flight carried.
	InFlightChannels int   `json:"in_flight_channels,omitempty"`
	InFlightBytes    int64 `json:"in_flight_bytes,omitempty"`
}

// Totals sums what the copy will hold.
func (p *Plan) Totals() Totals {
	var t Totals
	for i, op := range p.Operators {
		if p.outputOf[i] == nil {
			continue
		}
		t.Operators++
		for _, sub := range op.Subtasks {
			t.Subtasks++
			t.Entries += sub.KeyedEntries
			t.Elements += sub.OperatorElements
			t.Bytes += sub.Bytes()
		}
	}
	if p.InFlight != nil {
		t.InFlightChannels, t.InFlightBytes = p.InFlight.Channels, p.InFlight.Bytes
	}
	return t
}

// Rewritten is a copy of s's metadata to write a new snapshot from: the
// same job, operators and descriptors, without subtasks (a Writer fills
// them in), without the source's format and without what the reader
// recorded about where s was found.
func Rewritten(s *snapshot.Snapshot) *snapshot.Snapshot {
	out := *s
	out.Format = ""
	out.Properties = maps.Clone(s.Properties)
	delete(out.Properties, snapshot.PropJobCheckpoints)
	out.Operators = make([]*snapshot.Operator, len(s.Operators))
	for i, op := range s.Operators {
		c := *op
		c.Subtasks = nil
		out.Operators[i] = &c
	}
	return &out
}
