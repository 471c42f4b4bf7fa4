package snapshot

import (
	"context"
	"fmt"
	"strings"

	"github.com/stateutil/stateutil/keygroup"
)

// Scopes of Unreadable state.
const (
	ScopeKeyed    = "keyed"
	ScopeOperator = "operator"
	ScopeRaw      = "raw"
)

// Unreadable is state a reader found in a snapshot but cannot read: a
// changelog not materialised, bytes of a serializer it cannot walk, a
// damaged file. It is never empty state: every command that copies or
// compares refuses a snapshot that has any, unless told to drop it.
type Unreadable struct {
	// Scope is ScopeKeyed, ScopeOperator or ScopeRaw.
	Scope string `json:"scope" msgpack:"scope"`
	// State names the state; "" is every state of the scope.
	State  string `json:"state,omitempty" msgpack:"state,omitempty"`
	Reason string `json:"reason" msgpack:"reason"`
	// Damaged says the state's bytes are damaged (truncated, inconsistent),
	// not merely in a form the reader does not know: what decides between
	// "corrupt" and "unsupported" when a command refuses the snapshot.
	Damaged bool `json:"damaged,omitempty" msgpack:"damaged,omitempty"`
	// Bytes is what the state takes where it is stored, when known.
	Bytes int64 `json:"bytes,omitempty" msgpack:"bytes,omitempty"`
	// Serializer is set where the state cannot be read only because a
	// serializer stateutil does not implement wrote it (so that its values
	// cannot be told apart), or none is recorded: no damage, and verify
	// counts the state as not decoded. ValueClass is the class of the
	// values where recorded, Values how many the snapshot says there are
	// (0: not known).
	Serializer string `json:"serializer,omitempty" msgpack:"serializer,omitempty"`
	ValueClass string `json:"value_class,omitempty" msgpack:"value_class,omitempty"`
	Values     int64  `json:"values,omitempty" msgpack:"values,omitempty"`
}

// UnreadablePart locates Unreadable state in a snapshot.
type UnreadablePart struct {
	Operator string `json:"operator"`
	Subtask  int    `json:"subtask"`
	Unreadable
}

func (p UnreadablePart) String() string {
	return fmt.Sprintf("operator %q subtask %d, %s", p.Operator, p.Subtask, p.Unreadable)
}

func (u Unreadable) String() string {
	what := "all " + u.Scope + " state"
	if u.State != "" {
		what = u.Scope + " state " + fmt.Sprintf("%q", u.State)
	}
	size := ""
	if u.Bytes > 0 {
		size = fmt.Sprintf(" (%d bytes)", u.Bytes)
	}
	return fmt.Sprintf("%s%s cannot be read: %s", what, size, u.Reason)
}

// UnreadableParts lists the unreadable state of s, operator by operator.
func UnreadableParts(s *Snapshot) []UnreadablePart {
	var out []UnreadablePart
	for _, op := range s.Operators {
		for _, sub := range op.Subtasks {
			if sub == nil {
				continue
			}
			for _, u := range sub.Unreadable {
				out = append(out, UnreadablePart{Operator: op.Label(), Subtask: sub.Index, Unreadable: u})
			}
		}
	}
	return out
}

// CheckReadable fails when s has state that cannot be read, naming it:
// what copies and comparisons call before they start. The error wraps
// ErrCorrupt when some of it is damaged, else ErrUnsupportedVersion.
func CheckReadable(s *Snapshot) error {
	parts := UnreadableParts(s)
	if len(parts) == 0 {
		return nil
	}
	damaged := false
	for _, p := range parts {
		damaged = damaged || p.Damaged
	}
	var lines []string
	for _, p := range parts[:min(len(parts), 5)] {
		lines = append(lines, p.String())
	}
	more := ""
	if len(parts) > 5 {
		more = fmt.Sprintf("; and %d more", len(parts)-5)
	}
	return &UnreadableError{Damaged: damaged, Message: fmt.Sprintf("the snapshot has state stateutil cannot read, which would be missing from the result (--skip-unreadable drops it on purpose): %s%s",
		strings.Join(lines, "; "), more)}
}

// UnreadableError refuses unreadable state. errors.Is finds ErrCorrupt in
// it when some of that state is damaged, else ErrUnsupportedVersion; its
// message is the parts' own reasons alone, since those name the class.
type UnreadableError struct {
	Damaged bool
	Message string
}

func (e *UnreadableError) Error() string { return e.Message }

func (e *UnreadableError) Unwrap() error {
	if e.Damaged {
		return ErrCorrupt
	}
	return ErrUnsupportedVersion
}

