package flink

import (
	"encoding/binary"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// out is a big-endian (Java DataOutputStream) encoder. The first error is
// sticky, like the reader's.
type out struct {
	b   []byte
	err error
}

func (o *out) u8(v byte)    { o.b = append(o.b, v) }
func (o *out) bool(v bool)  { o.u8(map[bool]byte{false: 0, true: 1}[v]) }
func (o *out) u16(v uint16) { o.b = binary.BigEndian.AppendUint16(o.b, v) }
func (o *out) i32(v int32)  { o.b = binary.BigEndian.AppendUint32(o.b, uint32(v)) }
func (o *out) i64(v int64)  { o.b = binary.BigEndian.AppendUint64(o.b, uint64(v)) }
func (o *out) raw(b []byte) { o.b = append(o.b, b...) }

func (o *out) bytes32(b []byte) {
	o.i32(int32(len(b)))
	o.raw(b)
}

func (o *out) fail(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf(format, args...)
	}
}

// utf writes s as Java's writeUTF: an unsigned 16-bit length, then
// modified UTF-8 (NUL as C0 80, characters beyond the BMP as two 3-byte
// surrogates).
func (o *out) utf(s string) {
	enc := appendModifiedUTF8(nil, s)
	if len(enc) > 0xFFFF {
		o.fail("string of %d encoded bytes is longer than the 65535 Java's writeUTF takes", len(enc))
		enc = enc[:0]
	}
	o.u16(uint16(len(enc)))
	o.raw(enc)
}

func appendModifiedUTF8(b []byte, s string) []byte {
	for _, r := range s {
		if r == utf8.RuneError {
			r = 0xFFFD
		}
		units := []uint16{uint16(r)}
		if r > 0xFFFF {
			a, c := utf16.EncodeRune(r)
			units = []uint16{uint16(a), uint16(c)}
		}
		for _, u := range units {
			switch {
			case u != 0 && u < 0x80:
				b = append(b, byte(u))
			case u < 0x800:
				b = append(b, 0xC0|byte(u>>6), 0x80|byte(u&0x3F))
			default:
				b = append(b, 0xE0|byte(u>>12), 0x80|byte(u>>6&0x3F), 0x80|byte(u&0x3F))
			}
		}
	}
	return b
}

// EncodeMetadata writes m as a `_metadata` file of m.Version, with props
// (Java-serialized CheckpointProperties) after the operators from
// version 4 on. It is the inverse of ParseMetadata.
func EncodeMetadata(m *Metadata, props []byte) ([]byte, error) {
	if m.Version < 3 || m.Version > MaxMetadataVersion {
		return nil, fmt.Errorf("stateutil writes _metadata versions 3 to %d, not %d", MaxMetadataVersion, m.Version)
	}
	o := &out{}
	e := &encoder{o: o, version: m.Version}
	o.i32(MetadataMagic)
	o.i32(int32(m.Version))
	o.i64(m.CheckpointID)
	o.i32(int32(len(m.MasterStates)))
	for _, ms := range m.MasterStates {
		body := &out{}
		body.i32(ms.Version)
		body.utf(ms.Name)
		body.bytes32(ms.Data)
		if body.err != nil {
			return nil, body.err
		}
		o.i32(masterStateMagic)
		o.bytes32(body.b)
	}
	o.i32(int32(len(m.Operators)))
	for _, op := range m.Operators {
		e.operator(op)
	}
	if m.Version >= 4 {
		if len(props) == 0 {
			props = javaNull
		}
		o.raw(props)
	}
	if o.err != nil {
		return nil, o.err
	}
	return o.b, nil
}

// javaNull is a Java-serialized null: what the State Processor API writes
// in place of CheckpointProperties.
var javaNull = []byte{0xAC, 0xED, 0x00, 0x05, tcNull}

type encoder struct {
	o       *out
	version int
}

func (e *encoder) operator(op *OperatorState) {
	o := e.o
	if e.version >= 5 {
		o.utf(op.Name)
		o.utf(op.UID)
	}
	o.raw(op.ID[:])
	o.i32(int32(op.Parallelism))
	o.i32(int32(op.MaxParallelism))
	e.stream(op.CoordinatorState)
	if op.FullyFinished {
		o.i32(-1)
		return
	}
	o.i32(int32(len(op.Subtasks)))
	for _, st := range op.Subtasks {
		if st.Finished {
			o.i32(int32(-st.Index - 1))
			continue
		}
		o.i32(int32(st.Index))
		e.subtask(st)
	}
}

func (e *encoder) subtask(st *SubtaskState) {
	o := e.o
	for _, h := range []*OperatorStateHandle{st.ManagedOperatorState, st.RawOperatorState} {
		if h == nil {
			o.i32(0)
			continue
		}
		o.i32(1)
		e.operatorHandle(h)
	}
	e.keyed(st.ManagedKeyedState)
	e.keyed(st.RawKeyedState)
	o.i32(int32(len(st.InputChannels)))
	for _, c := range st.InputChannels {
		e.channel(c, 1)
	}
	o.i32(int32(len(st.ResultSubpartitions)))
	for _, c := range st.ResultSubpartitions {
		e.channel(c, 2)
	}
	if e.version >= 7 {
		if st.RefCheckpointID != nil {
			o.u8(1)
			o.i64(*st.RefCheckpointID)
		} else {
			o.u8(0)
		}
	}
}

