package runtime

import (
	"fmt"
	"time"

	"github.com/stateutil/stateutil/snapshot"
)

// Context is what an operator function sees of its subtask: who it is, the
// processing-time clock and, in a keyed operator, the keyed state scoped to
// the key of the record being processed.
type Context struct {
	// Operator is the operator's uid; Subtask and Parallelism place this
	// instance; MaxParallelism is the number of key groups.
	Operator       string
	Subtask        int
	Parallelism    int
	MaxParallelism int

	clock   Clock
	backend KeyedBackend // nil outside keyed operators
	key     string
	kg      int
	hasKey  bool
	sealed  bool // Open is over: no new states
}

// CurrentKey is the key of the record being processed.
func (c *Context) CurrentKey() (string, bool) { return c.key, c.hasKey }

// Now is the processing time.
func (c *Context) Now() time.Time { return c.clock.Now() }

// setKey scopes keyed state to key, in key group kg.
func (c *Context) setKey(key string, kg int) { c.key, c.kg, c.hasKey = key, kg, true }

func (c *Context) clearKey() { c.key, c.kg, c.hasKey = "", 0, false }

// register declares a state in the keyed backend.
func (c *Context) register(d StateDescriptor) (stateBase, error) {
	if c.backend == nil {
		return stateBase{}, fmt.Errorf("%w: operator %q asked for state %q", ErrNotKeyed, c.Operator, d.Name)
	}
	if c.sealed && !c.declared(d.Name) {
		return stateBase{}, fmt.Errorf("%w: operator %q registers state %q after Open; register keyed state in Open", ErrStateDescriptor, c.Operator, d.Name)
	}
	id, err := c.backend.Register(d)
	if err != nil {
		return stateBase{}, err
	}
	d, _ = d.validate()
	return stateBase{ctx: c, id: id, name: d.Name, ttl: d.TTL}, nil
}

// stateBase is what every typed state shares: the context that scopes it
// to the current key, its backend id and its TTL.
type stateBase struct {
	ctx  *Context
	id   StateID
	name string
	ttl  *TTLConfig
}

// scope returns the backend, current key and key group, or the error of
// an access outside Process.
func (s *stateBase) scope() (KeyedBackend, string, int, error) {
	if !s.ctx.hasKey {
		return nil, "", 0, fmt.Errorf("%w: state %q of operator %q", ErrNoCurrentKey, s.name, s.ctx.Operator)
	}
	return s.ctx.backend, s.ctx.key, s.ctx.kg, nil
}

func (s *stateBase) now() int64 { return s.ctx.clock.Now().UnixMilli() }

// stamp is the expiry of a cell written (or, OnReadAndWrite, read) now.
func (s *stateBase) stamp(now int64) int64 {
	if s.ttl == nil {
		return 0
	}
	ms := s.ttl.TTL.Milliseconds()
	if now > 1<<62 || ms > 1<<62 {
		return 1<<63 - 1
	}
	return now + ms
}

// refreshOnRead reports whether reads renew the TTL.
func (s *stateBase) refreshOnRead() bool {
	return s.ttl != nil && s.ttl.Update == snapshot.OnReadAndWrite
}

// returnExpired reports whether an expired, not yet cleaned up entry is
// still returned.
func (s *stateBase) returnExpired() bool {
	return s.ttl != nil && s.ttl.Visibility == snapshot.ReturnExpiredIfNotCleanedUp
}

func (c *Context) declared(name string) bool {
	for _, d := range c.backend.Descriptors() {
		if d.Name == name {
			return true
		}
	}
	return false
}
