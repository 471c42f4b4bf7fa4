package runtime

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// HeapBackend keeps state in Go maps, one per state and key group, as
// Flink's heap (hashmap) backend does. Its snapshots go to whatever
// snapshot.Writer the checkpoint uses (memory or filesystem format).
type HeapBackend struct {
	kgs    keygroup.Range
	states []*heapState
	byName map[string]StateID
}

// heapState holds one state; exactly one of the slices is in use, by kind,
// indexed by key group minus the range start.
type heapState struct {
	desc   StateDescriptor
	values []map[string]Cell
	lists  []map[string][]Cell
	maps   []map[string]map[string]Cell
}

// HeapStateBackend is the StateBackend of HeapBackends.
type HeapStateBackend struct{}

// Name implements StateBackend.
func (HeapStateBackend) Name() string { return "heap" }

// NewKeyedBackend implements StateBackend.
func (HeapStateBackend) NewKeyedBackend(info SubtaskInfo) (KeyedBackend, error) {
	return NewHeapBackend(info.KeyGroups), nil
}

// NewHeapBackend returns an empty heap backend owning key groups kgs.
func NewHeapBackend(kgs keygroup.Range) *HeapBackend {
	return &HeapBackend{kgs: kgs, byName: map[string]StateID{}}
}

// Start implements KeyedBackend.
func (b *HeapBackend) Start() error { return nil }

func newHeapState(d StateDescriptor, n int) *heapState {
	s := &heapState{desc: d}
	switch d.Kind {
	case snapshot.List:
		s.lists = make([]map[string][]Cell, n)
	case snapshot.Map:
		s.maps = make([]map[string]map[string]Cell, n)
	default:
		s.values = make([]map[string]Cell, n)
	}
	return s
}

// Register implements KeyedBackend.
func (b *HeapBackend) Register(d StateDescriptor) (StateID, error) {
	d, err := d.validate()
	if err != nil {
		return 0, err
	}
	if id, ok := b.byName[d.Name]; ok {
		s := b.states[id]
		if s.desc.Kind != d.Kind {
			return 0, fmt.Errorf("%w: state %q is a %s state, not %s", ErrStateDescriptor, d.Name, s.desc.Kind, d.Kind)
		}
		s.desc = d
		return id, nil
	}
	id := StateID(len(b.states))
	b.states = append(b.states, newHeapState(d, b.kgs.Len()))
	b.byName[d.Name] = id
	return id, nil
}

// Descriptors implements KeyedBackend.
func (b *HeapBackend) Descriptors() []StateDescriptor {
	out := make([]StateDescriptor, len(b.states))
	for i, s := range b.states {
		out[i] = s.desc
	}
	return out
}

func (b *HeapBackend) state(s StateID, kg int, kind snapshot.StateKind) (*heapState, int, error) {
	if int(s) < 0 || int(s) >= len(b.states) {
		return nil, 0, fmt.Errorf("%w: unknown state id %d", ErrStateDescriptor, s)
	}
	if !b.kgs.Contains(kg) {
		return nil, 0, fmt.Errorf("key group %d is outside this subtask's range %v", kg, b.kgs)
	}
	st := b.states[s]
	if kind != "" && (kind == snapshot.List || kind == snapshot.Map || st.desc.Kind == snapshot.List || st.desc.Kind == snapshot.Map) && st.desc.Kind != kind {
		return nil, 0, fmt.Errorf("%w: state %q is a %s state, used as %s", ErrStateDescriptor, st.desc.Name, st.desc.Kind, kind)
	}
	return st, kg - b.kgs.Start, nil
}

// Get implements KeyedBackend.
func (b *HeapBackend) Get(s StateID, kg int, key string) (Cell, bool, error) {
	st, i, err := b.state(s, kg, snapshot.Value)
	if err != nil {
		return Cell{}, false, err
	}
	c, ok := st.values[i][key]
	return c, ok, nil
}

// Put implements KeyedBackend.
func (b *HeapBackend) Put(s StateID, kg int, key string, c Cell) error {
	st, i, err := b.state(s, kg, snapshot.Value)
	if err != nil {
		return err
	}
	if st.values[i] == nil {
		st.values[i] = map[string]Cell{}
	}
	st.values[i][key] = c
	return nil
}

// Clear implements KeyedBackend.
func (b *HeapBackend) Clear(s StateID, kg int, key string) error {
	st, i, err := b.state(s, kg, "")
	if err != nil {
		return err
	}
	switch {
	case st.lists != nil:
		delete(st.lists[i], key)
	case st.maps != nil:
		delete(st.maps[i], key)
	default:
		delete(st.values[i], key)
	}
	return nil
}

// GetList implements KeyedBackend.
func (b *HeapBackend) GetList(s StateID, kg int, key string) ([]Cell, error) {
	st, i, err := b.state(s, kg, snapshot.List)
	if err != nil {
		return nil, err
	}
	return st.lists[i][key], nil
}