// WithoutUnreadable is r with its unreadable state dropped: the snapshot
// it shows has none (those subtasks' figures are counted without it), and
// it streams nothing of it. It returns what it dropped.
func WithoutUnreadable(r Reader) (Reader, []UnreadablePart) {
	parts := UnreadableParts(r.Snapshot())
	if len(parts) == 0 {
		return r, nil
	}
	s := *r.Snapshot()
	w := &withoutUnreadable{Reader: r, snap: &s, orig: map[*Operator]*Operator{}, drop: map[dropKey]dropped{}}
	s.Operators = make([]*Operator, len(r.Snapshot().Operators))
	for i, op := range r.Snapshot().Operators {
		c := *op
		c.Subtasks = make([]*Subtask, len(op.Subtasks))
		for j, sub := range op.Subtasks {
			if sub == nil || len(sub.Unreadable) == 0 {
				c.Subtasks[j] = sub
				continue
			}
			sc := *sub
			sc.Unreadable = nil
			d := dropped{keyed: map[string]bool{}, operator: map[string]bool{}}
			for _, u := range sub.Unreadable {
				switch u.Scope {
				case ScopeKeyed:
					d.allKeyed = d.allKeyed || u.State == ""
					d.keyed[u.State] = true
				case ScopeOperator:
					d.allOperator = d.allOperator || u.State == ""
					d.operator[u.State] = true
				case ScopeRaw:
					d.raw = true
				}
			}
			if d.allKeyed {
				sc.Keyed, sc.KeyGroupStats = Stats{Known: true}, nil
			} else if len(d.keyed) > 0 {
				sc.Keyed, sc.KeyGroupStats = Stats{}, nil // only a scan tells what is left
			}
			if d.allOperator {
				sc.Operator, sc.OperatorElements = Stats{Known: true}, nil
			} else if len(d.operator) > 0 {
				sc.Operator, sc.OperatorElements = Stats{}, nil
			}
			if d.raw {
				sc.RawKeyedBytes, sc.RawOperatorBytes = 0, 0
			}
			w.drop[dropKey{&c, sub.Index}] = d
			c.Subtasks[j] = &sc
		}
		w.orig[&c] = op
		s.Operators[i] = &c
	}
	return w, parts
}

type dropKey struct {
	op      *Operator
	subtask int
}

type dropped struct {
	allKeyed, allOperator, raw bool
	keyed, operator            map[string]bool
}

type withoutUnreadable struct {
	Reader
	snap *Snapshot
	orig map[*Operator]*Operator
	drop map[dropKey]dropped
}

func (w *withoutUnreadable) Snapshot() *Snapshot { return w.snap }

// Unwrap is the reader whose unreadable state w leaves out (Unwrapper).
func (w *withoutUnreadable) Unwrap() Reader { return w.Reader }

func (w *withoutUnreadable) original(op *Operator) *Operator {
	if o, ok := w.orig[op]; ok {
		return o
	}
	return op
}

func (w *withoutUnreadable) Entries(ctx context.Context, op *Operator, subtask int, kgs keygroup.Range) Entries {
	d, ok := w.drop[dropKey{op, subtask}]
	if ok && d.allKeyed {
		return func(func(Entry, error) bool) {}
	}
	es := w.Reader.Entries(ctx, w.original(op), subtask, kgs)
	if !ok || len(d.keyed) == 0 {
		return es
	}
	return func(yield func(Entry, error) bool) {
		for e, err := range es {
			if err == nil && d.keyed[e.State] {
				continue
			}
			if !yield(e, err) {
				return
			}
		}
	}
}

func (w *withoutUnreadable) Elements(ctx context.Context, op *Operator, subtask int) Elements {
	d, ok := w.drop[dropKey{op, subtask}]
	if ok && d.allOperator {
		return func(func(Element, error) bool) {}
	}
	es := w.Reader.Elements(ctx, w.original(op), subtask)
	if !ok || len(d.operator) == 0 {
		return es
	}
	return func(yield func(Element, error) bool) {
		for el, err := range es {
			if err == nil && d.operator[el.State] {
				continue
			}
			if !yield(el, err) {
				return
			}
		}
	}
}

func (w *withoutUnreadable) Raw(ctx context.Context, op *Operator, subtask int) (RawState, error) {
	if d, ok := w.drop[dropKey{op, subtask}]; ok && d.raw {
		return RawState{}, nil
	}
	return w.Reader.Raw(ctx, w.original(op), subtask)
}
