package runtime

// ValueState is one value per key.
type ValueState[T any] struct {
	stateBase
	ser Serializer[T]
}

// GetValueState registers (or finds) a value state; call it in Open.
func GetValueState[T any](c *Context, d ValueStateDescriptor[T]) (*ValueState[T], error) {
	b, err := c.register(d.Descriptor())
	return &ValueState[T]{stateBase: b, ser: d.Serializer}, err
}

// readCell reads a value-like cell applying TTL: an expired cell is
// removed, and returned only with ReturnExpiredIfNotCleanedUp; a live one
// is re-stamped on read when the update type says so.
func (s *stateBase) readCell(honorVisibility bool) (Cell, bool, error) {
	be, key, kg, err := s.scope()
	if err != nil {
		return Cell{}, false, err
	}
	c, ok, err := be.Get(s.id, kg, key)
	if err != nil || !ok || s.ttl == nil {
		return c, ok, err
	}
	now := s.now()
	if c.expired(now) {
		if err := be.Clear(s.id, kg, key); err != nil {
			return Cell{}, false, err
		}
		return c, honorVisibility && s.returnExpired(), nil
	}
	if s.refreshOnRead() {
		c.ExpiresAt = s.stamp(now)
		if err := be.Put(s.id, kg, key, c); err != nil {
			return Cell{}, false, err
		}
	}
	return c, true, nil
}

func (s *stateBase) writeCell(v []byte) error {
	be, key, kg, err := s.scope()
	if err != nil {
		return err
	}
	return be.Put(s.id, kg, key, Cell{Value: v, ExpiresAt: s.stamp(s.now())})
}

// Clear removes the current key's entry.
func (s *stateBase) Clear() error {
	be, key, kg, err := s.scope()
	if err != nil {
		return err
	}
	return be.Clear(s.id, kg, key)
}

// Value returns the current key's value and whether it has one.
func (s *ValueState[T]) Value() (T, bool, error) {
	var zero T
	c, ok, err := s.readCell(true)
	if err != nil || !ok {
		return zero, false, err
	}
	v, err := s.ser.Decode(c.Value)
	return v, err == nil, err
}

// Update sets the current key's value.
func (s *ValueState[T]) Update(v T) error { return s.writeCell(s.ser.Encode(nil, v)) }

// ReducingState folds every added value into one with a reduce function.
type ReducingState[T any] struct {
	stateBase
	ser    Serializer[T]
	reduce func(current, added T) T
}

// GetReducingState registers (or finds) a reducing state.
func GetReducingState[T any](c *Context, d ReducingStateDescriptor[T]) (*ReducingState[T], error) {
	b, err := c.register(d.Descriptor())
	return &ReducingState[T]{stateBase: b, ser: d.Serializer, reduce: d.Reduce}, err
}

// Get returns the reduced value and whether there is one.
func (s *ReducingState[T]) Get() (T, bool, error) {
	var zero T
	c, ok, err := s.readCell(true)
	if err != nil || !ok {
		return zero, false, err
	}
	v, err := s.ser.Decode(c.Value)
	return v, err == nil, err
}

// Add folds v into the current value; an expired value counts as none.
func (s *ReducingState[T]) Add(v T) error {
	c, ok, err := s.readCell(false)
	if err != nil {
		return err
	}
	if ok {
		cur, err := s.ser.Decode(c.Value)
		if err != nil {
			return err
		}
		v = s.reduce(cur, v)
	}
	return s.writeCell(s.ser.Encode(nil, v))
}

// AggregatingState folds inputs into an accumulator and reads a result
// from it.
type AggregatingState[IN, ACC, OUT any] struct {
	stateBase
	ser Serializer[ACC]
	agg Aggregator[IN, ACC, OUT]
}

// GetAggregatingState registers (or finds) an aggregating state.
func GetAggregatingState[IN, ACC, OUT any](c *Context, d AggregatingStateDescriptor[IN, ACC, OUT]) (*AggregatingState[IN, ACC, OUT], error) {
	b, err := c.register(d.Descriptor())
	return &AggregatingState[IN, ACC, OUT]{stateBase: b, ser: d.Serializer, agg: d.Aggregator}, err
}

// Get returns the aggregate's result and whether anything was added.
func (s *AggregatingState[IN, ACC, OUT]) Get() (OUT, bool, error) {
	var zero OUT
	c, ok, err := s.readCell(true)
	if err != nil || !ok {
		return zero, false, err
	}
	acc, err := s.ser.Decode(c.Value)
	if err != nil {
		return zero, false, err
	}
	return s.agg.Result(acc), true, nil
}

// Add folds in into the accumulator; an expired accumulator counts as none.
func (s *AggregatingState[IN, ACC, OUT]) Add(in IN) error {
	c, ok, err := s.readCell(false)
	if err != nil {
		return err
	}
	acc := s.agg.Zero()
	if ok {
		if acc, err = s.ser.Decode(c.Value); err != nil {
			return err
		}
	}
	return s.writeCell(s.ser.Encode(nil, s.agg.Add(acc, in)))
}
