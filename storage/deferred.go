package storage

import (
	"context"
	"errors"
	"sync"
)

// Commits are Pending commits a storage finishes in the background: on
// an object store a file's upload completes while the next file is being
// written. See DeferCommits.
type Commits struct {
	ctx  context.Context
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

type commitsKey struct{}

// DeferCommits returns a context under which the Commit of a Pending may
// return before the file is in place, and the group that finishes those
// commits. Storages that cannot defer (local disk, HDFS) commit at once,
// as under any context. A deferred commit runs under ctx, not under the
// context its file was created with, which may end first. Until Wait has
// returned nil the files may be missing: the caller waits before it
// writes what refers to them (a snapshot's metadata), and before it
// removes them.
func DeferCommits(ctx context.Context) (context.Context, *Commits) {
	c := &Commits{ctx: ctx}
	return context.WithValue(ctx, commitsKey{}, c), c
}

// DeferredCommits is the group that ctx defers commits to, or nil.
func DeferredCommits(ctx context.Context) *Commits {
	c, _ := ctx.Value(commitsKey{}).(*Commits)
	return c
}

// Context is the context deferred commits run under.
func (c *Commits) Context() context.Context { return c.ctx }

// Go runs commit in the background as one of the group.
func (c *Commits) Go(commit func() error) {
	c.mu.Lock()
	i := len(c.errs)
	c.errs = append(c.errs, nil)
	c.mu.Unlock()
	c.wg.Go(func() {
		err := commit()
		c.mu.Lock()
		c.errs[i] = err
		c.mu.Unlock()
	})
}

// Wait returns once every commit started so far has finished, with their
// errors in the order the commits were started.
func (c *Commits) Wait() error {
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.errs...)
}
