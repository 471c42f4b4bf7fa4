package snapshot

import (
	"context"
	"fmt"
	"time"

	"github.com/stateutil/stateutil/keygroup"
)

// Expiry says which TTL'd entries a copy leaves out: those expired at At.
type Expiry struct {
	At time.Time
	// TTL is the time to live of states, by name, whose snapshot records
	// none (a Flink snapshot stores only each value's last-access time).
	TTL map[string]time.Duration
}

// WithoutExpired is r without the keyed entries of TTL'd states that are
// expired at x.At: an entry whose state records its TTL carries its
// expiry (ExpiresAt), one whose state records none its last-access time,
// expired, as Flink decides, when last access + TTL <= At. Such a state
// needs its TTL in x.TTL, or WithoutExpired refuses it, naming it. The
// stats of operators with TTL'd states become unknown (a scan tells what
// is left).
func WithoutExpired(r Reader, x Expiry) (Reader, error) {
	at := x.At.UnixMilli()
	used := map[string]bool{}
	w := &withoutExpired{Reader: r, orig: map[*Operator]*Operator{}, cutoff: map[*Operator]map[string]cutoff{}}
	s := *r.Snapshot()
	w.snap = &s
	s.Operators = make([]*Operator, len(r.Snapshot().Operators))
	for i, op := range r.Snapshot().Operators {
		cut := map[string]cutoff{}
		for _, ks := range op.KeyedStates {
			if ks.TTL == nil {
				continue
			}
			ttl, given := x.TTL[ks.Name]
			switch {
			case ks.TTL.TTLMillis > 0 && given:
				return nil, expiryErrorf("operator %q keyed state %q records its TTL (%s): --ttl is for states whose snapshot records none",
					op.Label(), ks.Name, time.Duration(ks.TTL.TTLMillis)*time.Millisecond)
			case ks.TTL.TTLMillis > 0:
				cut[ks.Name] = cutoff{at: at} // ExpiresAt is the expiry
			case !given:
				return nil, expiryErrorf("operator %q keyed state %q has TTL, but the snapshot records only last-access times: give its time to live (--ttl %s=DURATION)",
					op.Label(), ks.Name, ks.Name)
			default:
				// last access + ttl <= at, without overflowing.
				cut[ks.Name] = cutoff{at: at - ttl.Milliseconds(), lastAccess: true}
				used[ks.Name] = true
			}
		}
		if len(cut) == 0 {
			s.Operators[i] = op
			continue
		}
		c := *op
		c.Subtasks = make([]*Subtask, len(op.Subtasks))
		for j, sub := range op.Subtasks {
			if sub == nil {
				continue
			}
			sc := *sub
			sc.Keyed, sc.KeyGroupStats = Stats{}, nil
			c.Subtasks[j] = &sc
		}
		w.orig[&c], w.cutoff[&c] = op, cut
		s.Operators[i] = &c
	}
	for name := range x.TTL {
		if !used[name] {
			return nil, expiryErrorf("--ttl %s: the snapshot has no TTL'd state %q without a recorded TTL", name, name)
		}
	}
	return w, nil
}

// ExpiryError is a request to drop expired entries that does not fit the
// snapshot (a usage error, not damage).
type ExpiryError struct{ Reason string }

func (e *ExpiryError) Error() string { return e.Reason }

func expiryErrorf(format string, args ...any) error {
	return &ExpiryError{Reason: fmt.Sprintf(format, args...)}
}

// cutoff: entries of a state whose ExpiresAt is at or before at are
// expired; ExpiresAt 0 is no expiry unless it is a last-access time.
type cutoff struct {
	at         int64
	lastAccess bool
}

func (c cutoff) expired(e *Entry) bool {
	return (c.lastAccess || e.ExpiresAt != 0) && e.ExpiresAt <= c.at
}

type withoutExpired struct {
	Reader
	snap   *Snapshot
	orig   map[*Operator]*Operator
	cutoff map[*Operator]map[string]cutoff
}

func (w *withoutExpired) Snapshot() *Snapshot { return w.snap }

// Unwrap is the reader whose expired entries w leaves out (Unwrapper).
func (w *withoutExpired) Unwrap() Reader { return w.Reader }

func (w *withoutExpired) original(op *Operator) *Operator {
	if o, ok := w.orig[op]; ok {
		return o
	}
	return op
}

func (w *withoutExpired) Entries(ctx context.Context, op *Operator, subtask int, kgs keygroup.Range) Entries {
	es := w.Reader.Entries(ctx, w.original(op), subtask, kgs)
	cut, ok := w.cutoff[op]
	if !ok {
		return es
	}
	return func(yield func(Entry, error) bool) {
		for e, err := range es {
			if c, ttl := cut[e.State]; err == nil && ttl && c.expired(&e) {
				continue
			}
			if !yield(e, err) {
				return
			}
		}
	}
}

func (w *withoutExpired) Elements(ctx context.Context, op *Operator, subtask int) Elements {
	return w.Reader.Elements(ctx, w.original(op), subtask)
}

func (w *withoutExpired) Raw(ctx context.Context, op *Operator, subtask int) (RawState, error) {
	return w.Reader.Raw(ctx, w.original(op), subtask)
}
