package runtime

import (
	"fmt"
	"time"

	"github.com/stateutil/stateutil/snapshot"
)

// TTLConfig is a keyed state's time-to-live in processing time.
type TTLConfig struct {
	// TTL is how long an entry lives after it was last stamped.
	TTL time.Duration
	// Update says when the stamp is refreshed: on create and write
	// (default) or also on read.
	Update snapshot.UpdateType
	// Visibility says whether an expired entry that was not cleaned up yet
	// may still be returned (it is removed either way).
	Visibility snapshot.Visibility
}

func (t *TTLConfig) normalize() (*TTLConfig, error) {
	if t == nil {
		return nil, nil
	}
	c := *t
	if c.TTL < time.Millisecond {
		return nil, fmt.Errorf("TTL %v is shorter than 1ms", c.TTL)
	}
	if c.Update == "" {
		c.Update = snapshot.OnCreateAndWrite
	}
	if c.Visibility == "" {
		c.Visibility = snapshot.NeverReturnExpired
	}
	if c.Update != snapshot.OnCreateAndWrite && c.Update != snapshot.OnReadAndWrite {
		return nil, fmt.Errorf("unknown TTL update type %q", c.Update)
	}
	if c.Visibility != snapshot.NeverReturnExpired && c.Visibility != snapshot.ReturnExpiredIfNotCleanedUp {
		return nil, fmt.Errorf("unknown TTL visibility %q", c.Visibility)
	}
	return &c, nil
}

// StateDescriptor is the untyped description of one keyed state: its name,
// kind, types and TTL. Keys are strings and the namespace is void.
type StateDescriptor struct {
	Name        string
	Kind        snapshot.StateKind
	UserKeyType snapshot.Type // map state only
	ValueType   snapshot.Type
	TTL         *TTLConfig
}

// KeyedState is the descriptor as the snapshot model records it.
func (d StateDescriptor) KeyedState() snapshot.KeyedState {
	ks := snapshot.KeyedState{
		Name: d.Name, Kind: d.Kind, KeyType: snapshot.Type{Name: snapshot.TypeString},
		NamespaceType: snapshot.Type{Name: snapshot.TypeVoid}, UserKeyType: d.UserKeyType, ValueType: d.ValueType,
	}
	if d.TTL != nil {
		ks.TTL = &snapshot.TTL{TTLMillis: d.TTL.TTL.Milliseconds(), Update: d.TTL.Update, Visibility: d.TTL.Visibility}
	}
	return ks
}

// descriptorOf is the inverse of KeyedState, for state restored from a
// snapshot before the job registered it.
func descriptorOf(ks snapshot.KeyedState) StateDescriptor {
	d := StateDescriptor{Name: ks.Name, Kind: ks.Kind, UserKeyType: ks.UserKeyType, ValueType: ks.ValueType}
	if ks.TTL != nil {
		d.TTL = &TTLConfig{TTL: time.Duration(ks.TTL.TTLMillis) * time.Millisecond, Update: ks.TTL.Update, Visibility: ks.TTL.Visibility}
	}
	return d
}

func (d StateDescriptor) validate() (StateDescriptor, error) {
	if d.Name == "" {
		return d, fmt.Errorf("%w: a keyed state needs a name", ErrStateDescriptor)
	}
	switch d.Kind {
	case snapshot.Value, snapshot.List, snapshot.Map, snapshot.Reducing, snapshot.Aggregating:
	default:
		return d, fmt.Errorf("%w: state %q has unknown kind %q", ErrStateDescriptor, d.Name, d.Kind)
	}
	ttl, err := d.TTL.normalize()
	if err != nil {
		return d, fmt.Errorf("%w: state %q: %v", ErrStateDescriptor, d.Name, err)
	}
	d.TTL = ttl
	return d, nil
}

// ValueStateDescriptor describes a ValueState.
type ValueStateDescriptor[T any] struct {
	Name       string
	Serializer Serializer[T]
	TTL        *TTLConfig
}

// Descriptor is the untyped descriptor.
func (d ValueStateDescriptor[T]) Descriptor() StateDescriptor {
	return StateDescriptor{Name: d.Name, Kind: snapshot.Value, ValueType: d.Serializer.Type(), TTL: d.TTL}
}

// ListStateDescriptor describes a ListState.
type ListStateDescriptor[T any] struct {
	Name       string
	Serializer Serializer[T]
	TTL        *TTLConfig
}

// Descriptor is the untyped descriptor.
func (d ListStateDescriptor[T]) Descriptor() StateDescriptor {
	return StateDescriptor{Name: d.Name, Kind: snapshot.List, ValueType: d.Serializer.Type(), TTL: d.TTL}
}

// MapStateDescriptor describes a MapState.
type MapStateDescriptor[K, V any] struct {
	Name            string
	KeySerializer   Serializer[K]
	ValueSerializer Serializer[V]
	TTL             *TTLConfig
}

// Descriptor is the untyped descriptor.
func (d MapStateDescriptor[K, V]) Descriptor() StateDescriptor {
	return StateDescriptor{Name: d.Name, Kind: snapshot.Map, UserKeyType: d.KeySerializer.Type(), ValueType: d.ValueSerializer.Type(), TTL: d.TTL}
}

// ReducingStateDescriptor describes a ReducingState: Reduce folds each
// added value into the current one.
type ReducingStateDescriptor[T any] struct {
	Name       string
	Serializer Serializer[T]
	Reduce     func(current, added T) T
	TTL        *TTLConfig
}

// Descriptor is the untyped descriptor.
func (d ReducingStateDescriptor[T]) Descriptor() StateDescriptor {
	return StateDescriptor{Name: d.Name, Kind: snapshot.Reducing, ValueType: d.Serializer.Type(), TTL: d.TTL}
}

// Aggregator folds inputs of type IN into an accumulator ACC and reads a
// result OUT from it (Flink's AggregateFunction).
type Aggregator[IN, ACC, OUT any] interface {
	Zero() ACC
	Add(acc ACC, in IN) ACC
	Result(acc ACC) OUT
}

// AggregatingStateDescriptor describes an AggregatingState; the state
// stores the accumulator.
type AggregatingStateDescriptor[IN, ACC, OUT any] struct {
	Name       string
	Serializer Serializer[ACC]
	Aggregator Aggregator[IN, ACC, OUT]
	TTL        *TTLConfig
}

// Descriptor is the untyped descriptor.
func (d AggregatingStateDescriptor[IN, ACC, OUT]) Descriptor() StateDescriptor {
	return StateDescriptor{Name: d.Name, Kind: snapshot.Aggregating, ValueType: d.Serializer.Type(), TTL: d.TTL}
}
