package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"

	"github.com/stateutil/stateutil/snapshot"
)

// readersPerSnapshot bounds the readers open on one snapshot. A reader
// serves one request at a time: a format promises concurrent reads of
// different subtasks only.
const readersPerSnapshot = 2

// source is one snapshot named at start: a pool of its readers, opened as
// requests need them, and the views computed once.
type source struct {
	id       int
	location string
	reg      *snapshot.Registry
	opts     snapshot.OpenOptions
	// err is why the snapshot did not open at start; every view of it
	// is that error.
	err    error
	format string
	idle   chan snapshot.Reader
	tokens chan struct{} // one per reader that may be opened

	mu    sync.Mutex
	all   []snapshot.Reader
	views *memo
}

func openSource(ctx context.Context, id int, location string, cfg Config) *source {
	src := &source{id: id, location: location, reg: cfg.Registry, opts: cfg.Open,
		idle: make(chan snapshot.Reader, readersPerSnapshot), tokens: make(chan struct{}, readersPerSnapshot), views: newMemo(256)}
	for range readersPerSnapshot {
		src.tokens <- struct{}{}
	}
	<-src.tokens
	r, err := src.open(ctx)
	if err != nil {
		src.err = err
		return src
	}
	src.format = r.Snapshot().Format
	src.idle <- r
	return src
}

func (src *source) open(ctx context.Context) (snapshot.Reader, error) {
	r, err := src.reg.Open(ctx, src.location, src.opts)
	if err != nil {
		src.tokens <- struct{}{}
		return nil, err
	}
	src.mu.Lock()
	src.all = append(src.all, r)
	src.mu.Unlock()
	return r, nil
}

// with lends fn a reader of its own, opening one if none is idle and
// fewer than readersPerSnapshot are open, else waiting for one.
func (src *source) with(ctx context.Context, fn func(snapshot.Reader) error) error {
	if src.err != nil {
		return src.err
	}
	var r snapshot.Reader
	select {
	case r = <-src.idle:
	default:
		select {
		case r = <-src.idle:
		case <-src.tokens:
			var err error
			if r, err = src.open(ctx); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() { src.idle <- r }()
	return fn(r)
}

func (src *source) close() error {
	src.mu.Lock()
	defer src.mu.Unlock()
	var errs []error
	for _, r := range src.all {
		errs = append(errs, r.Close())
	}
	src.all = nil
	return errors.Join(errs...)
}

// memo keeps the results of computations by key, computing each once even
// when many ask at once, and forgetting the oldest beyond its size.
// Snapshots do not change while they are served, so nothing else expires.
type memo struct {
	mu    sync.Mutex
	size  int
	order []string
	calls map[string]*call
}

type call struct {
	done chan struct{}
	val  []byte
	err  error
}

func newMemo(size int) *memo { return &memo{size: size, calls: map[string]*call{}} }

// get returns key's result, computing it with fn if no one has. A result
// cut short by its context is not kept, and the callers waiting for it
// compute it again.
func (m *memo) get(ctx context.Context, key string, fn func(context.Context) ([]byte, error)) ([]byte, error) {
	for {
		m.mu.Lock()
		c, ok := m.calls[key]
		if !ok {
			c = &call{done: make(chan struct{})}
			m.calls[key] = c
			m.order = append(m.order, key)
			if len(m.order) > m.size {
				delete(m.calls, m.order[0])
				m.order = m.order[1:]
			}
			m.mu.Unlock()
			c.val, c.err = fn(ctx)
			if c.err != nil && ctx.Err() != nil {
				m.forget(key, c)
			}
			close(c.done)
			return c.val, c.err
		}
		m.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if c.err == nil || !errors.Is(c.err, context.Canceled) && !errors.Is(c.err, context.DeadlineExceeded) {
			return c.val, c.err
		}
	}
}

func (m *memo) forget(key string, c *call) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.calls[key] == c {
		delete(m.calls, key)
		for i, k := range m.order {
			if k == key {
				m.order = append(m.order[:i], m.order[i+1:]...)
				break
			}
		}
	}
}

func randomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
