// Package generate builds deterministic example snapshots: several
// operators, every keyed state kind, TTL, and operator state in all three
// modes. Tests, golden files, benchmarks and the demo are built from it.
package generate

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// Config shapes a generated snapshot.
type Config struct {
	Seed           uint64
	Keys           int // distinct keys per keyed operator
	Parallelism    int // of the keyed operators
	MaxParallelism int
	// ValueBytes pads values with random bytes to grow the snapshot
	// (benchmarks); random, so that compression cannot shrink it. 0 = none.
	ValueBytes int
	// Created is the snapshot's creation time (fixed for reproducibility).
	Created time.Time
}

// Default is the configuration of the checked-in test fixtures.
func Default() Config {
	return Config{Seed: 1, Keys: 40, Parallelism: 3, MaxParallelism: 128, Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// Partitions is the number of source partitions, as in the seed example of
// a source reading five Kafka partitions.
const Partitions = 5

// Offset is one source partition's position, the element of the source's
// operator state.
type Offset struct {
	Partition int   `msgpack:"partition" json:"partition"`
	Offset    int64 `msgpack:"offset" json:"offset"`
}

// Watermark is the element of the source's union state.
type Watermark struct {
	Subtask   int   `msgpack:"subtask" json:"subtask"`
	Watermark int64 `msgpack:"watermark" json:"watermark"`
}

// Rule is the element of the broadcast state.
type Rule struct {
	Rule      string `msgpack:"rule" json:"rule"`
	Threshold int    `msgpack:"threshold" json:"threshold"`
}

// Mean is the accumulator of the aggregating state.
type Mean struct {
	Sum   int64 `msgpack:"sum" json:"sum"`
	Count int64 `msgpack:"count" json:"count"`
}

var (
	tString  = snapshot.Type{Name: snapshot.TypeString}
	tInt64   = snapshot.Type{Name: snapshot.TypeInt64}
	tVoid    = snapshot.Type{Name: snapshot.TypeVoid}
	tMsgpack = snapshot.Type{Name: snapshot.TypeMsgpack}
	tBytes   = snapshot.Type{Name: snapshot.TypeBytes}
)

// Topology is the snapshot's metadata before any state is written.
func Topology(c Config) *snapshot.Snapshot {
	// A padded number is no longer an int64: its bytes are the type.
	value := tInt64
	if c.ValueBytes > 0 {
		value = tBytes
	}
	ttl := func(d time.Duration, u snapshot.UpdateType, v snapshot.Visibility) *snapshot.TTL {
		return &snapshot.TTL{TTLMillis: d.Milliseconds(), Update: u, Visibility: v}
	}
	return &snapshot.Snapshot{
		JobID: fmt.Sprintf("%032x", c.Seed), CheckpointID: 7, Kind: snapshot.Checkpoint, Created: c.Created,
		Operators: []*snapshot.Operator{
			{
				ID: "0a448493b4782967b150582570326227", UID: "kafka-source", Name: "Source: events",
				Parallelism: 2, MaxParallelism: c.MaxParallelism,
				OperatorStates: []snapshot.OperatorState{
					{Name: "partition-offsets", Mode: snapshot.Split, ElementType: tMsgpack},
					{Name: "topic-watermarks", Mode: snapshot.Union, ElementType: tMsgpack},
				},
			},
			{
				ID: "2e588ce1c86a9d46e2e85186773ce4fd", UID: "word-counter", Name: "Keyed: count words",
				Parallelism: c.Parallelism, MaxParallelism: c.MaxParallelism,
				KeyedStates: []snapshot.KeyedState{
					{Name: "count", Kind: snapshot.Value, KeyType: tString, NamespaceType: tVoid, ValueType: value},
					{Name: "recent", Kind: snapshot.List, KeyType: tString, NamespaceType: tVoid, ValueType: value,
						TTL: ttl(time.Hour, snapshot.OnCreateAndWrite, snapshot.NeverReturnExpired)},
					{Name: "by-source", Kind: snapshot.Map, KeyType: tString, NamespaceType: tVoid, UserKeyType: tString, ValueType: value,
						TTL: ttl(24*time.Hour, snapshot.OnReadAndWrite, snapshot.ReturnExpiredIfNotCleanedUp)},
					{Name: "total-length", Kind: snapshot.Reducing, KeyType: tString, NamespaceType: tVoid, ValueType: value},
					{Name: "mean-length", Kind: snapshot.Aggregating, KeyType: tString, NamespaceType: tVoid, ValueType: tMsgpack},
				},
			},
			{
				ID: "6cdc5bb954874d922eaee11a8e7ca5be", UID: "rules", Name: "Broadcast: rules per user",
				Parallelism: 2, MaxParallelism: c.MaxParallelism,
				KeyedStates: []snapshot.KeyedState{
					{Name: "user-total", Kind: snapshot.Value, KeyType: tInt64, NamespaceType: tVoid, ValueType: value},
				},
				OperatorStates: []snapshot.OperatorState{
					{Name: "rules", Mode: snapshot.Broadcast, ElementType: tMsgpack},
				},
			},
			{ID: "90bea66de1c231edf33913ecd54406c1", UID: "sink", Name: "Sink: print", Parallelism: 1, MaxParallelism: c.MaxParallelism},
		},
	}
}

// Write generates the snapshot into w and commits it.
func Write(ctx context.Context, w snapshot.Writer, c Config) (*snapshot.Snapshot, error) {
	if err := keygroup.Check(c.Parallelism, c.MaxParallelism); err != nil {
		return nil, err
	}
	s := Topology(c)
	pcg := rand.NewPCG(c.Seed, c.Seed^0x9e3779b97f4a7c15)
	rng := rand.New(pcg)
	for _, op := range s.Operators {
		for idx := range op.Parallelism {
			kgs := keygroup.RangeOf(op.MaxParallelism, op.Parallelism, idx)
			sw, err := w.Subtask(ctx, op, idx, kgs)
			if err != nil {
				return nil, err
			}
			if err := writeSubtask(sw, op, idx, kgs, c, pcg, rng); err != nil {
				return nil, err
			}
			if err := sw.Close(); err != nil {
				return nil, err
			}
		}
	}
	if err := w.Commit(ctx, s); err != nil {
		return nil, err
	}
	return s, nil
}

func writeSubtask(sw snapshot.SubtaskWriter, op *snapshot.Operator, idx int, kgs keygroup.Range, c Config, pcg *rand.PCG, rng *rand.Rand) error {
	if err := writeKeyed(sw, op, kgs, c, pcg, rng); err != nil {
		return err
	}
	for _, st := range op.OperatorStates {
		for _, v := range operatorElements(op, st, idx, rng) {
			b, err := msgpack.Marshal(v)
			if err != nil {
				return err
			}
			if err := sw.Element(st.Name, b); err != nil {
				return err
			}
		}
	}
	return nil
}

func operatorElements(op *snapshot.Operator, st snapshot.OperatorState, idx int, rng *rand.Rand) []any {
	var out []any
	switch st.Name {
	case "partition-offsets":
		for p := idx; p < Partitions; p += op.Parallelism {
			out = append(out, Offset{Partition: p, Offset: 1000*int64(p) + rng.Int64N(1000)})
		}
	case "topic-watermarks":
		out = append(out, Watermark{Subtask: idx, Watermark: 1_700_000_000_000 + int64(idx)})
	case "rules":
		for r := range 3 {
			out = append(out, Rule{Rule: fmt.Sprintf("rule-%d", r), Threshold: 10 * (r + 1)})
		}
	}
	return out
}

// writeKeyed writes a subtask's entries for the keys that fall in kgs,
// by key group as writers require, each key group's keys in key order.
// The random values are drawn key after key, as if the subtask's keys
// were generated in order, so that a snapshot does not depend on how
// this is done; holding every entry to sort them would take memory in
// proportion to the state, so a first pass only keeps, per key of the
// subtask, its key group and the random source's state where its values
// begin, and a second writes key group by key group from those.
func writeKeyed(sw snapshot.SubtaskWriter, op *snapshot.Operator, kgs keygroup.Range, c Config, pcg *rand.PCG, rng *rand.Rand) error {
	if len(op.KeyedStates) == 0 {
		return nil
	}
	type start struct {
		key   int
		kg    int
		state []byte
	}
	var starts []start
	discard := func(*snapshot.Entry) error { return nil }
	for k := range c.Keys {
		key, kg := keyOf(op, k, c.MaxParallelism)
		if !kgs.Contains(kg) {
			continue
		}
		state, err := pcg.MarshalBinary()
		if err != nil {
			return err
		}
		starts = append(starts, start{key: k, kg: kg, state: state})
		if err := keyEntries(op, key, kg, c, rng, discard); err != nil {
			return err
		}
	}
	end, err := pcg.MarshalBinary()
	if err != nil {
		return err
	}
	slices.SortStableFunc(starts, func(a, b start) int { return cmp.Compare(a.kg, b.kg) })
	emit := func(e *snapshot.Entry) error { return sw.Entry(e) }
	for _, st := range starts {
		if err := pcg.UnmarshalBinary(st.state); err != nil {
			return err
		}
		key, kg := keyOf(op, st.key, c.MaxParallelism)
		if err := keyEntries(op, key, kg, c, rng, emit); err != nil {
			return err
		}
	}
	return pcg.UnmarshalBinary(end)
}

// keyOf is the k-th key of op's keyed states and its key group.
func keyOf(op *snapshot.Operator, k, maxParallelism int) ([]byte, int) {
	if op.KeyedStates[0].KeyType.Name == snapshot.TypeInt64 {
		return snapshot.EncodeInt64(int64(k)), keygroup.OfHash(keygroup.HashInt64(int64(k)), maxParallelism)
	}
	word := fmt.Sprintf("word-%d", k)
	return []byte(word), keygroup.OfHash(keygroup.HashString(word), maxParallelism)
}

// keyEntries emits one key's entries in every keyed state of op.
func keyEntries(op *snapshot.Operator, key []byte, kg int, c Config, rng *rand.Rand, emit func(*snapshot.Entry) error) error {
	base := c.Created.UnixMilli()
	for _, st := range op.KeyedStates {
		e := snapshot.Entry{KeyGroup: kg, State: st.Name, Key: key, Namespace: []byte{}}
		expiry := func() int64 {
			if st.TTL == nil {
				return 0
			}
			return base + st.TTL.TTLMillis - rng.Int64N(60_000)
		}
		value := func(v int64) []byte {
			b := make([]byte, 8+c.ValueBytes)
			copy(b, snapshot.EncodeInt64(v))
			for i := 8; i < len(b); i += 8 {
				var w [8]byte
				binary.LittleEndian.PutUint64(w[:], rng.Uint64())
				copy(b[i:], w[:])
			}
			return b
		}
		var err error
		switch st.Kind {
		case snapshot.List:
			for range 1 + rng.IntN(3) {
				e.Value, e.ExpiresAt = value(rng.Int64N(100)), expiry()
				if err = emit(&e); err != nil {
					return err
				}
			}
		case snapshot.Map:
			for _, src := range []string{"web", "mobile"}[:1+rng.IntN(2)] {
				e.UserKey, e.Value, e.ExpiresAt = []byte(src), value(rng.Int64N(50)), expiry()
				if err = emit(&e); err != nil {
					return err
				}
			}
		case snapshot.Aggregating:
			e.Value, _ = msgpack.Marshal(Mean{Sum: rng.Int64N(500), Count: 1 + rng.Int64N(20)})
			err = emit(&e)
		default:
			e.Value, e.ExpiresAt = value(rng.Int64N(1000)), expiry()
			err = emit(&e)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
