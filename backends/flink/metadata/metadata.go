package metadata

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/stateutil/stateutil/backends/flink/internal/javaser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/storage"
)

// MetadataMagic is the int that starts every `_metadata` file Flink 1.3+ writes.
const MetadataMagic = 0x4960672D

// masterStateMagic starts every master state entry.
const masterStateMagic = -0x3694E96A // 0xC96B1696 as a Java int

// Versions of `_metadata` this package reads.
const (
	MinMetadataVersion = 2
	MaxMetadataVersion = 7
)

// maxMetadataFile caps the size of a `_metadata` file ReadMetadata loads.
const maxMetadataFile = 1 << 30

// Metadata is a decoded `_metadata` file.
type Metadata struct {
	// File is the path it was read from (or the name given to ParseMetadata).
	File         string           `json:"file"`
	Version      int              `json:"version"`
	CheckpointID int64            `json:"checkpointId"`
	MasterStates []MasterState    `json:"masterStates"`
	Operators    []*OperatorState `json:"operators"`
	// Properties is the trailing CheckpointProperties object (version 4+).
	Properties *CheckpointProperties `json:"properties,omitempty"`
	// NullProperties is set when that object is a serialized null, as the
	// State Processor API writes it.
	NullProperties bool `json:"nullProperties,omitempty"`
	// Size is the number of bytes decoded, which is the whole file.
	Size int64 `json:"size"`
}

// MasterState is a named blob of master (JobManager) state.
type MasterState struct {
	Version int32  `json:"version"`
	Name    string `json:"name"`
	Data    []byte `json:"-"`
}

// OperatorID is the 16-byte id of an operator, as stored (lower part, then
// upper part, each big-endian).
type OperatorID [16]byte

// String is the hex form of the 16 bytes as they stand.
func (id OperatorID) String() string { return hex.EncodeToString(id[:]) }

