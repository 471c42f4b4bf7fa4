package lookup

import (
	"context"

	"github.com/stateutil/stateutil/snapshot"
)

// Piece is a run of key groups of one subtask that Dump reads as one:
// what a caller reading pieces in parallel hands out.
type Piece struct{ j job }

// Operator is the operator the piece reads.
func (p Piece) Operator() *snapshot.Operator { return p.j.op }

// Subtask is the subtask the piece reads.
func (p Piece) Subtask() int { return p.j.subtask }

// Pieces lists what Dump reads for f, in Dump's order.
func Pieces(s *snapshot.Snapshot, f Filter) ([]Piece, error) {
	jobs, err := plan(s, &f)
	if err != nil {
		return nil, err
	}
	out := make([]Piece, len(jobs))
	for i, j := range jobs {
		out[i] = Piece{j}
	}
	return out, nil
}

// Grouper reads pieces as Dump does, holding one key group at a time (or
// spilling it), and hands out each record's entries undecoded.
type Grouper struct{ g keyGroup }

// Groups calls fn with the entries of each record of p (a key's of one
// state, a timer's of one time) in Dump's order. The entries are valid
// until fn returns; returning ErrStop from fn ends Groups without error.
func (gr *Grouper) Groups(ctx context.Context, r snapshot.Reader, p Piece, fn func(st *snapshot.KeyedState, entries []snapshot.Entry) error) error {
	return ignoreStop(p.j.groups(ctx, r, &gr.g, fn))
}
