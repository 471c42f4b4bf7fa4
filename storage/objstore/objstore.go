// Package objstore is storage.Storage on an object store that has no
// directories and no rename, only objects under keys, written whole and
// conditionally: Google Cloud Storage and Azure Blob Storage, each a
// Bucket. Directories are key prefixes, with a marker object for an empty
// one; a file appears whole under its final name when its upload
// completes, so nothing needs renaming; claims are objects written with
// the store's preconditions.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/stateutil/stateutil/storage"
)

// ErrPrecondition is what a Bucket answers when the condition of a write,
// read or delete does not hold.
var ErrPrecondition = errors.New("precondition failed")

// Object describes one object, or a directory (Dir): a marker object, or
// a prefix of a delimited listing.
type Object struct {
	Key     string
	Size    int64
	ModTime time.Time
	// Version names this version of the object in a Cond: a generation,
	// an ETag.
	Version string
	Dir     bool
	// Now is the server's clock when it answered (Head and Get), zero if
	// it did not say.
	Now time.Time
}

// Cond is the precondition of a write or a delete; the zero Cond is none.
type Cond struct {
	Absent  bool   // no object is at the key
	Version string // the object at the key is this version
}

// Bucket is one bucket (or container) of an object store. Its errors wrap
// storage.ErrNotFound for a missing object or bucket, ErrPrecondition for
// a Cond that does not hold, and storage.ErrPermission or
// storage.ErrUnavailable where those fit, and say what the store said.
type Bucket interface {
	// URI renders key as a location a user can pass back.
	URI(key string) string
	// Head describes the object at key.
	Head(ctx context.Context, key string) (Object, error)
	// Get opens n bytes of the object at key from off (to its end if n <
	// 0), of version only, when it is set. The Object describes the whole
	// object; an empty one reads as empty from 0.
	Get(ctx context.Context, key, version string, off, n int64) (Object, io.ReadCloser, error)
	// List calls fn with the objects whose keys start with prefix, in key
	// order, until fn returns an error. Delimited, what lies below a
	// further "/" is one Dir object per name (its key without the "/").
	// max > 0 is the number wanted; fewer or more may come.
	List(ctx context.Context, prefix string, delimited bool, max int, fn func(Object) error) error
	// Put writes data as the object at key if c holds, and returns its
	// version.
	Put(ctx context.Context, key string, data []byte, c Cond) (string, error)
	// Upload starts writing a large object to key: nothing is there until
	// the upload commits.
	Upload(ctx context.Context, key string) Upload
	// Mkdir writes the marker of the directory key.
	Mkdir(ctx context.Context, key string) error
	// Delete deletes the object at key if c holds.
	Delete(ctx context.Context, key string, c Cond) error
	// Copy copies the object at from to the key to, on the server.
	Copy(ctx context.Context, from, to string) error
}

// Upload is a large object going up. Write may block while earlier bytes
// are sent; its errors, and Commit's, are the upload's.
type Upload interface {
	io.Writer
	// Commit puts the object in place.
	Commit() error
	// Abort discards the upload.
	Abort() error
}

// Options are what a store takes besides its Bucket.
type Options struct {
	// Dirs remembers the directories seen; the stores of one bucket share
	// it (NewDirs).
	Dirs *Dirs
	// ClaimTTLVar names the variable that overrides ClaimTTL.
	ClaimTTLVar string
	// Slots bound the commits finishing in the background at once
	// (storage.DeferCommits), each holding a file's last buffer, across
	// the stores that share them (NewSlots).
	Slots chan struct{}
}

// Tuning. Variables so that tests and callers with unusual stores can
// adjust them before the first write.
var (
	// PutLimit is the size up to which a file is held in memory and sent
	// with one request on Commit; a larger one is an Upload.
	PutLimit = 8 << 20
	// ClaimTTL is how long a claim stays valid without a refresh; its
	// holder refreshes it every ClaimTTL/4.
	ClaimTTL = 60 * time.Second
	// Deferred is the number of Slots NewSlots makes.
	Deferred = 10
)

// NewSlots returns Deferred slots for commits in the background.
func NewSlots() chan struct{} { return make(chan struct{}, max(1, Deferred)) }

// New returns the storage of b.
func New(b Bucket, o Options) storage.Storage {
	if o.Dirs == nil {
		o.Dirs = NewDirs()
	}
	if o.Slots == nil {
		o.Slots = NewSlots()
	}
	return &store{b: b, dirs: o.Dirs, ttlVar: o.ClaimTTLVar, slots: o.Slots}
}

type store struct {
	b      Bucket
	dirs   *Dirs
	ttlVar string
	slots  chan struct{}
}

func (s *store) URI(p string) string { return s.b.URI(key(p)) }

// key is the object key of a storage path: no leading slash, "" for the
// bucket's root.
func key(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

// dirPrefix is the prefix of what lies below key: "key/", or "" at the root.
func dirPrefix(k string) string {
	if k == "" {
		return ""
	}
	return k + "/"
}

// wrap names op and the path in err.
func (s *store) wrap(op, p string, err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	return fmt.Errorf("%s %s: %w", op, s.URI(p), err)
}

func notFound(what string) error { return fmt.Errorf("%w: %s", storage.ErrNotFound, what) }

// Dirs are the directories of one bucket this process made or saw (with
// a time for Stat), which saves the requests that a format's probes,
// MkdirAll and Create would otherwise repeat; RemoveAll and Remove forget
// them.
type Dirs struct{ m sync.Map }

// NewDirs returns an empty set.
func NewDirs() *Dirs { return &Dirs{} }

func (d *Dirs) known(k string) bool {
	_, ok := d.m.Load(k)
	return ok
}

func (d *Dirs) time(k string) (time.Time, bool) {
	v, ok := d.m.Load(k)
	if !ok {
		return time.Time{}, false
	}
	return v.(time.Time), true
}

func (d *Dirs) remember(k string) { d.rememberAt(k, time.Now()) }

func (d *Dirs) rememberAt(k string, t time.Time) {
	for ; k != "" && k != "."; k = path.Dir(k) {
		if _, loaded := d.m.LoadOrStore(k, t); loaded {
			return
		}
	}
}

// forget drops k and everything below it.
func (d *Dirs) forget(k string) {
	d.m.Range(func(n, _ any) bool {
		if name := n.(string); k == "" || name == k || strings.HasPrefix(name, k+"/") {
			d.m.Delete(n)
		}
		return true
	})
}
