package snapshot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/storage"
)

// Reader gives streaming access to one snapshot's state.
type Reader interface {
	// Snapshot is the metadata, read when the Reader was opened.
	Snapshot() *Snapshot
	// Entries streams a subtask's keyed entries whose key group lies in
	// kgs, in ascending key-group order, reading only those key groups
	// where the format allows.
	Entries(ctx context.Context, op *Operator, subtask int, kgs keygroup.Range) Entries
	// Elements streams a subtask's operator-state elements, state by state
	// in descriptor order, each state's elements in list order.
	Elements(ctx context.Context, op *Operator, subtask int) Elements
	// Raw returns a subtask's raw (user-serialized) state.
	Raw(ctx context.Context, op *Operator, subtask int) (RawState, error)
	// Close releases files and temporary directories.
	Close() error
}

// Writer builds a snapshot. Nothing is visible at its location until
// Commit succeeds; Abort (or a crash) leaves nothing a Reader accepts.
//
// Subtask may be called from several goroutines at once, so that
// subtasks are written concurrently; each SubtaskWriter it returns is
// used by one goroutine at a time. Commit and Abort come after every
// SubtaskWriter's last call has returned. The snapshot committed does not
// depend on the order subtasks were started or closed in.
type Writer interface {
	// Subtask starts writing one subtask of op (op as it will appear in
	// the committed snapshot; its Subtasks need not be filled in).
	Subtask(ctx context.Context, op *Operator, index int, kgs keygroup.Range) (SubtaskWriter, error)
	// Commit writes the metadata last and atomically. Subtasks' figures
	// and files are filled in from what was written.
	Commit(ctx context.Context, s *Snapshot) error
	// Abort discards everything written.
	Abort(ctx context.Context) error
}

// SubtaskWriter receives one subtask's state.
type SubtaskWriter interface {
	// Entry adds a keyed entry. Entries come in non-decreasing key-group
	// order; each must lie in the subtask's key-group range.
	Entry(e *Entry) error
	// Element appends an element to an operator state's list.
	Element(state string, value []byte) error
	// Raw sets the subtask's raw state.
	Raw(raw RawState) error
	// Close finishes the subtask; its figures go into the snapshot on Commit.
	Close() error
}

// OpenOptions tune how a snapshot is opened.
type OpenOptions struct {
	// PathMap rewrites absolute file references: each OLD prefix -> NEW.
	PathMap map[string]string
	// TempDir is where formats that must unpack files put them.
	TempDir string
}

// WriteOptions tune how a snapshot is written.
type WriteOptions struct {
	// Force replaces an existing snapshot at the location.
	Force bool
	// StateSizeCap limits the state per subtask (memory format); 0 = default.
	StateSizeCap int64
	// InlineThreshold is the size below which state is kept inside the
	// metadata file (filesystem format); 0 = default, negative = never.
	InlineThreshold int64
}

// Format is one registered snapshot format.
type Format struct {
	// Name is the canonical name; Aliases are also accepted (Flink's
	// backend config names, for example).
	Name    string
	Aliases []string
	// Summary is a one-line description for help texts.
	Summary string
	// Probe reports whether location holds a snapshot of this format.
	Probe func(ctx context.Context, location string) (bool, error)
	// Open reads the snapshot at location.
	Open func(ctx context.Context, location string, opts OpenOptions) (Reader, error)
	// Create starts a new snapshot at location; nil for read-only formats.
	Create func(ctx context.Context, location string, opts WriteOptions) (Writer, error)
	// StateSizeCap is the default limit of state per subtask the format
	// accepts when writing; 0 for none.
	StateSizeCap int64
}

var (
	formatsMu sync.RWMutex
	formats   []*Format
)

// Register adds a format. Formats are probed in registration order.
func Register(f *Format) {
	formatsMu.Lock()
	defer formatsMu.Unlock()
	formats = append(formats, f)
}

// Formats lists the registered formats.
func Formats() []*Format {
	formatsMu.RLock()
	defer formatsMu.RUnlock()
	return slices.Clone(formats)
}

// LookupFormat finds a format by name or alias.
func LookupFormat(name string) (*Format, error) {
	n := strings.ToLower(name)
	for _, f := range Formats() {
		if f.Name == n || slices.Contains(f.Aliases, n) {
			return f, nil
		}
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownFormat, name, strings.Join(formatNames(), ", "))
}

// WritableFormatNames lists names and aliases of formats that can be written.
func WritableFormatNames() []string {
	var out []string
	for _, f := range Formats() {
		if f.Create != nil {
			out = append(out, f.Name)
			out = append(out, f.Aliases...)
		}
	}
	return out
}

// Detect finds the format of the snapshot at location. When no format
// recognizes it, the error says why: nothing there, an empty or
// unrecognized file, or a directory without a snapshot.
func Detect(ctx context.Context, location string) (*Format, error) {
	var probeErr error
	for _, f := range Formats() {
		ok, err := f.Probe(ctx, location)
		if err != nil {
			// "Nothing of mine there" is a no, not a failure.
			if !errors.Is(err, ErrNotFound) && !errors.Is(err, storage.ErrNotFound) {
				probeErr = cmp.Or(probeErr, err)
			}
			continue
		}
		if ok {
			return f, nil
		}
	}
	st, path, err := storage.Resolve(ctx, location)
	if err != nil {
		return nil, err
	}
	info, err := st.Stat(ctx, path)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, fmt.Errorf("%w: %q does not exist", ErrNotFound, location)
	case err != nil:
		return nil, fmt.Errorf("%q: %w", location, err)
	case probeErr != nil:
		return nil, probeErr
	case info.IsDir:
		if meta, err := st.Stat(ctx, path+"/_metadata"); err == nil && !meta.IsDir {
			return nil, Corrupt(location+"/_metadata", 0, "unrecognized _metadata: its first bytes match no snapshot format (%s)", strings.Join(formatNames(), ", "))
		}
		return nil, fmt.Errorf("%w: %q is a directory without a snapshot (no _metadata, no complete chk-N)", ErrNotFound, location)
	case info.Size == 0:
		return nil, Corrupt(location, 0, "empty file, not a snapshot")
	}
	return nil, Corrupt(location, 0, "unrecognized file: its first bytes match no snapshot format (%s)", strings.Join(formatNames(), ", "))
}

func formatNames() []string {
	var names []string
	for _, f := range Formats() {
		names = append(names, f.Name)
	}
	return names
}

// Open detects the format of location and opens it.
func Open(ctx context.Context, location string, opts OpenOptions) (Reader, error) {
	f, err := Detect(ctx, location)
	if err != nil {
		return nil, err
	}
	return f.Open(ctx, location, opts)
}
