package flink

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"path"
	"strconv"
	"sync"

	"github.com/stateutil/stateutil/backends/flink/internal/carried"
	"github.com/stateutil/stateutil/backends/flink/internal/sidecar"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/backends/internal/ledger"
	"github.com/stateutil/stateutil/internal/envelope"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// The flink writer: a canonical (unified-format) savepoint, the layout
// every Flink state backend restores since 1.13. A self-contained
// directory: `_metadata`, written last, and per subtask one keyed state
// file and one operator state file, referenced by paths relative to
// `_metadata` (handle type 6), so the directory can be moved anywhere.
//
// It writes what it read from Flink: the descriptors' serializer
// snapshots, coordinator and master state and raw state come from what
// the reader carried (internal/carried); a snapshot of another format carries
// none of it and is refused.

// ErrNotFromFlink reports a snapshot the flink writer cannot write: one
// not read from Flink, which lacks the serializer snapshots Flink needs.
var ErrNotFromFlink = fmt.Errorf("%w: the flink writer writes only state read from a Flink snapshot", snapshot.ErrUnsupportedVersion)

// writer is the snapshot.Writer of the flink format.
type writer struct {
	st      storage.Storage
	dir     string
	version int // 0: the source's
	// operatorHeader is the OperatorBackendSerializationProxy version of
	// the operator state files; 0: as operatorHeaderFor chooses.
	operatorHeader int

	ledger ledger.Ledger[*subtaskOut]

	written ledger.Files
	// token names the files of a staging writer (WriteOptions.Staging),
	// so that the writers of other shards, or another run of this one,
	// never collide with them; "" for others.
	token      string
	mu         sync.Mutex
	done       bool
	createdDir bool
}

// subtaskOut is what one subtask wrote: its handles, their paths relative
// to the savepoint directory, and its files with their sizes and CRC32C
// by those paths, for the checksum manifest.
type subtaskOut struct {
	keyed, rawKeyed       *metadata.KeyedHandle
	operator, rawOperator *metadata.OperatorStateHandle
	// inputs and outputs are the channel state handles carried.
	inputs, outputs []*metadata.ChannelHandle
	// files are the state files written, with their CRC32C, for a
	// staging writer's record.
	files []snapshot.FileRef
}

func create(ctx context.Context, st storage.Storage, p string, opts snapshot.WriteOptions) (snapshot.Writer, error) {
	w := &writer{st: st, dir: p}
	if opts.Staging {
		var tok [4]byte
		_, _ = rand.Read(tok[:])
		w.token = hex.EncodeToString(tok[:])
	}
	if opts.ReaderVersion != "" {
		r, err := ReleaseOf(opts.ReaderVersion)
		if err != nil {
			return nil, err
		}
		w.version, w.operatorHeader = r.Metadata, r.OperatorHeader
	}
	if info, err := st.Stat(ctx, path.Join(p, "_metadata")); err == nil && !info.IsDir && !opts.Force {
		return nil, fmt.Errorf("%q already holds a savepoint (force to replace it): %w", st.URI(p), storage.ErrExist)
	}
	if _, err := st.Stat(ctx, p); errors.Is(err, storage.ErrNotFound) {
		w.createdDir = true
	}
	if err := st.MkdirAll(ctx, p); err != nil {
		return nil, err
	}
	return w, nil
}

// Subtask starts writing subtask index of op.
func (w *writer) Subtask(ctx context.Context, op *snapshot.Operator, index int, kgs keygroup.Range) (snapshot.SubtaskWriter, error) {
	co, err := carried.OperatorOf(op)
	switch {
	case err != nil:
		return nil, err
	case co == nil:
		return nil, fmt.Errorf("operator %q: %w (this one carries no Flink serializer snapshots)", op.Label(), ErrNotFromFlink)
	}
	seq, err := w.ledger.Start(op, index, kgs)
	if err != nil {
		return nil, err
	}
	return newSubtaskWriter(ctx, w, op, co, seq, index, kgs)
}

// file starts a state file of the savepoint; once for a large one written
// once (storage.CreateOnce: on local disk, around the page cache).
func (w *writer) file(ctx context.Context, name string, once bool) (*stateFile, error) {
	create := w.st.Create
	if once {
		create = func(ctx context.Context, p string) (storage.Pending, error) { return storage.CreateOnce(ctx, w.st, p) }
	}
	p, err := create(ctx, path.Join(w.dir, name))
	if err != nil {
		return nil, err
	}
	return newStateFile(p, name), nil
}

// Commit writes the checksum manifest (sidecar.go), then `_metadata`:
// every operator of s with the handles its subtasks wrote.
func (w *writer) Commit(ctx context.Context, s *snapshot.Snapshot) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return errors.New("flink writer: already committed or aborted")
	}
	outs, err := w.ledger.Commit(s)
	if err != nil {
		return fmt.Errorf("flink writer: %w", err)
	}
	m, props, err := w.assemble(s, outs)
	if err != nil {
		return err
	}
	data, err := metadata.EncodeMetadata(m, props)
	if err != nil {
		return err
	}
	files := []snapshot.FileRef{{Path: "_metadata", Size: int64(len(data)), CRC32C: crc32.Checksum(data, envelope.Castagnoli)}}
	for _, op := range outs {
		for _, so := range op {
			if so != nil {
				files = append(files, so.files...)
			}
		}
	}
	if err := storage.WriteFile(ctx, w.st, path.Join(w.dir, ChecksumsFile), sidecar.Encode(files)); err != nil {
		return err
	}
	w.written.Add(ChecksumsFile)
	if err := storage.WriteFile(ctx, w.st, path.Join(w.dir, "_metadata"), data); err != nil {
		return err
	}
	w.done = true
	s.Format = Format.Name
	return nil
}

