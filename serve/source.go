package serve

import (
	"context"
	"errors"
	"sync"

	"github.com/stateutil/stateutil/snapshot"
)

// readersPerSnapshot bounds the readers open on one snapshot. A reader
// serves one request at a time: a format promises concurrent reads of
// different subtasks only.
const readersPerSnapshot = 2

// source is one snapshot named at start: a pool of its readers, opened as
// requests need them.
type source struct {
	id       int
	location string
	reg      *snapshot.Registry
	opts     snapshot.OpenOptions
	// err is why the snapshot did not open at start; every view of it
	// is that error.
	err error
	// meta is the snapshot's metadata, which the views' estimates read.
	meta   *snapshot.Snapshot
	format string
	idle   chan snapshot.Reader
	tokens chan struct{} // one per reader that may be opened

	mu  sync.Mutex
	all []snapshot.Reader
}

func openSource(ctx context.Context, id int, location string, cfg Config) *source {
	src := &source{id: id, location: location, reg: cfg.Registry, opts: cfg.Open,
		idle: make(chan snapshot.Reader, readersPerSnapshot), tokens: make(chan struct{}, readersPerSnapshot)}
	for range readersPerSnapshot {
		src.tokens <- struct{}{}
	}
	<-src.tokens
	r, err := src.open(ctx)
	if err != nil {
		src.err = err
		return src
	}
	src.meta = r.Snapshot()
	src.format = src.meta.Format
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
