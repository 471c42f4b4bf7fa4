package snapshot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/stateutil/stateutil/storage"
)

// Registry is what one process knows: its snapshot formats, in the order
// they are probed, the codecs that decode state, and the storage schemes.
// cmd builds one at start; nothing registers itself. A Registry is filled
// before use and only read after, so it is safe for concurrent readers.
type Registry struct {
	Storage *storage.Registry
	Codecs  *Codecs
	formats []*Format
}

// NewRegistry returns a registry with no formats, stateutil's own codecs
// and the given storages.
func NewRegistry(st *storage.Registry) *Registry {
	return &Registry{Storage: st, Codecs: NewCodecs()}
}

// Register adds a format; formats are probed in the order registered. A
// name or alias registered twice is a programming error and panics.
func (r *Registry) Register(f *Format) {
	for _, name := range append([]string{f.Name}, f.Aliases...) {
		if other, err := r.Lookup(name); err == nil {
			panic(fmt.Sprintf("snapshot: format name %q of %q is taken by %q", name, f.Name, other.Name))
		}
	}
	r.formats = append(r.formats, f)
}

// Formats lists the registered formats in probe order.
func (r *Registry) Formats() []*Format { return slices.Clone(r.formats) }

// Lookup finds a format by name or alias.
func (r *Registry) Lookup(name string) (*Format, error) {
	n := strings.ToLower(name)
	for _, f := range r.formats {
		if f.Name == n || slices.Contains(f.Aliases, n) {
			return f, nil
		}
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownFormat, name, strings.Join(r.names(), ", "))
}

// Writable finds a format that can be written by name or alias.
func (r *Registry) Writable(name string) (*Format, error) {
	f, err := r.Lookup(name)
	if err != nil {
		return nil, err
	}
	if f.Create == nil {
		return nil, fmt.Errorf("%w: stateutil reads %q but does not write it; writable formats: %s", ErrReadOnly, f.Name, strings.Join(r.WritableNames(), ", "))
	}
	return f, nil
}

// WritableNames lists names and aliases of formats that can be written.
func (r *Registry) WritableNames() []string {
	var out []string
	for _, f := range r.formats {
		if f.Create != nil {
			out = append(out, f.Name)
			out = append(out, f.Aliases...)
		}
	}
	return out
}

func (r *Registry) names() []string {
	var names []string
	for _, f := range r.formats {
		names = append(names, f.Name)
	}
	return names
}

// Detect finds the format of the snapshot at location, and the storage
// and path it lies at. When no format recognizes it, the error says why:
// nothing there, an empty or unrecognized file, a file that is not a
// regular file, or a directory without a snapshot.
func (r *Registry) Detect(ctx context.Context, location string) (*Format, storage.Storage, string, error) {
	st, path, err := r.Storage.Resolve(ctx, location)
	if err != nil {
		return nil, nil, "", err
	}
	f, err := r.DetectIn(ctx, st, path, location)
	if err != nil {
		return nil, nil, "", err
	}
	return f, st, path, nil
}

// DetectIn is Detect of a path in a storage already resolved; location
// names it in errors.
func (r *Registry) DetectIn(ctx context.Context, st storage.Storage, path, location string) (*Format, error) {
	info, err := st.Stat(ctx, path)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, fmt.Errorf("%w: %q does not exist", ErrNotFound, location)
	case err != nil:
		return nil, fmt.Errorf("%q: %w", location, err)
	case info.Special:
		return nil, fmt.Errorf("%q: %w, not a snapshot", location, storage.ErrNotRegular)
	}
	var probeErr error
	for _, f := range r.formats {
		ok, err := f.Probe(ctx, st, path)
		if err != nil {
			// "Nothing of mine there" is a no, not a failure.
			if !errors.Is(err, ErrNotFound) {
				probeErr = cmp.Or(probeErr, err)
			}
			continue
		}
		if ok {
			return f, nil
		}
	}
	switch {
	case probeErr != nil:
		return nil, probeErr
	case info.IsDir:
		meta, err := st.Stat(ctx, path+"/_metadata")
		switch {
		case err == nil && meta.Special:
			return nil, fmt.Errorf("%q: %w, not a snapshot's _metadata", location+"/_metadata", storage.ErrNotRegular)
		case err == nil && !meta.IsDir:
			return nil, Corrupt(location+"/_metadata", 0, "unrecognized _metadata: its first bytes match no snapshot format (%s)", strings.Join(r.names(), ", "))
		}
		return nil, fmt.Errorf("%w: %q is a directory without a snapshot (no _metadata, no complete chk-N)", ErrNotFound, location)
	case info.Size == 0:
		return nil, Corrupt(location, 0, "empty file, not a snapshot")
	}
	return nil, Corrupt(location, 0, "unrecognized file: its first bytes match no snapshot format (%s)", strings.Join(r.names(), ", "))
}

// Open detects the format of location and opens it.
func (r *Registry) Open(ctx context.Context, location string, opts OpenOptions) (Reader, error) {
	f, st, path, err := r.Detect(ctx, location)
	if err != nil {
		return nil, err
	}
	if opts.Storage == nil {
		opts.Storage = r.Storage
	}
	return f.Open(ctx, st, path, opts)
}

// Create starts a snapshot of format f at location.
func (r *Registry) Create(ctx context.Context, f *Format, location string, opts WriteOptions) (Writer, error) {
	if f.Create == nil {
		return nil, fmt.Errorf("%w: stateutil reads %q but does not write it", ErrReadOnly, f.Name)
	}
	st, path, err := r.Storage.Resolve(ctx, location)
	if err != nil {
		return nil, err
	}
	return f.Create(ctx, st, path, opts)
}
