// Package snaptest builds random snapshots and reads whole snapshots into
// memory, for property tests of formats, conversion and rescaling.
package snaptest

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// Random is a random topology: 1 to 3 operators with random keyed states
// (every kind, string, int32 and int64 keys, some with TTL), operator
// states in every mode, parallelism 1 to 6 and max parallelism 128 or 4096.
func Random(rng *rand.Rand) *snapshot.Snapshot {
	s := &snapshot.Snapshot{
		JobID: fmt.Sprintf("%032x", rng.Uint64()), CheckpointID: rng.Int64N(100), Kind: snapshot.Savepoint,
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	maxP := []int{128, 4096}[rng.IntN(2)]
	kinds := []snapshot.StateKind{snapshot.Value, snapshot.List, snapshot.Map, snapshot.Reducing, snapshot.Aggregating}
	keyTypes := []string{snapshot.TypeString, snapshot.TypeInt32, snapshot.TypeInt64}
	modes := []snapshot.Mode{snapshot.Split, snapshot.Union, snapshot.Broadcast}
	for i := range 1 + rng.IntN(3) {
		op := &snapshot.Operator{
			ID: fmt.Sprintf("%032x", rng.Uint64()), UID: fmt.Sprintf("op-%d", i), Name: fmt.Sprintf("Operator %d", i),
			Parallelism: 1 + rng.IntN(6), MaxParallelism: maxP,
		}
		kt := snapshot.Type{Name: keyTypes[rng.IntN(len(keyTypes))]}
		for k := range rng.IntN(4) {
			st := snapshot.KeyedState{Name: fmt.Sprintf("keyed-%d", k), Kind: kinds[rng.IntN(len(kinds))], KeyType: kt,
				NamespaceType: snapshot.Type{Name: snapshot.TypeVoid}, ValueType: snapshot.Type{Name: snapshot.TypeBytes}}
			if st.Kind == snapshot.Map {
				st.UserKeyType = snapshot.Type{Name: snapshot.TypeString}
			}
			if rng.IntN(3) == 0 {
				st.TTL = &snapshot.TTL{TTLMillis: 60_000, Update: snapshot.OnCreateAndWrite, Visibility: snapshot.NeverReturnExpired}
			}
			op.KeyedStates = append(op.KeyedStates, st)
		}
		for k := range rng.IntN(4) {
			op.OperatorStates = append(op.OperatorStates, snapshot.OperatorState{Name: fmt.Sprintf("list-%d", k), Mode: modes[rng.IntN(len(modes))],
				ElementType: snapshot.Type{Name: snapshot.TypeBytes}})
		}
		s.Operators = append(s.Operators, op)
	}
	return s
}

// Key encodes key number k as type t and returns its key group.
func Key(t string, k int, maxP int) ([]byte, int) {
	var b []byte
	switch t {
	case snapshot.TypeInt32:
		b = binary.BigEndian.AppendUint32(nil, uint32(int32(k*7919-1000)))
	case snapshot.TypeInt64:
		b = snapshot.EncodeInt64(int64(k)<<33 - int64(k))
	default:
		b = []byte(fmt.Sprintf("key-%d-é", k))
	}
	kg, err := snapshot.NewCodecs().KeyGroupOf(snapshot.Type{Name: t}, b, maxP)
	if err != nil {
		panic(err)
	}
	return b, kg
}

// Write fills s's topology with keys random entries per keyed operator and
// a few elements per operator state and subtask, and commits it to w.
func Write(ctx context.Context, w snapshot.Writer, s *snapshot.Snapshot, keys int, rng *rand.Rand) error {
	for _, op := range s.Operators {
		all := entries(op, keys, rng)
		for idx := range op.Parallelism {
			kgs := keygroup.RangeOf(op.MaxParallelism, op.Parallelism, idx)
			sw, err := w.Subtask(ctx, op, idx, kgs)
			if err != nil {
				return err
			}
			for _, e := range all {
				if kgs.Contains(e.KeyGroup) {
					if err := sw.Entry(&e); err != nil {
						return err
					}
				}
			}
			for _, st := range op.OperatorStates {
				for n := range rng.IntN(4) {
					if err := sw.Element(st.Name, fmt.Appendf(nil, "%s/%d/%d", st.Name, idx, n)); err != nil {
						return err
					}
				}
			}
			if err := sw.Close(); err != nil {
				return err
			}
		}
	}
	return w.Commit(ctx, s)
}

func entries(op *snapshot.Operator, keys int, rng *rand.Rand) []snapshot.Entry {
	var out []snapshot.Entry
	for k := range keys {
		for _, st := range op.KeyedStates {
			if rng.IntN(4) == 0 {
				continue
			}
			key, kg := Key(st.KeyType.Name, k, op.MaxParallelism)
			e := snapshot.Entry{KeyGroup: kg, State: st.Name, Key: key, Namespace: []byte{}}
			n := 1
			if st.Kind == snapshot.List || st.Kind == snapshot.Map {
				n = 1 + rng.IntN(3)
			}
			for i := range n {
				if st.Kind == snapshot.Map {
					e.UserKey = fmt.Appendf(nil, "uk-%d", i)
				}
				e.Value = fmt.Appendf(nil, "v-%d-%d", k, rng.IntN(1000))
				if st.TTL != nil {
					e.ExpiresAt = 1_767_000_000_000 + rng.Int64N(1_000_000)
				}
				out = append(out, e)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b snapshot.Entry) int { return cmp.Compare(a.KeyGroup, b.KeyGroup) })
	return out
}