// MarshalText renders the id as hex in JSON.
func (id OperatorID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// OperatorState is the state of one operator over all its subtasks.
type OperatorState struct {
	// Name and UID are stored from version 5 on ("" when unset).
	Name           string     `json:"name,omitempty"`
	UID            string     `json:"uid,omitempty"`
	ID             OperatorID `json:"id"`
	Parallelism    int        `json:"parallelism"`
	MaxParallelism int        `json:"maxParallelism"`
	// ChainLength is the unused legacy field of version 2 (always 1).
	ChainLength int `json:"-"`
	// CoordinatorState is the operator coordinator's state (version 3+).
	CoordinatorState *StreamHandle `json:"coordinatorState,omitempty"`
	// FullyFinished marks an operator whose subtasks had all finished: it has
	// no subtask states.
	FullyFinished bool            `json:"fullyFinished,omitempty"`
	Subtasks      []*SubtaskState `json:"subtasks"`
}

// SubtaskState is the state one subtask of an operator snapshotted.
type SubtaskState struct {
	Index int `json:"index"`
	// Finished marks a subtask that had finished; it has no state.
	Finished             bool                 `json:"finished,omitempty"`
	ManagedOperatorState *OperatorStateHandle `json:"managedOperatorState,omitempty"`
	RawOperatorState     *OperatorStateHandle `json:"rawOperatorState,omitempty"`
	ManagedKeyedState    *KeyedHandle         `json:"managedKeyedState,omitempty"`
	RawKeyedState        *KeyedHandle         `json:"rawKeyedState,omitempty"`
	InputChannels        []*ChannelHandle     `json:"inputChannels,omitempty"`
	ResultSubpartitions  []*ChannelHandle     `json:"resultSubpartitions,omitempty"`
	// RefCheckpointID is the checkpoint a regional checkpoint reused this
	// state from (version 7), or nil.
	RefCheckpointID *int64 `json:"refCheckpointId,omitempty"`
}

// IsSavepoint reports whether the properties say savepoint (false when the
// file has no properties, i.e. before version 4).
func (m *Metadata) IsSavepoint() bool { return m.Properties != nil && m.Properties.Savepoint }

// ReadMetadataFile reads the bytes of the `_metadata` file at path in st,
// and names it.
func ReadMetadataFile(ctx context.Context, st storage.Storage, path string) ([]byte, string, error) {
	f, err := st.Open(ctx, path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	name := st.URI(path)
	if f.Size() > maxMetadataFile {
		return nil, name, &wire.CorruptError{File: name, Offset: -1, Reason: fmt.Sprintf("file of %d bytes is larger than the %d a _metadata may have", f.Size(), maxMetadataFile)}
	}
	data := make([]byte, f.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, name, fmt.Errorf("reading %q: %w", name, err)
	}
	return data, name, nil
}

// decoder carries the reader and the format version through the handle
// decoders.
type decoder struct {
	r       *wire.Reader
	version int
	// subtaskRange, while a subtask's state is decoded, is the key-group
	// range Flink assigns that subtask: every keyed handle's must be it.
	subtaskRange *KeyGroupRange
}

// ParseMetadata decodes the bytes of a `_metadata` file; file names it in
// errors. The returned value shares memory with data (inline state).
func ParseMetadata(data []byte, file string) (*Metadata, error) {
	r := wire.NewReader(data, file, 0)
	magic := r.I32("magic number")
	if r.Err != nil {
		return nil, r.Err
	}
	if magic != MetadataMagic {
		return nil, &wire.CorruptError{File: file, Offset: 0, Reason: fmt.Sprintf("bad magic number 0x%08X, want 0x%08X", uint32(magic), MetadataMagic)}
	}
	version := int(r.I32("version"))
	if r.Err != nil {
		return nil, r.Err
	}
	if version < MinMetadataVersion || version > MaxMetadataVersion {
		return nil, wire.UnknownVersion(file, 4, "_metadata", version)
	}
	d := &decoder{r: r, version: version}
	m := &Metadata{File: file, Version: version}
	at := r.Pos()
	m.CheckpointID = r.I64("checkpoint id")
	if r.Err == nil && m.CheckpointID < 0 {
		r.FailAt(at, "negative checkpoint id %d", m.CheckpointID)
	}
	n := r.Count32(8, "master state count")
	for i := 0; i < n && r.Err == nil; i++ {
		m.MasterStates = append(m.MasterStates, d.masterState())
	}
	n = r.Count32(24, "operator count")
	m.Operators = make([]*OperatorState, 0, n)
	for i := 0; i < n && r.Err == nil; i++ {
		if op := d.operator(); op != nil {
			m.Operators = append(m.Operators, op)
		}
	}
	if version >= 4 && r.Err == nil {
		at := r.Pos()
		obj, used, classes, strs, err := javaser.Parse(data[r.Off:], file, at)
		if err != nil {
			return nil, err
		}
		r.Off += used
		// The State Processor API writes a null; Flink accepts it.
		m.NullProperties = obj == nil
		if !m.NullProperties {
			m.Properties = checkpointPropertiesFrom(obj, classes, strs)
			if m.Properties == nil {
				r.FailAt(at, "trailing Java object is not a CheckpointProperties")
			}
		}
	}
	if r.Err == nil && r.Remaining() > 0 {
		r.Fail("%d unexpected trailing bytes", r.Remaining())
	}
	if r.Err != nil {
		return nil, r.Err
	}
	m.Size = int64(len(data))
	return m, nil
}

func (d *decoder) masterState() MasterState {
	r := d.r
	at := r.Pos()
	if magic := r.I32("master state magic"); r.Err == nil && magic != masterStateMagic {
		r.FailAt(at, "bad master state magic 0x%08X", uint32(magic))
	}
	at = r.Pos()
	n := r.Count32(1, "master state length")
	if r.Err == nil && n == 0 {
		r.FailAt(at, "empty master state")
	}
	body := r.Take(n, "master state")
	if r.Err != nil {
		return MasterState{}
	}
	sub := wire.NewReader(body, r.File, r.Pos()-int64(n))
	ms := MasterState{Version: sub.I32("master state version"), Name: sub.UTF("master state name")}
	ms.Data = sub.Bytes32("master state data")
	if sub.Err == nil && sub.Remaining() > 0 {
		sub.Fail("%d trailing bytes in master state", sub.Remaining())
	}
	if sub.Err != nil {
		r.Err = sub.Err
	}
	return ms
}

func (d *decoder) operator() *OperatorState {
	r := d.r
	op := &OperatorState{}
	if d.version >= 5 {
		op.Name = r.UTF("operator name")
		op.UID = r.UTF("operator uid")
	}
	copy(op.ID[:], r.Take(16, "operator id"))
	pat := r.Pos()
	op.Parallelism = int(r.I32("parallelism"))
	op.MaxParallelism = int(r.I32("max parallelism"))
	// Every key-group range divides by both: refuse them here, where the
	// offset is known, before anything computes with them.
	switch {
	case r.Err != nil:
	case op.MaxParallelism < 1 || op.MaxParallelism > keygroup.UpperBoundMaxParallelism:
		r.FailAt(pat+4, "operator %s: max parallelism %d is outside 1..%d", op.ID, op.MaxParallelism, keygroup.UpperBoundMaxParallelism)
	case op.Parallelism < 1 || op.Parallelism > op.MaxParallelism:
		r.FailAt(pat, "operator %s: parallelism %d is outside 1..%d (its max parallelism)", op.ID, op.Parallelism, op.MaxParallelism)
	}
	if d.version == 2 {
		op.ChainLength = int(r.I32("chain length"))
		n := r.Count32(4, "subtask count")
		for i := 0; i < n && r.Err == nil; i++ {
			st := &SubtaskState{Index: int(r.I32("subtask index"))}
			r.I64("subtask duration")
			at := r.Pos()
			if legacy := r.I32("legacy state count"); r.Err == nil && legacy != 0 {
				r.FailAt(at, "subtask %d has %d legacy (Flink <= 1.1) states", st.Index, legacy)
			}
			d.subtaskBody(st)
			op.Subtasks = append(op.Subtasks, st)
		}
		return op
	}
	at := r.Pos()
	op.CoordinatorState = d.streamHandle("coordinator state", 0)
	if op.CoordinatorState != nil && op.CoordinatorState.Type != HandleByteStream && r.Err == nil {
		r.FailAt(at, "coordinator state is a %s handle, want byte-stream", op.CoordinatorState.Type)
	}
	at = r.Pos()
	n := r.I32("subtask count")
	if r.Err != nil {
		return nil
	}
	if n < 0 {
		if n != -1 || op.CoordinatorState != nil {
			r.FailAt(at, "fully finished operator with subtask count %d and coordinator state", n)
		}
		op.FullyFinished = true
		return op
	}
	cnt := r.Count(int64(n), 4, "subtask count", at)
	seen := map[int]bool{}
	for i := 0; i < cnt && r.Err == nil; i++ {
		iat := r.Pos()
		idx := int(r.I32("subtask index"))
		st := &SubtaskState{Index: idx}
		if idx < 0 {
			st.Index, st.Finished = -idx-1, true
		}
		if r.Err == nil && (st.Index >= op.Parallelism || seen[st.Index]) {
			r.FailAt(iat, "operator %s: subtask index %d: not one of 0..%d, or listed twice", op.ID, st.Index, op.Parallelism-1)
		}
		seen[st.Index] = true
		if idx >= 0 {
			if idx < op.Parallelism {
				kr := keygroup.RangeOf(op.MaxParallelism, op.Parallelism, idx)
				d.subtaskRange = &KeyGroupRange{Start: int32(kr.Start), Count: int32(kr.Len())}
			}
			d.subtaskBody(st)
			d.subtaskRange = nil
		}
		op.Subtasks = append(op.Subtasks, st)
	}
	return op
}

func (d *decoder) subtaskBody(st *SubtaskState) {
	r := d.r
	if d.flag("managed operator state flag") {
		st.ManagedOperatorState = d.operatorHandle("managed operator state")
	}
	if d.flag("raw operator state flag") {
		st.RawOperatorState = d.operatorHandle("raw operator state")
	}
	st.ManagedKeyedState = d.keyedHandle("managed keyed state", 0)
	st.RawKeyedState = d.keyedHandle("raw keyed state", 0)
	if d.version >= 3 {
		n := r.Count32(1, "input channel count")
		for i := 0; i < n && r.Err == nil; i++ {
			st.InputChannels = append(st.InputChannels, d.channelHandle("input channel", true))
		}
		n = r.Count32(1, "result subpartition count")
		for i := 0; i < n && r.Err == nil; i++ {
			st.ResultSubpartitions = append(st.ResultSubpartitions, d.channelHandle("result subpartition", false))
		}
	}
	if d.version >= 7 {
		at := r.Pos()
		switch marker := r.U8("reference checkpoint marker"); {
		case r.Err != nil:
		case marker == 1:
			id := r.I64("reference checkpoint id")
			st.RefCheckpointID = &id
		case marker != 0:
			r.FailAt(at, "reference checkpoint marker is %d, not 0 or 1", marker)
		}
	}
}

// flag reads the int 0/1 that precedes an optional operator state handle.
func (d *decoder) flag(what string) bool {
	at := d.r.Pos()
	v := d.r.I32(what)
	if d.r.Err == nil && v != 0 && v != 1 {
		d.r.FailAt(at, "%s is %d, not 0 or 1", what, v)
	}
	return v == 1
}
