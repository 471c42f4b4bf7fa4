package rocksstate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/storage"
)

// Registry counts, for every shared file, the retained checkpoints that
// reference it. A shared file may be deleted exactly when its count drops
// to zero. Paths are storage paths.
type Registry struct {
	refs        map[string]int
	checkpoints map[int64][]string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{refs: map[string]int{}, checkpoints: map[int64][]string{}}
}

// Register records that checkpoint id references the shared files. A
// checkpoint registered twice is an error.
func (r *Registry) Register(id int64, shared []string) error {
	if _, ok := r.checkpoints[id]; ok {
		return fmt.Errorf("rocksdb: checkpoint %d is already registered", id)
	}
	files := slices.Clone(shared)
	slices.Sort(files)
	files = slices.Compact(files)
	for _, f := range files {
		r.refs[f]++
	}
	r.checkpoints[id] = files
	return nil
}

// Release forgets checkpoint id and returns the shared files no retained
// checkpoint references any more, sorted.
func (r *Registry) Release(id int64) []string {
	var free []string
	for _, f := range r.checkpoints[id] {
		if r.refs[f]--; r.refs[f] <= 0 {
			delete(r.refs, f)
			free = append(free, f)
		}
	}
	delete(r.checkpoints, id)
	return free
}

// Referenced reports whether a retained checkpoint references the file.
func (r *Registry) Referenced(shared string) bool { return r.refs[shared] > 0 }

// Checkpoints lists the retained checkpoint ids, oldest first.
func (r *Registry) Checkpoints() []int64 {
	ids := make([]int64, 0, len(r.checkpoints))
	for id := range r.checkpoints {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Files lists every referenced shared file, sorted.
func (r *Registry) Files() []string {
	out := make([]string, 0, len(r.refs))
	for f := range r.refs {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// LoadRegistry rebuilds the registry of a job directory from the
// _metadata of its completed checkpoints (chk-N directories without a
// _metadata are incomplete and ignored).
func LoadRegistry(ctx context.Context, st storage.Storage, jobDir string) (*Registry, error) {
	r := NewRegistry()
	cps, err := chkdir.List(ctx, st, jobDir)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return r, nil
		}
		return nil, err
	}
	for _, cp := range cps {
		d := chkdir.At(st, cp.Path)
		m, err := rocksdbformat.ReadMetadata(ctx, d)
		if err != nil {
			return nil, err
		}
		shared, err := m.SharedPaths(d)
		if err != nil {
			return nil, err
		}
		if err := r.Register(cp.ID, shared); err != nil {
			return nil, err
		}
	}
	return r, nil
}
