package objstore

import (
	"context"
	"fmt"
	"path"

	"github.com/stateutil/stateutil/storage"
)

// pending writes one object under its final name. Up to PutLimit it is
// held in memory and sent with one request on Commit; past that it is an
// Upload that goes on while the caller writes. Either way the store shows
// nothing at the key until Commit: a request never sent, or an upload
// never committed, leaves no object. Created under storage.DeferCommits,
// Commit hands the request, or the upload's end, to one of the store's
// slots and returns; it completes in the background.
type pending struct {
	s       *store
	ctx     context.Context // the requests'; cancelled by Abort
	stop    context.CancelFunc
	commits *storage.Commits // set when Commit is deferred
	detach  func() bool      // ends the Create context's hold on ctx
	path    string
	key     string
	buf     []byte
	up      Upload // once past PutLimit
	done    bool
}

func (s *store) Create(ctx context.Context, p string) (storage.Pending, error) {
	k := key(p)
	if k == "" {
		return nil, fmt.Errorf("create %s: is a directory", s.URI(p))
	}
	if err := ctx.Err(); err != nil {
		return nil, s.wrap("create", p, err)
	}
	// Local disk and HDFS refuse a file in a directory that does not
	// exist; so does this, so that a mistyped location fails at once.
	if parent := path.Dir(k); parent != "." && !s.dirs.known(parent) {
		dir, err := s.isDir(ctx, parent)
		if err != nil {
			return nil, s.wrap("create", p, err)
		}
		if !dir {
			return nil, fmt.Errorf("create %s: %w: no directory %s", s.URI(p), storage.ErrNotFound, s.URI("/"+parent))
		}
		s.dirs.remember(parent)
	}
	w := &pending{s: s, path: p, key: k, commits: storage.DeferredCommits(ctx)}
	if w.commits == nil {
		w.ctx, w.stop = context.WithCancel(ctx)
		return w, nil
	}
	// Until Commit, ending ctx stops the upload; after it, only the
	// group's context does.
	w.ctx, w.stop = context.WithCancel(w.commits.Context())
	w.detach = context.AfterFunc(ctx, w.stop)
	return w, nil
}

func (w *pending) Write(b []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("write %s: already committed or aborted", w.s.URI(w.path))
	}
	if w.up == nil && len(w.buf)+len(b) <= PutLimit {
		w.buf = append(w.buf, b...)
		return len(b), nil
	}
	if w.up == nil {
		w.up = w.s.b.Upload(w.ctx, w.key)
		buf := w.buf
		w.buf = nil
		if _, err := w.up.Write(buf); err != nil {
			return 0, w.s.wrap("write", w.path, err)
		}
	}
	n, err := w.up.Write(b)
	return n, w.s.wrap("write", w.path, err)
}

// Commit puts the object in place; deferred, once a slot is free, it
// returns and the object is put in place in the background.
func (w *pending) Commit() error {
	if w.done {
		return fmt.Errorf("commit %s: already committed or aborted", w.s.URI(w.path))
	}
	w.done = true
	if w.commits == nil {
		defer w.stop()
		return w.finish()
	}
	w.detach()
	select {
	case w.s.slots <- struct{}{}:
	case <-w.ctx.Done():
		w.abort()
		return w.s.wrap("commit", w.path, w.ctx.Err())
	}
	w.commits.Go(func() error {
		defer w.stop()
		defer func() { <-w.s.slots }()
		return w.finish()
	})
	return nil
}

func (w *pending) finish() error {
	var err error
	if w.up != nil {
		err = w.up.Commit()
	} else {
		_, err = w.s.b.Put(w.ctx, w.key, w.buf, Cond{})
		w.buf = nil
	}
	if err != nil {
		return w.s.wrap("commit", w.path, err)
	}
	w.s.dirs.remember(path.Dir(w.key))
	return nil
}

// Abort drops what was written.
func (w *pending) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	if w.detach != nil {
		w.detach()
	}
	return w.abort()
}

func (w *pending) abort() error {
	defer w.stop()
	w.buf = nil
	if w.up == nil {
		return nil
	}
	return w.s.wrap("abort", w.path, w.up.Abort())
}
