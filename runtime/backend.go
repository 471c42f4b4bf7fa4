package runtime

import (
	"context"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// Cell is one stored value with its TTL expiry (Unix ms; 0 = no TTL).
type Cell struct {
	Value     []byte
	ExpiresAt int64
}

func (c Cell) expired(now int64) bool { return c.ExpiresAt != 0 && c.ExpiresAt <= now }

// MapCell is one user key of a map state with its value.
type MapCell struct {
	UserKey string
	Cell
}

// StateID is a backend's handle of a registered state.
type StateID int

// KeyedBackend holds one keyed subtask's state, by key group, as bytes.
// Keys are the record keys (strings); user keys are the map state's
// encoded user keys. TTL is applied by the typed states above it, except
// that Snapshot drops entries expired at now. A backend is used by one
// goroutine at a time.
type KeyedBackend interface {
	// Register declares a state, or returns the id of the state of the same
	// name (restored, or registered before) when the kinds agree.
	Register(d StateDescriptor) (StateID, error)
	// Descriptors lists the registered and restored states.
	Descriptors() []StateDescriptor

	// Get, Put and Clear work on value, reducing and aggregating state;
	// Clear removes the key's entry of any kind.
	Get(s StateID, kg int, key string) (Cell, bool, error)
	Put(s StateID, kg int, key string, c Cell) error
	Clear(s StateID, kg int, key string) error

	// GetList returns a list state's cells; PutList replaces them (an
	// empty list removes the key); AppendList adds one.
	GetList(s StateID, kg int, key string) ([]Cell, error)
	PutList(s StateID, kg int, key string, cells []Cell) error
	AppendList(s StateID, kg int, key string, c Cell) error

	// MapGet, MapPut and MapRemove work on one user key of a map state;
	// MapEntries returns all of them ordered by user key.
	MapGet(s StateID, kg int, key, userKey string) (Cell, bool, error)
	MapPut(s StateID, kg int, key, userKey string, c Cell) error
	MapRemove(s StateID, kg int, key, userKey string) error
	MapEntries(s StateID, kg int, key string) ([]MapCell, error)

	// Start is called once every state is declared (restored descriptors,
	// then the function's Open), before any entry or record.
	Start() error
	// Restore adds one entry of a snapshot; restored states are declared
	// first with RestoreDescriptor.
	RestoreDescriptor(ks snapshot.KeyedState) error
	Restore(e *snapshot.Entry) error
	// Snapshot writes every entry not expired at now (Unix ms) to w in
	// key-group order. It does not close w.
	Snapshot(ctx context.Context, w snapshot.SubtaskWriter, now int64) error
	// Close releases the backend's resources.
	Close() error
}

// SubtaskInfo is the keyed subtask a KeyedBackend serves.
type SubtaskInfo struct {
	// Operator has the operator's id, uid, name, parallelism and max
	// parallelism; its states are not declared yet.
	Operator  *snapshot.Operator
	Subtask   int
	KeyGroups keygroup.Range
}

// StateBackend creates the keyed backends of a job's subtasks.
type StateBackend interface {
	// Name is the backend's name in reports ("heap", "rocksdb").
	Name() string
	NewKeyedBackend(info SubtaskInfo) (KeyedBackend, error)
}