// assemble builds the `_metadata` of s.
func (w *writer) assemble(s *snapshot.Snapshot, outs [][]*subtaskOut) (*metadata.Metadata, []byte, error) {
	cs := carried.SnapshotOf(s)
	if cs == nil {
		return nil, nil, fmt.Errorf("snapshot: %w", ErrNotFromFlink)
	}
	m := &metadata.Metadata{Version: w.version, CheckpointID: s.CheckpointID, MasterStates: cs.MasterStates}
	if m.Version == 0 {
		m.Version = min(max(cs.MetadataVersion, 4), 6)
	}
	ids := map[metadata.OperatorID]string{}
	for i, op := range s.Operators {
		co, err := carried.OperatorOf(op)
		if err != nil || co == nil {
			return nil, nil, fmt.Errorf("operator %q: %w", op.Label(), ErrNotFromFlink)
		}
		fo, err := outputOperator(op, co)
		if err != nil {
			return nil, nil, err
		}
		if other, dup := ids[fo.ID]; dup {
			return nil, nil, fmt.Errorf("operators %q and %q would both have id %s", other, op.Label(), fo.ID)
		}
		ids[fo.ID] = op.Label()
		for j, so := range outs[i] {
			if so == nil {
				continue
			}
			fo.Subtasks = append(fo.Subtasks, &metadata.SubtaskState{Index: j, ManagedKeyedState: so.keyed, RawKeyedState: so.rawKeyed,
				ManagedOperatorState: so.operator, RawOperatorState: so.rawOperator,
				InputChannels: so.inputs, ResultSubpartitions: so.outputs})
		}
		m.Operators = append(m.Operators, fo)
	}
	name, action, forced := "Savepoint", "NONE", true
	if cs.Savepoint && cs.PostAction != "" && cs.TypeName != "" {
		name, action, forced = cs.TypeName, cs.PostAction, cs.Flags["forced"]
	}
	props, err := metadata.SavepointProperties(name, action, forced)
	return m, props, err
}

// outputOperator is op as `_metadata` records it: its id (recomputed from
// a new uid, as Flink derives it; or set explicitly), uid, name,
// parallelism and coordinator state.
func outputOperator(op *snapshot.Operator, co *carried.Operator) (*metadata.OperatorState, error) {
	fo := &metadata.OperatorState{UID: op.UID, Name: op.Name, Parallelism: op.Parallelism, MaxParallelism: op.MaxParallelism}
	id := op.ID
	if id == co.ID && op.UID != co.UID && op.UID != "" {
		id = keygroup.OperatorIDOfUID(op.UID)
		if co.Name == "" || co.Name == co.UID {
			fo.Name = op.UID
		}
	}
	if err := parseOperatorID(id, &fo.ID); err != nil {
		return nil, fmt.Errorf("operator %q: %w", op.Label(), err)
	}
	if co.HasCoordinator {
		fo.CoordinatorState = &metadata.StreamHandle{Type: metadata.HandleByteStream, Name: co.CoordinatorName, Data: co.CoordinatorData, Size: int64(len(co.CoordinatorData))}
	}
	fo.FullyFinished = co.FullyFinished && op.Parallelism == co.Parallelism
	if fo.FullyFinished {
		fo.CoordinatorState = nil
	}
	return fo, nil
}

// ParseOperatorID reads an OperatorID in its hex form (32 digits).
func parseOperatorID(s string, id *metadata.OperatorID) error {
	if len(s) != 32 {
		return fmt.Errorf("operator id %q is not 32 hex digits", s)
	}
	for i := range id {
		v, err := strconv.ParseUint(s[2*i:2*i+2], 16, 8)
		if err != nil {
			return fmt.Errorf("operator id %q is not 32 hex digits", s)
		}
		id[i] = byte(v)
	}
	return nil
}

// Abort removes every file written.
func (w *writer) Abort(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil
	}
	w.done = true
	w.ledger.Abort()
	return w.written.Remove(ctx, w.st, w.dir, w.createdDir)
}

// operatorHeaderFor is the operator state header version written for an
// operator carried as co: the newest the Flink line asked for reads
// (Release.OperatorHeader); without one, 5 for a source older than the
// current version (a Flink 1.15 to 1.17 savepoint, whose `_metadata`
// version 1.18 to 1.20 share, and whose Flink reads no newer), else the
// current version. Version 6 only adds a compression flag, which stateutil
// writes false.
func (w *writer) operatorHeaderFor(co *carried.Operator) int {
	switch {
	case w.operatorHeader != 0:
		return w.operatorHeader
	case co.OperatorVersion > 0 && co.OperatorVersion < carried.OperatorHeaderVersion:
		return 5
	}
	return carried.OperatorHeaderVersion
}
