package filesystem

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/internal/envelope"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// Reader reads a filesystem snapshot; see snapshot.Reader.
type Reader struct {
	dir      chkdir.Dir
	metaURI  string
	snap     *snapshot.Snapshot
	layouts  map[*snapshot.Subtask]*subtaskLayout
	recorded string // the format _metadata names
}

// Open reads and validates the _metadata of the snapshot p designates in
// st (a snapshot directory, a job directory's latest checkpoint, or a
// _metadata file).
func Open(ctx context.Context, st storage.Storage, p string, _ snapshot.OpenOptions) (*Reader, error) {
	d, err := chkdir.ResolveIn(ctx, st, p)
	if err != nil {
		return nil, err
	}
	m, err := readMetadata(ctx, d)
	if err != nil {
		return nil, err
	}
	r := &Reader{dir: d, metaURI: st.URI(d.Metadata()), snap: m.Snapshot, layouts: map[*snapshot.Subtask]*subtaskLayout{}}
	if err := validate(m, r.metaURI); err != nil {
		return nil, err
	}
	d.Describe(m.Snapshot)
	r.recorded, m.Snapshot.Format = m.Snapshot.Format, Name
	for _, ref := range m.files() {
		if _, err := d.RefPath(ref); err != nil {
			return nil, err
		}
	}
	for i, op := range m.Snapshot.Operators {
		for j, sub := range op.Subtasks {
			r.layouts[sub] = &m.Layouts[i][j]
		}
	}
	return r, nil
}

// Snapshot is the snapshot's metadata.
func (r *Reader) Snapshot() *snapshot.Snapshot { return r.snap }

// RecordedFormat is the format _metadata names; see
// snapshot.FormatRecorder.
func (r *Reader) RecordedFormat() string { return r.recorded }

// FollowedFiles lists the files the layout of a subtask's state refers
// to, which reads follow; see snapshot.FileFollower.
func (r *Reader) FollowedFiles(op *snapshot.Operator, subtask int) ([]snapshot.FileRef, error) {
	_, l, err := r.subtask(op, subtask)
	if err != nil {
		return nil, err
	}
	return l.files(), nil
}

// Close releases nothing: files are opened per call.
func (r *Reader) Close() error { return nil }

// subtask finds a subtask of op (an operator of r.Snapshot(), or one with
// the same label and id) and its layout.
func (r *Reader) subtask(op *snapshot.Operator, index int) (*snapshot.Subtask, *subtaskLayout, error) {
	if op == nil {
		return nil, nil, fmt.Errorf("%w: nil operator", snapshot.ErrNotFound)
	}
	if !slices.Contains(r.snap.Operators, op) {
		own, ok := r.snap.Operator(op.Label())
		if !ok || (op.ID != "" && own.ID != op.ID) {
			return nil, nil, fmt.Errorf("%w: operator %q in %q", snapshot.ErrNotFound, op.Label(), r.dir.URI())
		}
		op = own
	}
	for _, sub := range op.Subtasks {
		if sub.Index == index {
			return sub, r.layouts[sub], nil
		}
	}
	return nil, nil, fmt.Errorf("%w: operator %q has no subtask %d in %q", snapshot.ErrNotFound, op.Label(), index, r.dir.URI())
}

// blobFile is an open blob: a file or inline bytes.
type blobFile struct {
	io.ReaderAt
	name  string
	close func() error
}

// openBlob opens b, checking a file's size against the recorded one.
func (r *Reader) openBlob(ctx context.Context, b *blob, what string) (*blobFile, error) {
	if b.File == "" {
		return &blobFile{ReaderAt: bytes.NewReader(b.Inline), name: r.metaURI + " (inline " + what + ")", close: func() error { return nil }}, nil
	}
	f, err := r.dir.Open(ctx, b.File)
	if err != nil {
		return nil, err
	}
	if f.Size() != b.Size {
		f.Close()
		return nil, snapshot.Corrupt(f.Name(), min(f.Size(), b.Size), "%s file is %d bytes, %s says %d", what, f.Size(), chkdir.MetadataFile, b.Size)
	}
	return &blobFile{ReaderAt: f, name: f.Name(), close: f.Close}, nil
}

// readBlob reads a whole blob (its size is validated) and checks its CRC.
func (r *Reader) readBlob(ctx context.Context, b *blob, what string) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	f, err := r.openBlob(ctx, b, what)
	if err != nil {
		return nil, err
	}
	defer f.close()
	buf := make([]byte, b.Size)
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("%q: %w", f.name, err)
	}
	if got := crc32.Checksum(buf, envelope.Castagnoli); got != b.CRC32C {
		return nil, snapshot.Corrupt(f.name, -1, "%s checksum mismatch: recorded crc32c %08x, computed %08x", what, b.CRC32C, got)
	}
	return buf, nil
}

// Raw returns the subtask's raw keyed and raw operator state.
func (r *Reader) Raw(ctx context.Context, op *snapshot.Operator, subtask int) (snapshot.RawState, error) {
	_, l, err := r.subtask(op, subtask)
	if err != nil {
		return snapshot.RawState{}, err
	}
	var raw snapshot.RawState
	if raw.Keyed, err = r.readBlob(ctx, l.RawKeyed, "raw keyed state"); err != nil {
		return snapshot.RawState{}, err
	}
	if raw.Operator, err = r.readBlob(ctx, l.RawOperator, "raw operator state"); err != nil {
		return snapshot.RawState{}, err
	}
	return raw, nil
}
