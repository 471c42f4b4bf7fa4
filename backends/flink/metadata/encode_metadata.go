package metadata

import (
	"fmt"

	"github.com/stateutil/stateutil/backends/flink/internal/javaser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// EncodeMetadata writes m as a `_metadata` file of m.Version, with props
// (Java-serialized CheckpointProperties) after the operators from
// version 4 on. It is the inverse of ParseMetadata.
func EncodeMetadata(m *Metadata, props []byte) ([]byte, error) {
	if m.Version < 3 || m.Version > MaxMetadataVersion {
		return nil, fmt.Errorf("stateutil writes _metadata versions 3 to %d, not %d", MaxMetadataVersion, m.Version)
	}
	o := &wire.Writer{}
	e := &encoder{o: o, version: m.Version}
	o.I32(MetadataMagic)
	o.I32(int32(m.Version))
	o.I64(m.CheckpointID)
	o.I32(int32(len(m.MasterStates)))
	for _, ms := range m.MasterStates {
		body := &wire.Writer{}
		body.I32(ms.Version)
		body.UTF(ms.Name)
		body.Bytes32(ms.Data)
		if body.Err != nil {
			return nil, body.Err
		}
		o.I32(masterStateMagic)
		o.Bytes32(body.B)
	}
	o.I32(int32(len(m.Operators)))
	for _, op := range m.Operators {
		e.operator(op)
	}
	if m.Version >= 4 {
		if len(props) == 0 {
			props = javaNull
		}
		o.Raw(props)
	}
	if o.Err != nil {
		return nil, o.Err
	}
	return o.B, nil
}

// javaNull is a Java-serialized null: what the State Processor API writes
// in place of CheckpointProperties.
var javaNull = []byte{0xAC, 0xED, 0x00, 0x05, javaser.TcNull}

type encoder struct {
	o       *wire.Writer
	version int
}

func (e *encoder) operator(op *OperatorState) {
	o := e.o
	if e.version >= 5 {
		o.UTF(op.Name)
		o.UTF(op.UID)
	}
	o.Raw(op.ID[:])
	o.I32(int32(op.Parallelism))
	o.I32(int32(op.MaxParallelism))
	e.stream(op.CoordinatorState)
	if op.FullyFinished {
		o.I32(-1)
		return
	}
	o.I32(int32(len(op.Subtasks)))
	for _, st := range op.Subtasks {
		if st.Finished {
			o.I32(int32(-st.Index - 1))
			continue
		}
		o.I32(int32(st.Index))
		e.subtask(st)
	}
}

func (e *encoder) subtask(st *SubtaskState) {
	o := e.o
	for _, h := range []*OperatorStateHandle{st.ManagedOperatorState, st.RawOperatorState} {
		if h == nil {
			o.I32(0)
			continue
		}
		o.I32(1)
		e.operatorHandle(h)
	}
	e.keyed(st.ManagedKeyedState)
	e.keyed(st.RawKeyedState)
	e.channels(st.InputChannels, 1)
	e.channels(st.ResultSubpartitions, 2)
	if e.version >= 7 {
		if st.RefCheckpointID != nil {
			o.U8(1)
			o.I64(*st.RefCheckpointID)
		} else {
			o.U8(0)
		}
	}
}

func (e *encoder) stream(h *StreamHandle) {
	o := e.o
	if h == nil {
		o.U8(byte(HandleNull))
		return
	}
	o.U8(byte(h.Type))
	switch h.Type {
	case HandleByteStream:
		o.UTF(h.Name)
		o.Bytes32(h.Data)
	case HandleFile:
		o.I64(h.Size)
		o.UTF(h.Path)
	case HandleRelativeFile:
		o.UTF(h.Path)
		o.I64(h.Size)
	case HandleKeyGroups:
		e.keyGroups(h.KeyGroups, HandleKeyGroups)
	case HandleSegmentFile:
		o.I64(h.StartPos)
		o.I64(h.Size)
		o.I32(h.Scope)
		o.UTF(h.Path)
		o.UTF(h.LogicalFileID)
	case HandleEmptySegmentFile:
	default:
		o.Fail("cannot write a stream handle of type %s", h.Type)
	}
}

func (e *encoder) keyGroups(kg *KeyGroupsHandle, t HandleType) {
	o := e.o
	if kg == nil {
		o.Fail("%s handle without key groups", t)
		return
	}
	o.I32(kg.Range.Start)
	o.I32(kg.Range.Count)
	if len(kg.Offsets) != int(kg.Range.Count) {
		o.Fail("%s handle with %d offsets for %d key groups", t, len(kg.Offsets), kg.Range.Count)
	}
	for _, off := range kg.Offsets {
		o.I64(off)
	}
	e.stream(kg.Delegate)
	if t == HandleKeyGroupsV2 {
		o.UTF(kg.StateHandleID)
	}
}

func (e *encoder) keyed(h *KeyedHandle) {
	o := e.o
	if h == nil {
		o.U8(byte(HandleNull))
		return
	}
	o.U8(byte(h.Type))
	switch h.Type {
	case HandleKeyGroups, HandleSavepointKeyGroups, HandleKeyGroupsV2:
		e.keyGroups(h.KeyGroups, h.Type)
	case HandleIncrementalKeyed, HandleIncrementalKeyedV2:
		in := h.Incremental
		o.I64(in.CheckpointID)
		o.UTF(in.BackendID)
		o.I32(in.Range.Start)
		o.I32(in.Range.Count)
		if h.Type == HandleIncrementalKeyedV2 {
			o.I64(in.CheckpointedSize)
		}
		e.stream(in.Meta)
		e.named(in.Shared)
		e.named(in.Private)
		if h.Type == HandleIncrementalKeyedV2 {
			o.UTF(in.StateHandleID)
		}
	case HandleChangelog, HandleChangelogV2:
		c := h.Changelog
		o.I32(c.Range.Start)
		o.I32(c.Range.Count)
		o.I64(c.CheckpointedSize)
		o.I32(int32(len(c.Materialized)))
		for _, k := range c.Materialized {
			e.keyed(k)
		}
		o.I32(int32(len(c.NonMaterialized)))
		for _, k := range c.NonMaterialized {
			e.keyed(k)
		}
		o.I64(c.MaterializationID)
		if h.Type == HandleChangelogV2 {
			o.I64(c.CheckpointID)
		}
		o.UTF(c.StateHandleID)
	case HandleChangelogByteIncrement:
		c := h.ChangelogBytes
		o.I32(c.Range.Start)
		o.I32(c.Range.Count)
		o.I64(c.From)
		o.I64(c.To)
		o.I32(int32(len(c.Changes)))
		for _, ch := range c.Changes {
			o.I32(ch.KeyGroup)
			o.Bytes32(ch.Data)
		}
		o.UTF(c.StateHandleID)
	case HandleChangelogFileIncrement, HandleChangelogFileIncrement2:
		c := h.ChangelogFiles
		o.I32(c.Range.Start)
		o.I32(c.Range.Count)
		o.I32(int32(len(c.Handles)))
		for _, sh := range c.Handles {
			o.I64(sh.Offset)
			e.stream(sh.Handle)
		}
		o.I64(c.Size)
		o.I64(c.CheckpointedSize)
		o.UTF(c.StateHandleID)
		if h.Type == HandleChangelogFileIncrement2 {
			o.UTF(c.StorageIdentifier)
		}
	default:
		o.Fail("cannot write a keyed handle of type %s", h.Type)
	}
}

func (e *encoder) named(list []NamedStreamHandle) {
	e.o.I32(int32(len(list)))
	for _, n := range list {
		e.o.UTF(n.LocalName)
		e.stream(n.Handle)
	}
}

func (e *encoder) operatorHandle(h *OperatorStateHandle) {
	o := e.o
	o.U8(byte(h.Type))
	o.I32(int32(len(h.States)))
	for _, s := range h.States {
		o.UTF(s.Name)
		o.U8(byte(s.Mode))
		o.I32(int32(len(s.Offsets)))
		for _, off := range s.Offsets {
			o.I64(off)
		}
	}
	if h.Type == HandleSegmentOperatorState {
		o.UTF(h.TaskOwnedDir)
		o.UTF(h.SharedDir)
		o.Bool(h.IsEmpty)
	}
	e.stream(h.Delegate)
}

// channels writes a subtask's input-channel (typ 1) or result-subpartition
// (typ 2) handles; before version 6, which has no merged handles, a merged
// one as the plain handles it stands for.
func (e *encoder) channels(hs []*ChannelHandle, typ byte) {
	if e.version < 6 {
		var plain []*ChannelHandle
		for _, h := range hs {
			plain = append(plain, h.Unmerged()...)
		}
		hs = plain
	}
	e.o.I32(int32(len(hs)))
	for _, c := range hs {
		e.channel(c, typ)
	}
}

func (e *encoder) channel(c *ChannelHandle, typ byte) {
	o := e.o
	if e.version >= 6 {
		if c.Merged() {
			o.U8(c.Type)
			o.I32(c.SubtaskIndex)
			o.I64(c.Size)
			e.stream(c.Delegate)
			o.Bytes32(c.SerializedChannelOffsets)
			return
		}
		o.U8(typ)
	}
	o.I32(c.SubtaskIndex)
	o.I32(c.Info[0])
	o.I32(c.Info[1])
	o.I32(int32(len(c.Offsets)))
	for _, off := range c.Offsets {
		o.I64(off)
	}
	o.I64(c.Size)
	e.stream(c.Delegate)
}

// MergedChannelOffsets writes a merged channel handle's offset table,
// the SerializedChannelOffsets of a handle holding channels cs, as
// Flink's AbstractMergedChannelStateHandle lays it out (mergedChannels
// reads it).
func MergedChannelOffsets(cs []Channel) []byte {
	o := &wire.Writer{}
	o.I32(int32(len(cs)))
	for _, c := range cs {
		o.I32(c.Info[0])
		o.I32(c.Info[1])
		o.I64(c.Size)
		o.I32(int32(len(c.Offsets)))
		for _, off := range c.Offsets {
			o.I64(off)
		}
	}
	return o.B
}
