// Package memory is the memory-dump format (Flink's `jobmanager` backend):
// one self-contained file holding a snapshot's metadata and all its state,
// framed by internal/envelope with a msgpack body.
package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/stateutil/stateutil/internal/envelope"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// Name is the format's registered name.
const Name = "memory"

// DefaultStateSizeCap is the state allowed per subtask unless configured,
// as Flink's memory backend (5 MiB).
const DefaultStateSizeCap = 5 << 20

// maxBody bounds the dump a reader accepts before it allocates.
const maxBody = 1 << 32

// Kind is the framing of a memory dump of version 1, which readers still
// read; the writer writes version 2 (indexedKind).
var Kind = envelope.Kind{Magic: [8]byte{'S', 'T', 'U', 'T', 'M', 'E', 'M', 0}, Version: 1, Name: "stateutil memory dump"}

// document is the msgpack document of a dump: the metadata, and each
// operator's (parallel to Snapshot.Operators) subtasks' (parallel to the
// operator's) state S.
type document[S any] struct {
	Snapshot *snapshot.Snapshot `msgpack:"snapshot"`
	State    []operatorState[S] `msgpack:"state"`
}

type operatorState[S any] struct {
	Subtasks []S `msgpack:"subtasks"`
}

// body is the body of version 1 (see indexed.go for version 2).
type body = document[subtaskState]

type opState = operatorState[subtaskState]

type subtaskState struct {
	// Entries are in non-decreasing key-group order.
	Entries []entry `msgpack:"entries"`
	Parts
}

// Parts is a subtask's operator and raw state, in every version.
type Parts struct {
	Lists       []elementList `msgpack:"lists"`
	RawKeyed    []byte        `msgpack:"raw_keyed,omitempty"`
	RawOperator []byte        `msgpack:"raw_operator,omitempty"`
}

// entry is a keyed entry; State indexes the operator's KeyedStates.
type entry struct {
	_msgpack  struct{} `msgpack:",as_array"` //lint:ignore U1000 msgpack reads the tag
	KeyGroup  int
	State     int
	Key       []byte
	Namespace []byte
	UserKey   []byte
	Value     []byte
	ExpiresAt int64
}

func (e *entry) of(op *snapshot.Operator) snapshot.Entry {
	return snapshot.Entry{
		KeyGroup: e.KeyGroup, State: op.KeyedStates[e.State].Name,
		Key: e.Key, Namespace: e.Namespace, UserKey: e.UserKey, Value: e.Value, ExpiresAt: e.ExpiresAt,
	}
}

type elementList struct {
	State  string   `msgpack:"state"`
	Values [][]byte `msgpack:"values"`
}

// Format is the memory format.
var Format = &snapshot.Format{
	Name:    Name,
	Aliases: []string{"jobmanager", "mem"},
	Summary: "one self-contained file with all state inline (Flink's jobmanager backend)",
	Probe:   Kind.Probe,
	Open:    Open,
	// Describe: a dump is one file; Open reads a version 2 dump's head
	// alone, a version 1 dump whole (it has no head of its own).
	Describe: func(ctx context.Context, st storage.Storage, p string, opts snapshot.OpenOptions) (*snapshot.Description, error) {
		r, err := Open(ctx, st, p, opts)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return &snapshot.Description{Snapshot: r.Snapshot(), Metadata: p}, nil
	},
	Create: Create,

	StateSizeCap: DefaultStateSizeCap,
}

// Open reads a memory dump's metadata, verifying its framing first. A
// version 2 dump's key groups are read when asked for, each checked
// against its checksum; a version 1 dump is read and checked whole.
func Open(ctx context.Context, st storage.Storage, path string, _ snapshot.OpenOptions) (snapshot.Reader, error) {
	f, err := st.Open(ctx, path)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, fmt.Errorf("%w: %w", snapshot.ErrNotFound, err)
		}
		return nil, err
	}
	version, bodyLen, err := Kind.ReadHeader(f, f.Size(), f.Name())
	switch {
	case err == nil && version == indexedVersion:
		s, x, err := openIndexed(f, bodyLen)
		if err != nil {
			f.Close()
			return nil, err
		}
		return newReader(s, nil, x), nil
	case err == nil && version != Kind.Version:
		// A damaged version field is damage, not a newer format.
		if err = envelope.CheckSum(f, f.Size(), f.Name()); err == nil {
			err = fmt.Errorf("%q: %w: %s version %d (this stateutil reads versions %d and %d)", f.Name(), snapshot.ErrUnsupportedVersion, Kind.Name, version, Kind.Version, indexedVersion)
		}
	}
	f.Close()
	if err != nil {
		return nil, err
	}
	return openWhole(ctx, st, path)
}

// openWhole reads a version 1 dump.
func openWhole(ctx context.Context, st storage.Storage, path string) (snapshot.Reader, error) {
	location := st.URI(path)
	var b body
	if err := Kind.ReadMsgpack(ctx, st, path, maxBody, &b); err != nil {
		return nil, err
	}
	if err := snapshot.Validate(b.Snapshot, location); err != nil {
		return nil, err
	}
	if err := validateWhole(&b); err != nil {
		return nil, snapshot.Corrupt(location, envelope.HeaderSize, "%v", err)
	}
	return newReader(b.Snapshot, b.State, nil), nil
}

// validateWhole checks the structure a reader indexes into, so that no later
// access can go out of bounds; snapshot.Validate has checked the metadata.
func validateWhole(b *body) error {
	if len(b.State) != len(b.Snapshot.Operators) {
		return fmt.Errorf("%d operators but state for %d", len(b.Snapshot.Operators), len(b.State))
	}
	for i, op := range b.Snapshot.Operators {
		if len(b.State[i].Subtasks) != len(op.Subtasks) {
			return fmt.Errorf("operator %q has %d subtasks but state for %d", op.Label(), len(op.Subtasks), len(b.State[i].Subtasks))
		}
		for j, sub := range b.State[i].Subtasks {
			kgs := op.Subtasks[j].KeyGroups
			prev := -1
			for k, e := range sub.Entries {
				if e.State < 0 || e.State >= len(op.KeyedStates) {
					return fmt.Errorf("operator %q subtask %d entry %d names state #%d of %d", op.Label(), j, k, e.State, len(op.KeyedStates))
				}
				if !kgs.Contains(e.KeyGroup) || e.KeyGroup < prev {
					return fmt.Errorf("operator %q subtask %d entry %d has key group %d outside %v or out of order", op.Label(), j, k, e.KeyGroup, kgs)
				}
				prev = e.KeyGroup
			}
		}
	}
	return nil
}

// Register adds the memory format to reg.
func Register(reg *snapshot.Registry) { reg.Register(Format) }
