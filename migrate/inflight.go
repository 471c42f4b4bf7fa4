package migrate

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
)

// inFlightCopy is what decides whether a copy carries the data in flight
// of an unaligned checkpoint (snapshot.Subtask.InFlight): only one that
// keeps the job's shape (every operator's parallelism and max
// parallelism, whatever the request says), to the format it was read
// from, whose writer carries it (snapshot.Format.CarriesInFlight). Flink
// restores each subtask's channel state to the subtask of the same index,
// channel by channel, only while the parallelism stays: else it
// redistributes it at restore, by comparing each operator's parallelism
// in the checkpoint with the job's and filtering records by key group in
// the receiving subtasks, with the job's key selectors and its topology,
// neither of which a checkpoint records. Moving only the operators that
// hold no records does not do: records in an operator's output buffers are
// partitioned for its consumers' parallelism.
type inFlightCopy struct {
	format *snapshot.Format // written
	from   string           // the source's format
	opts   snapshot.WriteOptions
	change redistribute.Request
	edits  []Edit
	// edited are the operators whose state the state edits change;
	// dropped the unreadable state left out.
	edited  []*snapshot.Operator
	dropped []snapshot.UnreadablePart
}

// InFlight is the data in flight a copy carries: its channels, and the
// bytes of records in them.
type InFlight struct {
	Channels int   `json:"channels"`
	Bytes    int64 `json:"bytes"`
}

// carry is the data in flight of s, the source as it is copied, that the
// copy carries: nil when it carries none. A copy that cannot carry it is
// refused if the channels hold records (snapshot.CheckNoInFlight, saying
// why); channels whose buffers are all empty lose nothing, and are left
// out.
func (c inFlightCopy) carry(s *snapshot.Snapshot) (*InFlight, error) {
	if !snapshot.HasInFlight(s) {
		return nil, nil
	}
	if why := c.whyNot(s); why != "" {
		return nil, snapshot.CheckNoInFlight(s, why)
	}
	carried := &InFlight{}
	for _, op := range s.Operators {
		t := snapshot.InFlightOf(op)
		carried.Channels, carried.Bytes = carried.Channels+t.Channels, carried.Bytes+t.Bytes
	}
	return carried, nil
}

// whyNot is why the copy cannot carry the data in flight of s, "" if it
// can: a clause that follows "which".
func (c inFlightCopy) whyNot(s *snapshot.Snapshot) string {
	if c.format.CarriesInFlight == nil || c.format.Name != c.from {
		return fmt.Sprintf("only a copy to the %s format carries (format %q holds none)", cmp.Or(c.from, "source's"), c.format.Name)
	}
	if why := c.format.CarriesInFlight(s, c.opts); why != "" {
		return why
	}
	if op := c.moved(s); op != nil {
		return fmt.Sprintf("a copy that changes the parallelism or max parallelism of operator %q cannot carry: Flink redistributes data in flight on restore, "+
			"by comparing the checkpoint's parallelism of each operator with the job's and filtering records by key group in the receiving subtasks with the job's key selector, "+
			"and records in an operator's output buffers are partitioned for the parallelism of the operators that consume them; the checkpoint records neither the key selectors "+
			"nor which operators consume which, so no rewritten snapshot can move them (convert --to flink, or a rescale that keeps every operator's parallelism, carries it)", op.Label())
	}
	if len(c.edits) > 0 {
		return fmt.Sprintf("a copy that removes or renames operators cannot carry (it edits operator %q): the channels are those of the job's operators as they are", c.edits[0].Operator)
	}
	holds := func(op *snapshot.Operator) bool { return op != nil && snapshot.InFlightOf(op).Holds() }
	if i := slices.IndexFunc(c.edited, holds); i >= 0 {
		return fmt.Sprintf("a copy carries only to operators whose state it leaves as it is: the edits change operator %q, whose channels hold records in flight", c.edited[i].Label())
	}
	for _, p := range c.dropped {
		if op, _ := s.Operator(p.Operator); holds(op) {
			return fmt.Sprintf("a copy carries only to operators whose state it leaves as it is: --skip-unreadable leaves out state of operator %q (subtask %d), whose channels hold records in flight", p.Operator, p.Subtask)
		}
	}
	return ""
}

// moved is the first operator of s whose parallelism or max parallelism
// the copy changes, nil if none (or if the request is one the plan
// refuses).
func (c inFlightCopy) moved(s *snapshot.Snapshot) *snapshot.Operator {
	targets, err := redistribute.Targets(s, c.change)
	if err != nil {
		return nil
	}
	for i, op := range s.Operators {
		if targets[i] != (redistribute.Target{Parallelism: op.Parallelism, MaxParallelism: op.MaxParallelism}) {
			return op
		}
	}
	return nil
}

// inFlightCarrier is the writer w that carries the data in flight the plan
// says it carries, nil when it carries none.
func inFlightCarrier(w snapshot.Writer, plan *Plan) (snapshot.InFlightCarrier, error) {
	if plan.InFlight == nil {
		return nil, nil
	}
	c, ok := unwrapWriter(w).(snapshot.InFlightCarrier)
	if !ok {
		return nil, fmt.Errorf("the plan carries data in flight, which the %s writer cannot", plan.Format)
	}
	return c, nil
}

// carryInFlight is what a new subtask j of op gets of its data in flight
// from c (nil when c is): op's subtask j's, if it lists channels.
func carryInFlight(ctx context.Context, c snapshot.InFlightCarrier, r snapshot.Reader, op *snapshot.Operator, j int) func(snapshot.SubtaskWriter) error {
	if c == nil || !slices.ContainsFunc(op.Subtasks, func(sub *snapshot.Subtask) bool { return sub != nil && sub.Index == j && len(sub.InFlight) > 0 }) {
		return nil
	}
	return func(sw snapshot.SubtaskWriter) error { return c.CarryInFlight(ctx, r, op, sw) }
}

// inFlightDiffers lists the channels whose data in flight the copy d of s
// does not hold as s does, operator by operator (by id), subtask by
// subtask: their buffers and bytes, wherever they are.
func inFlightDiffers(s, d *snapshot.Snapshot) []error {
	var errs []error
	for _, op := range s.Operators {
		i := slices.IndexFunc(d.Operators, func(o *snapshot.Operator) bool { return o.ID == op.ID })
		if i < 0 {
			continue // verify names a missing operator
		}
		for _, sub := range op.Subtasks {
			if sub == nil {
				continue
			}
			var got []snapshot.InFlight
			if j := slices.IndexFunc(d.Operators[i].Subtasks, func(c *snapshot.Subtask) bool { return c != nil && c.Index == sub.Index }); j >= 0 {
				got = d.Operators[i].Subtasks[j].InFlight
			}
			if !slices.EqualFunc(sub.InFlight, got, sameChannel) {
				errs = append(errs, fmt.Errorf("operator %q subtask %d: data in flight %s, the copy %s", op.Label(), sub.Index, channels(sub.InFlight), channels(got)))
			}
		}
	}
	return errs
}

func sameChannel(a, b snapshot.InFlight) bool {
	return a.Direction == b.Direction && a.Gate == b.Gate && a.Channel == b.Channel && a.Buffers == b.Buffers && a.Bytes == b.Bytes
}

// channels says what a subtask's channels hold.
func channels(fs []snapshot.InFlight) string {
	if len(fs) == 0 {
		return "none"
	}
	out := ""
	for i, f := range fs {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s (%d, %d): %d buffers, %d bytes", f.Direction, f.Gate, f.Channel, f.Buffers, f.Bytes)
	}
	return out
}