// PutList implements KeyedBackend.
func (b *HeapBackend) PutList(s StateID, kg int, key string, cells []Cell) error {
	st, i, err := b.state(s, kg, snapshot.List)
	if err != nil {
		return err
	}
	if len(cells) == 0 {
		delete(st.lists[i], key)
		return nil
	}
	if st.lists[i] == nil {
		st.lists[i] = map[string][]Cell{}
	}
	st.lists[i][key] = cells
	return nil
}

// AppendList implements KeyedBackend.
func (b *HeapBackend) AppendList(s StateID, kg int, key string, c Cell) error {
	st, i, err := b.state(s, kg, snapshot.List)
	if err != nil {
		return err
	}
	if st.lists[i] == nil {
		st.lists[i] = map[string][]Cell{}
	}
	st.lists[i][key] = append(st.lists[i][key], c)
	return nil
}

// MapGet implements KeyedBackend.
func (b *HeapBackend) MapGet(s StateID, kg int, key, userKey string) (Cell, bool, error) {
	st, i, err := b.state(s, kg, snapshot.Map)
	if err != nil {
		return Cell{}, false, err
	}
	c, ok := st.maps[i][key][userKey]
	return c, ok, nil
}

// MapPut implements KeyedBackend.
func (b *HeapBackend) MapPut(s StateID, kg int, key, userKey string, c Cell) error {
	st, i, err := b.state(s, kg, snapshot.Map)
	if err != nil {
		return err
	}
	if st.maps[i] == nil {
		st.maps[i] = map[string]map[string]Cell{}
	}
	m := st.maps[i][key]
	if m == nil {
		m = map[string]Cell{}
		st.maps[i][key] = m
	}
	m[userKey] = c
	return nil
}

// MapRemove implements KeyedBackend.
func (b *HeapBackend) MapRemove(s StateID, kg int, key, userKey string) error {
	st, i, err := b.state(s, kg, snapshot.Map)
	if err != nil {
		return err
	}
	if m := st.maps[i][key]; m != nil {
		delete(m, userKey)
		if len(m) == 0 {
			delete(st.maps[i], key)
		}
	}
	return nil
}

// MapEntries implements KeyedBackend.
func (b *HeapBackend) MapEntries(s StateID, kg int, key string) ([]MapCell, error) {
	st, i, err := b.state(s, kg, snapshot.Map)
	if err != nil {
		return nil, err
	}
	m := st.maps[i][key]
	out := make([]MapCell, 0, len(m))
	for _, uk := range slices.Sorted(maps.Keys(m)) {
		out = append(out, MapCell{UserKey: uk, Cell: m[uk]})
	}
	return out, nil
}

// Close implements KeyedBackend.
func (b *HeapBackend) Close() error {
	b.states = nil
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, cmp.Compare)
	return keys
}

// Snapshot implements KeyedBackend: key group by key group, state by
// state in registration order, keys in byte order.
func (b *HeapBackend) Snapshot(ctx context.Context, w snapshot.SubtaskWriter, now int64) error {
	e := snapshot.Entry{Namespace: []byte{}}
	emit := func(c Cell) error {
		if c.expired(now) {
			return nil
		}
		e.Value, e.ExpiresAt = c.Value, c.ExpiresAt
		return w.Entry(&e)
	}
	for i := range b.kgs.Len() {
		if err := ctx.Err(); err != nil {
			return err
		}
		e.KeyGroup = b.kgs.Start + i
		for _, st := range b.states {
			e.State, e.UserKey = st.desc.Name, nil
			var err error
			switch {
			case st.lists != nil:
				for _, k := range sortedKeys(st.lists[i]) {
					e.Key = []byte(k)
					for _, c := range st.lists[i][k] {
						if err = emit(c); err != nil {
							return err
						}
					}
				}
			case st.maps != nil:
				for _, k := range sortedKeys(st.maps[i]) {
					e.Key = []byte(k)
					m := st.maps[i][k]
					for _, uk := range sortedKeys(m) {
						e.UserKey = []byte(uk)
						if err = emit(m[uk]); err != nil {
							return err
						}
					}
				}
			default:
				for _, k := range sortedKeys(st.values[i]) {
					e.Key = []byte(k)
					if err = emit(st.values[i][k]); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// RestoreDescriptor implements KeyedBackend.
func (b *HeapBackend) RestoreDescriptor(ks snapshot.KeyedState) error {
	_, err := b.Register(descriptorOf(ks))
	return err
}

// Restore implements KeyedBackend.
func (b *HeapBackend) Restore(e *snapshot.Entry) error {
	id, ok := b.byName[e.State]
	if !ok {
		return fmt.Errorf("%w: restored entry of undeclared state %q", ErrStateDescriptor, e.State)
	}
	c := Cell{Value: slices.Clone(e.Value), ExpiresAt: e.ExpiresAt}
	if c.Value == nil {
		c.Value = []byte{}
	}
	key := string(e.Key)
	switch b.states[id].desc.Kind {
	case snapshot.List:
		return b.AppendList(id, e.KeyGroup, key, c)
	case snapshot.Map:
		return b.MapPut(id, e.KeyGroup, key, string(e.UserKey), c)
	}
	return b.Put(id, e.KeyGroup, key, c)
}
