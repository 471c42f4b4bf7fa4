package runtime

// ListState is a list of values per key; with a TTL every element expires
// on its own.
type ListState[T any] struct {
	stateBase
	ser Serializer[T]
}

// GetListState registers (or finds) a list state.
func GetListState[T any](c *Context, d ListStateDescriptor[T]) (*ListState[T], error) {
	b, err := c.register(d.Descriptor())
	return &ListState[T]{stateBase: b, ser: d.Serializer}, err
}

// Get returns the current key's elements in order. Expired elements are
// removed (and returned only with ReturnExpiredIfNotCleanedUp).
func (s *ListState[T]) Get() ([]T, error) {
	be, key, kg, err := s.scope()
	if err != nil {
		return nil, err
	}
	cells, err := be.GetList(s.id, kg, key)
	if err != nil || len(cells) == 0 {
		return nil, err
	}
	out := make([]T, 0, len(cells))
	changed := false
	var kept []Cell
	now := s.now()
	for _, c := range cells {
		visible := true
		if s.ttl != nil {
			switch {
			case c.expired(now):
				changed, visible = true, s.returnExpired()
			case s.refreshOnRead():
				c.ExpiresAt, changed = s.stamp(now), true
				kept = append(kept, c)
			default:
				kept = append(kept, c)
			}
		}
		if visible {
			v, err := s.ser.Decode(c.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
	if changed {
		if err := be.PutList(s.id, kg, key, kept); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Add appends v.
func (s *ListState[T]) Add(v T) error {
	be, key, kg, err := s.scope()
	if err != nil {
		return err
	}
	return be.AppendList(s.id, kg, key, Cell{Value: s.ser.Encode(nil, v), ExpiresAt: s.stamp(s.now())})
}

// Update replaces the list; an empty list clears it.
func (s *ListState[T]) Update(vs []T) error {
	be, key, kg, err := s.scope()
	if err != nil {
		return err
	}
	exp := s.stamp(s.now())
	cells := make([]Cell, len(vs))
	for i, v := range vs {
		cells[i] = Cell{Value: s.ser.Encode(nil, v), ExpiresAt: exp}
	}
	return be.PutList(s.id, kg, key, cells)
}

// MapState is a map from user keys to values per key; with a TTL every
// user key expires on its own.
type MapState[K, V any] struct {
	stateBase
	keys Serializer[K]
	vals Serializer[V]
}

// MapEntry is one user key and value of a MapState.
type MapEntry[K, V any] struct {
	Key   K
	Value V
}

// GetMapState registers (or finds) a map state.
func GetMapState[K, V any](c *Context, d MapStateDescriptor[K, V]) (*MapState[K, V], error) {
	b, err := c.register(d.Descriptor())
	return &MapState[K, V]{stateBase: b, keys: d.KeySerializer, vals: d.ValueSerializer}, err
}

// Get returns the value of user key k and whether there is one.
func (s *MapState[K, V]) Get(k K) (V, bool, error) {
	var zero V
	be, key, kg, err := s.scope()
	if err != nil {
		return zero, false, err
	}
	uk := string(s.keys.Encode(nil, k))
	c, ok, err := be.MapGet(s.id, kg, key, uk)
	if err != nil || !ok {
		return zero, false, err
	}
	if s.ttl != nil {
		now := s.now()
		switch {
		case c.expired(now):
			if err := be.MapRemove(s.id, kg, key, uk); err != nil || !s.returnExpired() {
				return zero, false, err
			}
		case s.refreshOnRead():
			c.ExpiresAt = s.stamp(now)
			if err := be.MapPut(s.id, kg, key, uk, c); err != nil {
				return zero, false, err
			}
		}
	}
	v, err := s.vals.Decode(c.Value)
	return v, err == nil, err
}

// Put sets user key k to v.
func (s *MapState[K, V]) Put(k K, v V) error {
	be, key, kg, err := s.scope()
	if err != nil {
		return err
	}
	return be.MapPut(s.id, kg, key, string(s.keys.Encode(nil, k)), Cell{Value: s.vals.Encode(nil, v), ExpiresAt: s.stamp(s.now())})
}

// Remove deletes user key k.
func (s *MapState[K, V]) Remove(k K) error {
	be, key, kg, err := s.scope()
	if err != nil {
		return err
	}
	return be.MapRemove(s.id, kg, key, string(s.keys.Encode(nil, k)))
}

// Entries returns the live entries ordered by encoded user key. Expired
// entries are removed (and returned only with ReturnExpiredIfNotCleanedUp).
func (s *MapState[K, V]) Entries() ([]MapEntry[K, V], error) {
	be, key, kg, err := s.scope()
	if err != nil {
		return nil, err
	}
	cells, err := be.MapEntries(s.id, kg, key)
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := make([]MapEntry[K, V], 0, len(cells))
	for _, c := range cells {
		if s.ttl != nil {
			switch {
			case c.expired(now):
				if err := be.MapRemove(s.id, kg, key, c.UserKey); err != nil {
					return nil, err
				}
				if !s.returnExpired() {
					continue
				}
			case s.refreshOnRead():
				c.ExpiresAt = s.stamp(now)
				if err := be.MapPut(s.id, kg, key, c.UserKey, c.Cell); err != nil {
					return nil, err
				}
			}
		}
		k, err := s.keys.Decode([]byte(c.UserKey))
		if err != nil {
			return nil, err
		}
		v, err := s.vals.Decode(c.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, MapEntry[K, V]{Key: k, Value: v})
	}
	return out, nil
}