func (e *encoder) stream(h *StreamHandle) {
	o := e.o
	if h == nil {
		o.u8(byte(HandleNull))
		return
	}
	o.u8(byte(h.Type))
	switch h.Type {
	case HandleByteStream:
		o.utf(h.Name)
		o.bytes32(h.Data)
	case HandleFile:
		o.i64(h.Size)
		o.utf(h.Path)
	case HandleRelativeFile:
		o.utf(h.Path)
		o.i64(h.Size)
	case HandleKeyGroups:
		e.keyGroups(h.KeyGroups, HandleKeyGroups)
	case HandleSegmentFile:
		o.i64(h.StartPos)
		o.i64(h.Size)
		o.i32(h.Scope)
		o.utf(h.Path)
		o.utf(h.LogicalFileID)
	case HandleEmptySegmentFile:
	default:
		o.fail("cannot write a stream handle of type %s", h.Type)
	}
}

func (e *encoder) keyGroups(kg *KeyGroupsHandle, t HandleType) {
	o := e.o
	if kg == nil {
		o.fail("%s handle without key groups", t)
		return
	}
	o.i32(kg.Range.Start)
	o.i32(kg.Range.Count)
	if len(kg.Offsets) != int(kg.Range.Count) {
		o.fail("%s handle with %d offsets for %d key groups", t, len(kg.Offsets), kg.Range.Count)
	}
	for _, off := range kg.Offsets {
		o.i64(off)
	}
	e.stream(kg.Delegate)
	if t == HandleKeyGroupsV2 {
		o.utf(kg.StateHandleID)
	}
}

func (e *encoder) keyed(h *KeyedHandle) {
	o := e.o
	if h == nil {
		o.u8(byte(HandleNull))
		return
	}
	o.u8(byte(h.Type))
	switch h.Type {
	case HandleKeyGroups, HandleSavepointKeyGroups, HandleKeyGroupsV2:
		e.keyGroups(h.KeyGroups, h.Type)
	case HandleIncrementalKeyed, HandleIncrementalKeyedV2:
		in := h.Incremental
		o.i64(in.CheckpointID)
		o.utf(in.BackendID)
		o.i32(in.Range.Start)
		o.i32(in.Range.Count)
		if h.Type == HandleIncrementalKeyedV2 {
			o.i64(in.CheckpointedSize)
		}
		e.stream(in.Meta)
		e.named(in.Shared)
		e.named(in.Private)
		if h.Type == HandleIncrementalKeyedV2 {
			o.utf(in.StateHandleID)
		}
	case HandleChangelog, HandleChangelogV2:
		c := h.Changelog
		o.i32(c.Range.Start)
		o.i32(c.Range.Count)
		o.i64(c.CheckpointedSize)
		o.i32(int32(len(c.Materialized)))
		for _, k := range c.Materialized {
			e.keyed(k)
		}
		o.i32(int32(len(c.NonMaterialized)))
		for _, k := range c.NonMaterialized {
			e.keyed(k)
		}
		o.i64(c.MaterializationID)
		if h.Type == HandleChangelogV2 {
			o.i64(c.CheckpointID)
		}
		o.utf(c.StateHandleID)
	case HandleChangelogByteIncrement:
		c := h.ChangelogBytes
		o.i32(c.Range.Start)
		o.i32(c.Range.Count)
		o.i64(c.From)
		o.i64(c.To)
		o.i32(int32(len(c.Changes)))
		for _, ch := range c.Changes {
			o.i32(ch.KeyGroup)
			o.bytes32(ch.Data)
		}
		o.utf(c.StateHandleID)
	case HandleChangelogFileIncrement, HandleChangelogFileIncrement2:
		c := h.ChangelogFiles
		o.i32(c.Range.Start)
		o.i32(c.Range.Count)
		o.i32(int32(len(c.Handles)))
		for _, sh := range c.Handles {
			o.i64(sh.Offset)
			e.stream(sh.Handle)
		}
		o.i64(c.Size)
		o.i64(c.CheckpointedSize)
		o.utf(c.StateHandleID)
		if h.Type == HandleChangelogFileIncrement2 {
			o.utf(c.StorageIdentifier)
		}
	default:
		o.fail("cannot write a keyed handle of type %s", h.Type)
	}
}

func (e *encoder) named(list []NamedStreamHandle) {
	e.o.i32(int32(len(list)))
	for _, n := range list {
		e.o.utf(n.LocalName)
		e.stream(n.Handle)
	}
}

func (e *encoder) operatorHandle(h *OperatorStateHandle) {
	o := e.o
	o.u8(byte(h.Type))
	o.i32(int32(len(h.States)))
	for _, s := range h.States {
		o.utf(s.Name)
		o.u8(byte(s.Mode))
		o.i32(int32(len(s.Offsets)))
		for _, off := range s.Offsets {
			o.i64(off)
		}
	}
	if h.Type == HandleSegmentOperatorState {
		o.utf(h.TaskOwnedDir)
		o.utf(h.SharedDir)
		o.bool(h.IsEmpty)
	}
	e.stream(h.Delegate)
}

func (e *encoder) channel(c *ChannelHandle, typ byte) {
	o := e.o
	if e.version >= 6 {
		if c.Merged() {
			o.u8(c.Type)
			o.i32(c.SubtaskIndex)
			o.i64(c.Size)
			e.stream(c.Delegate)
			o.bytes32(c.SerializedChannelOffsets)
			return
		}
		o.u8(typ)
	}
	o.i32(c.SubtaskIndex)
	o.i32(c.Info[0])
	o.i32(c.Info[1])
	o.i32(int32(len(c.Offsets)))
	for _, off := range c.Offsets {
		o.i64(off)
	}
	o.i64(c.Size)
	e.stream(c.Delegate)
}
