package metadata

import (
	"fmt"
	"slices"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// HandleType is the type byte Flink writes before each state handle in
// `_metadata`.
type HandleType byte

// The handle type bytes of `_metadata` (FLINK-FORMATS.md, section 5).
const (
	HandleNull                    HandleType = 0
	HandleByteStream              HandleType = 1
	HandleFile                    HandleType = 2
	HandleKeyGroups               HandleType = 3
	HandleOperatorState           HandleType = 4
	HandleIncrementalKeyed        HandleType = 5
	HandleRelativeFile            HandleType = 6
	HandleSavepointKeyGroups      HandleType = 7
	HandleChangelog               HandleType = 8
	HandleChangelogByteIncrement  HandleType = 9
	HandleChangelogFileIncrement  HandleType = 10
	HandleIncrementalKeyedV2      HandleType = 11
	HandleKeyGroupsV2             HandleType = 12
	HandleChangelogFileIncrement2 HandleType = 13
	HandleChangelogV2             HandleType = 14
	HandleSegmentFile             HandleType = 15
	HandleEmptySegmentFile        HandleType = 16
	HandleSegmentOperatorState    HandleType = 17
)

var handleTypeNames = [...]string{
	"null", "byte-stream", "file", "key-groups", "operator-state", "incremental-keyed",
	"relative-file", "savepoint-key-groups", "changelog", "changelog-byte-increment",
	"changelog-file-increment", "incremental-keyed-v2", "key-groups-v2",
	"changelog-file-increment-v2", "changelog-v2", "segment-file", "empty-segment-file",
	"segment-operator-state",
}

func (t HandleType) String() string {
	if int(t) < len(handleTypeNames) {
		return handleTypeNames[t]
	}
	return fmt.Sprintf("handle-type-%d", byte(t))
}

// MarshalText renders the type by name in JSON.
func (t HandleType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads a type MarshalText wrote.
func (t *HandleType) UnmarshalText(b []byte) error {
	if i := slices.Index(handleTypeNames[:], string(b)); i >= 0 {
		*t = HandleType(i)
		return nil
	}
	var n byte
	if _, err := fmt.Sscanf(string(b), "handle-type-%d", &n); err != nil {
		return fmt.Errorf("not a handle type: %q", b)
	}
	*t = HandleType(n)
	return nil
}

// maxHandleDepth bounds recursion through nested handles (changelog handles
// hold keyed handles, key-groups handles hold stream handles).
const maxHandleDepth = 16

// StreamHandle is a handle to a stream of bytes: inline in `_metadata`, a file
// (absolute or relative to `_metadata`), a segment of a merged file, or a
// key-groups handle used as a stream.
type StreamHandle struct {
	Type HandleType `json:"type"`
	// Name is the handle name of an inline byte stream.
	Name string `json:"name,omitempty"`
	// Data is the inline content of a byte-stream handle (a view into the
	// `_metadata` bytes). DataOffset is where it starts in `_metadata`.
	Data       []byte `json:"-"`
	DataOffset int64  `json:"dataOffset,omitempty"`
	// Path is the absolute path (file), the path relative to the folder of
	// `_metadata` (relative file), or the physical file (segment file).
	Path string `json:"path,omitempty"`
	// Size is the state size the handle declares (for byte streams, len(Data)).
	Size int64 `json:"size"`
	// StartPos, Scope and LogicalFileID describe a segment file handle.
	StartPos      int64  `json:"startPos,omitempty"`
	Scope         int32  `json:"scope,omitempty"`
	LogicalFileID string `json:"logicalFileId,omitempty"`
	// KeyGroups is set when a key-groups handle appears where a stream is expected.
	KeyGroups *KeyGroupsHandle `json:"keyGroups,omitempty"`
}

// KeyGroupRange is an inclusive range of key groups, stored as start and count.
type KeyGroupRange struct {
	Start int32 `json:"start"`
	Count int32 `json:"count"`
}

// End is the last key group of the range (Start-1 when the range is empty).
func (k KeyGroupRange) End() int32 { return k.Start + k.Count - 1 }

// KeyGroupsHandle points at a state file holding a range of key groups; Offsets
// says where each key group starts in Delegate.
type KeyGroupsHandle struct {
	Range         KeyGroupRange `json:"range"`
	Offsets       []int64       `json:"offsets"`
	Delegate      *StreamHandle `json:"delegate"`
	StateHandleID string        `json:"stateHandleId,omitempty"`
}

// KeyedHandle is one managed or raw keyed state handle of a subtask. Exactly
// one of the pointer fields is set, according to Type.
type KeyedHandle struct {
	Type           HandleType              `json:"type"`
	KeyGroups      *KeyGroupsHandle        `json:"keyGroups,omitempty"`      // 3, 7, 12
	Incremental    *IncrementalKeyedHandle `json:"incremental,omitempty"`    // 5, 11
	Changelog      *ChangelogHandle        `json:"changelog,omitempty"`      // 8, 14
	ChangelogBytes *ChangelogBytesHandle   `json:"changelogBytes,omitempty"` // 9
	ChangelogFiles *ChangelogFilesHandle   `json:"changelogFiles,omitempty"` // 10, 13
}

// Range returns the key-group range the handle covers.
func (h *KeyedHandle) Range() KeyGroupRange {
	switch {
	case h == nil:
		return KeyGroupRange{}
	case h.KeyGroups != nil:
		return h.KeyGroups.Range
	case h.Incremental != nil:
		return h.Incremental.Range
	case h.Changelog != nil:
		return h.Changelog.Range
	case h.ChangelogBytes != nil:
		return h.ChangelogBytes.Range
	case h.ChangelogFiles != nil:
		return h.ChangelogFiles.Range
	}
	return KeyGroupRange{}
}

// NamedStreamHandle is an entry of the shared or private file list of an
// incremental (native RocksDB) handle: a local file name and where it lives.
type NamedStreamHandle struct {
	LocalName string        `json:"localName"`
	Handle    *StreamHandle `json:"handle"`
}

// IncrementalKeyedHandle is a native RocksDB snapshot: a meta-data stream plus
// shared (SST) and private (MANIFEST, CURRENT, OPTIONS...) files.
type IncrementalKeyedHandle struct {
	CheckpointID     int64               `json:"checkpointId"`
	BackendID        string              `json:"backendId"`
	Range            KeyGroupRange       `json:"range"`
	CheckpointedSize int64               `json:"checkpointedSize"` // -1 before type 11
	Meta             *StreamHandle       `json:"meta"`
	Shared           []NamedStreamHandle `json:"shared"`
	Private          []NamedStreamHandle `json:"private"`
	StateHandleID    string              `json:"stateHandleId,omitempty"`
}

// ChangelogHandle is a changelog state backend handle: materialized keyed
// handles plus not yet materialized changes.
type ChangelogHandle struct {
	Range             KeyGroupRange  `json:"range"`
	CheckpointedSize  int64          `json:"checkpointedSize"`
	Materialized      []*KeyedHandle `json:"materialized"`
	NonMaterialized   []*KeyedHandle `json:"nonMaterialized"`
	MaterializationID int64          `json:"materializationId"`
	CheckpointID      int64          `json:"checkpointId"` // equals MaterializationID before type 14
	StateHandleID     string         `json:"stateHandleId"`
}

// StateChange is one inline changelog record.
type StateChange struct {
	KeyGroup int32  `json:"keyGroup"`
	Data     []byte `json:"-"`
}

// ChangelogBytesHandle holds changelog records inline.
type ChangelogBytesHandle struct {
	Range         KeyGroupRange `json:"range"`
	From          int64         `json:"from"`
	To            int64         `json:"to"`
	Changes       []StateChange `json:"changes"`
	StateHandleID string        `json:"stateHandleId"`
}

// OffsetStreamHandle is a stream handle with an offset into it.
type OffsetStreamHandle struct {
	Offset int64         `json:"offset"`
	Handle *StreamHandle `json:"handle"`
}

// ChangelogFilesHandle holds changelog records in files.
type ChangelogFilesHandle struct {
	Range             KeyGroupRange        `json:"range"`
	Handles           []OffsetStreamHandle `json:"handles"`
	Size              int64                `json:"size"`
	CheckpointedSize  int64                `json:"checkpointedSize"`
	StateHandleID     string               `json:"stateHandleId"`
	StorageIdentifier string               `json:"storageIdentifier"` // "filesystem" before type 13
}

// DistributionMode says how operator list state is redistributed on rescale.
type DistributionMode byte

// Distribution modes by their stored ordinal.
const (
	SplitDistribute DistributionMode = 0
	Union           DistributionMode = 1
	Broadcast       DistributionMode = 2
)

func (m DistributionMode) String() string {
	switch m {
	case SplitDistribute:
		return "SPLIT_DISTRIBUTE"
	case Union:
		return "UNION"
	case Broadcast:
		return "BROADCAST"
	}
	return fmt.Sprintf("MODE_%d", byte(m))
}

// MarshalText renders the mode by name in JSON.
func (m DistributionMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads a mode MarshalText wrote.
func (m *DistributionMode) UnmarshalText(b []byte) error {
	for _, c := range []DistributionMode{SplitDistribute, Union, Broadcast} {
		if c.String() == string(b) {
			*m = c
			return nil
		}
	}
	var n byte
	if _, err := fmt.Sscanf(string(b), "MODE_%d", &n); err != nil {
		return fmt.Errorf("not a distribution mode: %q", b)
	}
	*m = DistributionMode(n)
	return nil
}

// OperatorStateInfo lists, for one named operator state, its distribution
// mode and the offset of each element in the state stream.
type OperatorStateInfo struct {
	Name    string           `json:"name"`
	Mode    DistributionMode `json:"mode"`
	Offsets []int64          `json:"offsets"`
}

// OperatorStateHandle is a managed or raw operator state handle (type 4, or 17
// for a file-merging segment).
type OperatorStateHandle struct {
	Type         HandleType          `json:"type"`
	States       []OperatorStateInfo `json:"states"`
	TaskOwnedDir string              `json:"taskOwnedDir,omitempty"` // type 17
	SharedDir    string              `json:"sharedDir,omitempty"`    // type 17
	IsEmpty      bool                `json:"isEmpty,omitempty"`      // type 17
	Delegate     *StreamHandle       `json:"delegate"`
}

// ChannelHandle is an input-channel or result-subpartition handle of an
// unaligned checkpoint.
type ChannelHandle struct {
	// Type is the v6 type byte (1 input channel, 2 result subpartition,
	// 3 merged input channels, 4 merged result subpartitions), or 0 before v6.
	Type         byte  `json:"type,omitempty"`
	SubtaskIndex int32 `json:"subtaskIndex"`
	// Info is (gate, channel) for input channels and (partition,
	// subpartition) for result subpartitions; unset for merged handles.
	Info     [2]int32      `json:"info"`
	Offsets  []int64       `json:"offsets,omitempty"`
	Size     int64         `json:"size"`
	Delegate *StreamHandle `json:"delegate"`
	// SerializedChannelOffsets is the offset table of a merged handle, as
	// stored (it is written back as it was read); MergedChannels is what
	// it lists.
	SerializedChannelOffsets []byte    `json:"-"`
	MergedChannels           []Channel `json:"mergedChannels,omitempty"`
}

// Channel is the state of one channel within a channel handle's stream:
// Info as ChannelHandle.Info, the size Flink records for it and the
// offsets of its buffers (each an int length, then the bytes).
type Channel struct {
	Info    [2]int32 `json:"info"`
	Size    int64    `json:"size"`
	Offsets []int64  `json:"offsets"`
}

// Merged says whether this is a merged channel handle (v6 types 3 and 4).
func (c *ChannelHandle) Merged() bool { return c.Type == 3 || c.Type == 4 }

// Channels lists the channels the handle holds: the one of a plain handle,
// the listed ones of a merged handle.
func (c *ChannelHandle) Channels() []Channel {
	if c.Merged() {
		return c.MergedChannels
	}
	return []Channel{{Info: c.Info, Size: c.Size, Offsets: c.Offsets}}
}

// Unmerged lists the plain handles a merged handle stands for, one per
// channel on the same stream, as Flink unmerges them to restore (before
// version 6 `_metadata` has no merged handles); a plain handle is its own.
func (c *ChannelHandle) Unmerged() []*ChannelHandle {
	if !c.Merged() {
		return []*ChannelHandle{c}
	}
	out := make([]*ChannelHandle, 0, len(c.MergedChannels))
	for _, m := range c.MergedChannels {
		out = append(out, &ChannelHandle{Type: c.Type - 2, SubtaskIndex: c.SubtaskIndex, Info: m.Info, Offsets: m.Offsets, Size: m.Size, Delegate: c.Delegate})
	}
	return out
}

// --- decoding ---

func (d *decoder) streamHandle(what string, depth int) *StreamHandle {
	r := d.r
	if depth > maxHandleDepth {
		r.Fail("%s: handles nested deeper than %d", what, maxHandleDepth)
		return nil
	}
	at := r.Pos()
	t := HandleType(r.U8(what + " type"))
	if r.Err != nil {
		return nil
	}
	h := &StreamHandle{Type: t}
	switch t {
	case HandleNull:
		return nil
	case HandleByteStream:
		h.Name = r.UTF(what + " name")
		h.DataOffset = r.Pos() + 4
		h.Data = r.Bytes32(what + " data")
		h.Size = int64(len(h.Data))
	case HandleFile:
		h.Size = r.I64(what + " size")
		h.Path = r.UTF(what + " path")
	case HandleRelativeFile:
		h.Path = r.UTF(what + " relative path")
		h.Size = r.I64(what + " size")
	case HandleKeyGroups:
		h.KeyGroups = d.keyGroups(what, t, depth+1)
	case HandleSegmentFile:
		h.StartPos = r.I64(what + " segment start")
		h.Size = r.I64(what + " segment size")
		h.Scope = r.I32(what + " segment scope")
		h.Path = r.UTF(what + " segment path")
		h.LogicalFileID = r.UTF(what + " logical file id")
	case HandleEmptySegmentFile:
	default:
		r.FailAt(at, "%s: unknown stream handle type %d", what, byte(t))
		return nil
	}
	if r.Err != nil {
		return nil
	}
	return h
}

func (d *decoder) keyGroupRange(what string) KeyGroupRange {
	r := d.r
	start := r.I32(what + " start key group")
	at := r.Pos()
	n := r.I32(what + " key group count")
	if r.Err == nil && (start < 0 || n < 0 || int64(start)+int64(n) > 1<<15) {
		r.FailAt(at, "%s: invalid key-group range start %d count %d", what, start, n)
	}
	return KeyGroupRange{Start: start, Count: n}
}

func (d *decoder) keyGroups(what string, t HandleType, depth int) *KeyGroupsHandle {
	r := d.r
	kg := &KeyGroupsHandle{Range: d.keyGroupRange(what)}
	n := r.Count(int64(kg.Range.Count), 8, what+" offsets", r.Pos())
	if r.Err != nil {
		return nil
	}
	kg.Offsets = make([]int64, n)
	for i := range kg.Offsets {
		kg.Offsets[i] = r.I64(what + " offset")
	}
	kg.Delegate = d.streamHandle(what+" delegate", depth+1)
	if t == HandleKeyGroupsV2 {
		kg.StateHandleID = r.UTF(what + " state handle id")
	}
	return kg
}

func (d *decoder) keyedHandle(what string, depth int) *KeyedHandle {
	r := d.r
	if depth > maxHandleDepth {
		r.Fail("%s: handles nested deeper than %d", what, maxHandleDepth)
		return nil
	}
	at := r.Pos()
	t := HandleType(r.U8(what + " type"))
	if r.Err != nil || t == HandleNull {
		return nil
	}
	h := &KeyedHandle{Type: t}
	switch t {
	case HandleKeyGroups, HandleSavepointKeyGroups, HandleKeyGroupsV2:
		h.KeyGroups = d.keyGroups(what, t, depth)
	case HandleIncrementalKeyed, HandleIncrementalKeyedV2:
		h.Incremental = d.incremental(what, t, depth)
	case HandleChangelog, HandleChangelogV2:
		h.Changelog = d.changelog(what, t, depth)
	case HandleChangelogByteIncrement:
		h.ChangelogBytes = d.changelogBytes(what)
	case HandleChangelogFileIncrement, HandleChangelogFileIncrement2:
		h.ChangelogFiles = d.changelogFiles(what, t, depth)
	default:
		r.FailAt(at, "%s: unknown keyed handle type %d", what, byte(t))
	}
	if r.Err != nil {
		return nil
	}
	if want := d.subtaskRange; depth == 0 && want != nil && h.Range() != *want {
		kr := h.Range()
		r.FailAt(at, "%s: key groups %d..%d, but Flink assigns the subtask %d..%d", what, kr.Start, kr.End(), want.Start, want.End())
		return nil
	}
	return h
}

func (d *decoder) incremental(what string, t HandleType, depth int) *IncrementalKeyedHandle {
	r := d.r
	h := &IncrementalKeyedHandle{CheckpointedSize: -1}
	h.CheckpointID = r.I64(what + " checkpoint id")
	h.BackendID = r.UTF(what + " backend id")
	h.Range = d.keyGroupRange(what)
	if t == HandleIncrementalKeyedV2 {
		h.CheckpointedSize = r.I64(what + " checkpointed size")
	}
	h.Meta = d.streamHandle(what+" meta", depth+1)
	h.Shared = d.namedHandles(what+" shared files", depth)
	h.Private = d.namedHandles(what+" private files", depth)
	if t == HandleIncrementalKeyedV2 {
		h.StateHandleID = r.UTF(what + " state handle id")
	}
	return h
}

func (d *decoder) namedHandles(what string, depth int) []NamedStreamHandle {
	r := d.r
	n := r.Count32(3, what) // UTF length (2) + handle type (1)
	out := make([]NamedStreamHandle, 0, n)
	for i := 0; i < n && r.Err == nil; i++ {
		name := r.UTF(what + " local name")
		out = append(out, NamedStreamHandle{LocalName: name, Handle: d.streamHandle(what, depth+1)})
	}
	return out
}

func (d *decoder) changelog(what string, t HandleType, depth int) *ChangelogHandle {
	r := d.r
	h := &ChangelogHandle{Range: d.keyGroupRange(what)}
	h.CheckpointedSize = r.I64(what + " checkpointed size")
	n := r.Count32(1, what+" materialized count")
	for i := 0; i < n && r.Err == nil; i++ {
		if k := d.keyedHandle(what+" materialized", depth+1); k != nil {
			h.Materialized = append(h.Materialized, k)
		}
	}
	n = r.Count32(1, what+" non-materialized count")
	for i := 0; i < n && r.Err == nil; i++ {
		if k := d.keyedHandle(what+" non-materialized", depth+1); k != nil {
			h.NonMaterialized = append(h.NonMaterialized, k)
		}
	}
	h.MaterializationID = r.I64(what + " materialization id")
	h.CheckpointID = h.MaterializationID
	if t == HandleChangelogV2 {
		h.CheckpointID = r.I64(what + " checkpoint id")
	}
	h.StateHandleID = r.UTF(what + " state handle id")
	return h
}

func (d *decoder) changelogBytes(what string) *ChangelogBytesHandle {
	r := d.r
	h := &ChangelogBytesHandle{Range: d.keyGroupRange(what)}
	h.From = r.I64(what + " from")
	h.To = r.I64(what + " to")
	n := r.Count32(8, what+" change count")
	h.Changes = make([]StateChange, 0, n)
	for i := 0; i < n && r.Err == nil; i++ {
		kg := r.I32(what + " change key group")
		h.Changes = append(h.Changes, StateChange{KeyGroup: kg, Data: r.Bytes32(what + " change")})
	}
	h.StateHandleID = r.UTF(what + " state handle id")
	return h
}

func (d *decoder) changelogFiles(what string, t HandleType, depth int) *ChangelogFilesHandle {
	r := d.r
	h := &ChangelogFilesHandle{Range: d.keyGroupRange(what), StorageIdentifier: "filesystem"}
	n := r.Count32(9, what+" handle count")
	h.Handles = make([]OffsetStreamHandle, 0, n)
	for i := 0; i < n && r.Err == nil; i++ {
		off := r.I64(what + " offset")
		h.Handles = append(h.Handles, OffsetStreamHandle{Offset: off, Handle: d.streamHandle(what, depth+1)})
	}
	h.Size = r.I64(what + " size")
	h.CheckpointedSize = r.I64(what + " checkpointed size")
	h.StateHandleID = r.UTF(what + " state handle id")
	if t == HandleChangelogFileIncrement2 {
		h.StorageIdentifier = r.UTF(what + " storage id")
	}
	return h
}

func (d *decoder) operatorHandle(what string) *OperatorStateHandle {
	r := d.r
	at := r.Pos()
	t := HandleType(r.U8(what + " type"))
	if r.Err != nil || t == HandleNull {
		return nil
	}
	if t != HandleOperatorState && t != HandleSegmentOperatorState {
		r.FailAt(at, "%s: unknown operator state handle type %d", what, byte(t))
		return nil
	}
	h := &OperatorStateHandle{Type: t}
	n := r.Count32(7, what+" state count") // UTF (2) + mode (1) + count (4)
	h.States = make([]OperatorStateInfo, 0, n)
	for i := 0; i < n && r.Err == nil; i++ {
		s := OperatorStateInfo{Name: r.UTF(what + " state name")}
		mat := r.Pos()
		s.Mode = DistributionMode(r.U8(what + " distribution mode"))
		if r.Err == nil && s.Mode > Broadcast {
			r.FailAt(mat, "%s: state %q: unknown distribution mode %d", what, s.Name, byte(s.Mode))
		}
		k := r.Count32(8, what+" offset count")
		s.Offsets = make([]int64, k)
		for j := range s.Offsets {
			s.Offsets[j] = r.I64(what + " offset")
		}
		h.States = append(h.States, s)
	}
	if t == HandleSegmentOperatorState {
		h.TaskOwnedDir = r.UTF(what + " task-owned dir")
		h.SharedDir = r.UTF(what + " shared dir")
		h.IsEmpty = r.Bool(what + " isEmpty")
	}
	h.Delegate = d.streamHandle(what+" delegate", 1)
	if r.Err != nil {
		return nil
	}
	return h
}

// channelHandle reads one input-channel (input=true) or result-subpartition
// handle in the layout of the metadata version.
func (d *decoder) channelHandle(what string, input bool) *ChannelHandle {
	r := d.r
	h := &ChannelHandle{}
	if d.version >= 6 {
		at := r.Pos()
		h.Type = r.U8(what + " type")
		want, merged := byte(2), byte(4)
		if input {
			want, merged = 1, 3
		}
		switch {
		case r.Err != nil:
			return nil
		case h.Type == merged:
			h.SubtaskIndex = r.I32(what + " subtask index")
			h.Size = r.I64(what + " size")
			h.Delegate = d.streamHandle(what+" delegate", 1)
			at := r.Pos() + 4
			h.SerializedChannelOffsets = r.Bytes32(what + " channel offsets")
			if r.Err == nil {
				h.MergedChannels = mergedChannels(h.SerializedChannelOffsets, r.File, at, what, r)
			}
			return h
		case h.Type != want:
			r.FailAt(at, "%s: unknown channel handle type %d", what, h.Type)
			return nil
		}
	}
	h.SubtaskIndex = r.I32(what + " subtask index")
	h.Info[0] = r.I32(what + " info")
	h.Info[1] = r.I32(what + " info")
	n := r.Count32(8, what+" offset count")
	h.Offsets = make([]int64, n)
	for i := range h.Offsets {
		h.Offsets[i] = r.I64(what + " offset")
	}
	h.Size = r.I64(what + " size")
	h.Delegate = d.streamHandle(what+" delegate", 1)
	return h
}

// mergedChannels reads a merged channel handle's offset table (Flink's
// AbstractMergedChannelStateHandle): an int channel count, then per channel
// its info (two ints), a long size, an int offset count and the offsets.
// Damage fails outer at the offending byte.
func mergedChannels(b []byte, file string, base int64, what string, outer *wire.Reader) []Channel {
	r := wire.NewReader(b, file, base)
	n := r.Count32(20, what+" merged channel count") // a channel without offsets takes 20
	out := make([]Channel, 0, n)
	for i := 0; i < n && r.Err == nil; i++ {
		c := Channel{Info: [2]int32{r.I32(what + " info"), r.I32(what + " info")}, Size: r.I64(what + " channel size")}
		m := r.Count32(8, what+" channel offset count")
		c.Offsets = make([]int64, 0, m)
		for j := 0; j < m && r.Err == nil; j++ {
			c.Offsets = append(c.Offsets, r.I64(what+" channel offset"))
		}
		out = append(out, c)
	}
	if r.Err == nil && r.Remaining() != 0 {
		r.Fail("%s: %d bytes after the merged channel offsets", what, r.Remaining())
	}
	if r.Err != nil {
		outer.Err = r.Err
		return nil
	}
	return out
}

func (h *StreamHandle) SizeOrZero() int64 {
	if h == nil {
		return 0
	}
	return h.Size
}
