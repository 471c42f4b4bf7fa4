package flink

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/backends/flink/metadata"
)

// enc writes Java DataOutputStream values. It is built from the format facts
// in FLINK-FORMATS.md, independently of the decoder.
type enc struct{ bytes.Buffer }

func (e *enc) u8(v byte) *enc   { e.WriteByte(v); return e }
func (e *enc) i32(v int32) *enc { e.Write(binary.BigEndian.AppendUint32(nil, uint32(v))); return e }
func (e *enc) i64(v int64) *enc { e.Write(binary.BigEndian.AppendUint64(nil, uint64(v))); return e }
func (e *enc) utf(s string) *enc {
	e.Write(binary.BigEndian.AppendUint16(nil, uint16(len(s)))) // ASCII only in these tests
	e.WriteString(s)
	return e
}
func (e *enc) raw(b []byte) *enc { e.Write(b); return e }

// Stream handles.
func (e *enc) byteStream(name string, data []byte) *enc {
	return e.u8(1).utf(name).i32(int32(len(data))).raw(data)
}
func (e *enc) file(size int64, path string) *enc    { return e.u8(2).i64(size).utf(path) }
func (e *enc) relFile(path string, size int64) *enc { return e.u8(6).utf(path).i64(size) }

// metadataV567 builds a `_metadata` of the given version (5, 6 or 7) with two
// operators that between them use every handle type of the table.
// mergedTable is a merged channel handle's offset table as Flink lays it
// out: one channel, (3, 4), 6 bytes, one buffer at offset 4.
var mergedTable = new(enc).i32(1).i32(3).i32(4).i64(6).i32(1).i64(4).Bytes()

func metadataV567(version int32) []byte {
	e := &enc{}
	e.i32(metadata.MetadataMagic).i32(version).i64(42)
	// one master state
	ms := &enc{}
	ms.i32(3).utf("master").i32(2).raw([]byte{9, 8})
	e.i32(1).i32(-0x3694E96A).i32(int32(ms.Len())).raw(ms.Bytes())

	e.i32(3) // operators
	// operator 1: name, uid, id, parallelism 2, max 128, coordinator state,
	// two subtasks: subtask 0 with state, subtask 1 finished.
	e.utf("Source: numbers").utf("src-uid")
	e.raw([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	e.i32(2).i32(128)
	e.byteStream("coord", []byte("C"))
	e.i32(2)
	e.i32(0)
	// managed operator state: type 4 with two states, delegate relative file
	e.i32(1).u8(4).i32(2)
	e.utf("offsets").u8(0).i32(2).i64(10).i64(20)
	e.utf("bcast").u8(2).i32(1).i64(30)
	e.relFile("op-state-file", 40)
	// raw operator state: type 17 (segment operator state) on a segment file
	e.i32(1).u8(17).i32(1).utf("seg").u8(1).i32(1).i64(5)
	e.utf("/task-owned").utf("/shared").u8(0)
	e.u8(15).i64(100).i64(50).i32(1).utf("/merged/file").utf("logical-1")
	// managed keyed: type 11 incremental v2
	e.u8(11).i64(7).utf("backend-uuid").i32(0).i32(64).i64(12345)
	e.relFile("meta", 99)
	e.i32(1).utf("000010.sst").file(1000, "/abs/shared/000010.sst")
	e.i32(2).utf("MANIFEST-000005").relFile("m5", 10).utf("CURRENT").u8(16)
	e.utf("shid-11")
	// raw keyed: type 14 changelog v2 holding 12, 5, 7, 3, 9, 10, 13, 8
	e.u8(14).i32(0).i32(64).i64(777)
	e.i32(4)
	e.u8(12).i32(0).i32(2).i64(1).i64(2).byteStream("kg", []byte("xy")).utf("shid-12")
	e.u8(5).i64(6).utf("legacy-backend").i32(0).i32(1).u8(0).i32(0).i32(0)
	e.u8(7).i32(3).i32(1).i64(8).u8(3).i32(3).i32(1).i64(0).byteStream("nested", nil) // stream handle of type 3
	e.u8(8).i32(0).i32(1).i64(1).i32(1).u8(3).i32(0).i32(1).i64(4).u8(0).i32(0).i64(11).utf("shid-8")
	e.i32(3)
	e.u8(9).i32(0).i32(64).i64(1).i64(3).i32(2).i32(5).i32(1).raw([]byte{0xAA}).i32(-1).i32(0).utf("shid-9")
	e.u8(10).i32(0).i32(64).i32(1).i64(16).file(32, "/dstl/a").i64(32).i64(30).utf("shid-10")
	e.u8(13).i32(0).i32(64).i32(0).i64(0).i64(0).utf("shid-13").utf("memory")
	e.i64(55).i64(56).utf("shid-14")
	// channel state: one input channel, one result subpartition
	e.i32(1)
	if version >= 6 {
		e.u8(1)
	}
	e.i32(0).i32(1).i32(2).i32(1).i64(0).i64(4).byteStream("ch", []byte("abcd"))
	e.i32(1)
	if version >= 6 {
		e.u8(4).i32(0).i64(6).byteStream("merged", []byte("abcdef")).i32(int32(len(mergedTable))).raw(mergedTable)
	} else {
		e.i32(0).i32(3).i32(4).i32(0).i64(0).u8(0)
	}
	if version >= 7 {
		e.u8(1).i64(41)
	}
	e.i32(-2) // subtask 1 finished
	// operator 2: fully finished, no name.
	e.utf("").utf("")
	e.raw(bytes.Repeat([]byte{0xFF}, 16)).i32(1).i32(1)
	e.u8(0).i32(-1)
	// operator 3: one subtask with nothing but a key-groups handle on an
	// absolute file.
	e.utf("keyed").utf("")
	e.raw(bytes.Repeat([]byte{0x11}, 16)).i32(1).i32(4)
	e.u8(0).i32(1).i32(0)
	e.i32(0).i32(0)
	e.u8(3).i32(0).i32(4).i64(10).i64(20).i64(30).i64(40).file(50, "/old/chk-1/kg")
	e.u8(0).i32(0).i32(0)
	if version >= 7 {
		e.u8(0)
	}
	e.raw(javaProps("NATIVE"))
	return e.Bytes()
}

// javaProps writes a Java-serialized CheckpointProperties with a
// SavepointType of the given format, by the Java serialization grammar.
func javaProps(format string) []byte {
	e := &enc{}
	e.raw([]byte{0xAC, 0xED, 0x00, 0x05})
	// handle 0: class desc CheckpointProperties
	e.u8(0x73).u8(0x72).utf("org.apache.flink.runtime.checkpoint.CheckpointProperties").i64(2).u8(0x02)
	e.raw([]byte{0, 2})
	e.u8('Z').utf("forced")
	e.u8('L').utf("checkpointType").u8(0x74).utf("Lorg/apache/flink/runtime/checkpoint/SnapshotType;") // handle 1
	e.u8(0x78).u8(0x70)
	// handle 2: the object
	e.u8(1) // forced
	// checkpointType: object of class SavepointType (handle 3 desc, 6 object...)
	e.u8(0x73).u8(0x72).utf("org.apache.flink.runtime.checkpoint.SavepointType").i64(7).u8(0x02) // handle 3
	e.raw([]byte{0, 2})
	e.u8('L').utf("formatType").u8(0x74).utf("Lorg/apache/flink/core/execution/SavepointFormatType;") // handle 4
	e.u8('L').utf("name").u8(0x74).utf("Ljava/lang/String;")                                          // handle 5
	e.u8(0x78).u8(0x70)
	// handle 6: the SavepointType object; formatType: enum
	e.u8(0x7E).u8(0x72).utf("org.apache.flink.core.execution.SavepointFormatType").i64(0).u8(0x12).raw([]byte{0, 0}) // handle 7
	e.u8(0x78).u8(0x72).utf("java.lang.Enum").i64(0).u8(0x12).raw([]byte{0, 0}).u8(0x78).u8(0x70)                    // handle 8
	e.u8(0x74).utf(format)                                                                                           // handle 9 enum, 10 string
	e.u8(0x74).utf("Savepoint")
	return e.Bytes()
}

func TestEncodedVersions567(t *testing.T) {
	for _, v := range []int32{5, 6, 7} {
		data := metadataV567(v)
		m, err := metadata.ParseMetadata(data, "enc")
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if m.Version != int(v) || m.CheckpointID != 42 || len(m.Operators) != 3 || m.Size != int64(len(data)) {
			t.Fatalf("v%d: header %+v", v, m)
		}
		if ms := m.MasterStates; len(ms) != 1 || ms[0].Name != "master" || ms[0].Version != 3 || !bytes.Equal(ms[0].Data, []byte{9, 8}) {
			t.Errorf("v%d: master states %+v", v, ms)
		}
		p := m.Properties
		if p == nil || !p.Savepoint || p.Format != "NATIVE" || p.TypeName != "Savepoint" || !p.Flags["forced"] {
			t.Errorf("v%d: properties %+v", v, p)
		}
		op := m.Operators[0]
		if op.Name != "Source: numbers" || op.UID != "src-uid" || op.ID.String() != "000102030405060708090a0b0c0d0e0f" ||
			op.Parallelism != 2 || op.MaxParallelism != 128 || string(op.CoordinatorState.Data) != "C" || len(op.Subtasks) != 2 {
			t.Fatalf("v%d: operator %+v", v, op)
		}
		if st := op.Subtasks[1]; st.Index != 1 || !st.Finished {
			t.Errorf("v%d: finished subtask %+v", v, st)
		}
		st := op.Subtasks[0]
		mo := st.ManagedOperatorState
		if mo.Type != metadata.HandleOperatorState || len(mo.States) != 2 || mo.States[0].Name != "offsets" || mo.States[0].Mode != metadata.SplitDistribute ||
			len(mo.States[0].Offsets) != 2 || mo.States[1].Mode != metadata.Broadcast || mo.States[1].Offsets[0] != 30 ||
			mo.Delegate.Type != metadata.HandleRelativeFile || mo.Delegate.Path != "op-state-file" || mo.Delegate.Size != 40 {
			t.Errorf("v%d: managed operator state %+v", v, mo)
		}
		ro := st.RawOperatorState
		if ro.Type != metadata.HandleSegmentOperatorState || ro.TaskOwnedDir != "/task-owned" || ro.SharedDir != "/shared" || ro.IsEmpty ||
			ro.States[0].Mode != metadata.Union || ro.Delegate.Type != metadata.HandleSegmentFile || ro.Delegate.StartPos != 100 ||
			ro.Delegate.Size != 50 || ro.Delegate.Scope != 1 || ro.Delegate.Path != "/merged/file" || ro.Delegate.LogicalFileID != "logical-1" {
			t.Errorf("v%d: raw operator state %+v / %+v", v, ro, ro.Delegate)
		}
		inc := st.ManagedKeyedState.Incremental
		if inc == nil || inc.CheckpointID != 7 || inc.BackendID != "backend-uuid" || inc.Range != (metadata.KeyGroupRange{Start: 0, Count: 64}) ||
			inc.CheckpointedSize != 12345 || inc.Meta.Path != "meta" || len(inc.Shared) != 1 || inc.Shared[0].Handle.Path != "/abs/shared/000010.sst" ||
			len(inc.Private) != 2 || inc.Private[1].LocalName != "CURRENT" || inc.Private[1].Handle.Type != metadata.HandleEmptySegmentFile || inc.StateHandleID != "shid-11" {
			t.Errorf("v%d: incremental %+v", v, inc)
		}
		cl := st.RawKeyedState.Changelog
		if cl == nil || st.RawKeyedState.Type != metadata.HandleChangelogV2 || cl.CheckpointedSize != 777 || len(cl.Materialized) != 4 ||
			len(cl.NonMaterialized) != 3 || cl.MaterializationID != 55 || cl.CheckpointID != 56 || cl.StateHandleID != "shid-14" {
			t.Fatalf("v%d: changelog %+v", v, cl)
		}
		wantTypes := []metadata.HandleType{12, 5, 7, 8, 9, 10, 13}
		all := append(append([]*metadata.KeyedHandle{}, cl.Materialized...), cl.NonMaterialized...)
		for i, h := range all {
			if h.Type != wantTypes[i] {
				t.Errorf("v%d: changelog handle %d is %v, want %v", v, i, h.Type, wantTypes[i])
			}
		}
		if kg := all[0].KeyGroups; kg.StateHandleID != "shid-12" || string(kg.Delegate.Data) != "xy" || kg.Offsets[1] != 2 {
			t.Errorf("v%d: key-groups v2 %+v", v, kg)
		}
		if in := all[1].Incremental; in.CheckpointedSize != -1 || in.BackendID != "legacy-backend" || in.Meta != nil {
			t.Errorf("v%d: incremental v1 %+v", v, in)
		}
		if kg := all[2].KeyGroups; kg.Range.Start != 3 || kg.Delegate.Type != metadata.HandleKeyGroups || kg.Delegate.KeyGroups.Range.Start != 3 {
			t.Errorf("v%d: savepoint key groups %+v", v, kg)
		}
		if c8 := all[3].Changelog; c8.CheckpointID != 11 || c8.MaterializationID != 11 || len(c8.Materialized) != 1 || c8.StateHandleID != "shid-8" {
			t.Errorf("v%d: changelog v1 %+v", v, c8)
		}
		if b := all[4].ChangelogBytes; b.From != 1 || b.To != 3 || len(b.Changes) != 2 || b.Changes[0].KeyGroup != 5 || b.Changes[1].KeyGroup != -1 {
			t.Errorf("v%d: changelog bytes %+v", v, b)
		}
		if f := all[5].ChangelogFiles; f.StorageIdentifier != "filesystem" || f.Handles[0].Offset != 16 || f.Handles[0].Handle.Path != "/dstl/a" || f.CheckpointedSize != 30 {
			t.Errorf("v%d: changelog files %+v", v, f)
		}
		if f := all[6].ChangelogFiles; f.StorageIdentifier != "memory" || f.StateHandleID != "shid-13" {
			t.Errorf("v%d: changelog files v2 %+v", v, f)
		}
		if len(st.InputChannels) != 1 || len(st.ResultSubpartitions) != 1 {
			t.Fatalf("v%d: channels %d/%d", v, len(st.InputChannels), len(st.ResultSubpartitions))
		}
		if ic := st.InputChannels[0]; ic.Info != [2]int32{1, 2} || ic.Size != 4 || string(ic.Delegate.Data) != "abcd" || len(ic.Offsets) != 1 {
			t.Errorf("v%d: input channel %+v", v, ic)
		}
		rs := st.ResultSubpartitions[0]
		if v >= 6 {
			if !rs.Merged() || rs.Size != 6 || !bytes.Equal(rs.SerializedChannelOffsets, mergedTable) ||
				fmt.Sprint(rs.Channels()) != "[{[3 4] 6 [4]}]" {
				t.Errorf("v%d: merged result subpartition %+v", v, rs)
			}
		} else if rs.Merged() || rs.Info != [2]int32{3, 4} || rs.Delegate != nil {
			t.Errorf("v%d: result subpartition %+v", v, rs)
		}
		if v >= 7 {
			if st.RefCheckpointID == nil || *st.RefCheckpointID != 41 {
				t.Errorf("v%d: ref checkpoint %v", v, st.RefCheckpointID)
			}
		} else if st.RefCheckpointID != nil {
			t.Errorf("v%d: unexpected ref checkpoint", v)
		}
		if op2 := m.Operators[1]; !op2.FullyFinished || op2.Name != "" || len(op2.Subtasks) != 0 {
			t.Errorf("v%d: finished operator %+v", v, op2)
		}
		op3 := m.Operators[2]
		if kg := op3.Subtasks[0].ManagedKeyedState.KeyGroups; kg == nil || kg.Range != (metadata.KeyGroupRange{Start: 0, Count: 4}) || kg.Offsets[3] != 40 ||
			kg.Delegate.Type != metadata.HandleFile || kg.Delegate.Path != "/old/chk-1/kg" || op3.Subtasks[0].RefCheckpointID != nil {
			t.Errorf("v%d: keyed operator %+v", v, op3.Subtasks[0])
		}
		for n := 0; n < len(data); n++ {
			if _, err := metadata.ParseMetadata(data[:n], "enc"); !errors.Is(err, wire.ErrCorrupt) {
				t.Fatalf("v%d cut at %d: %v", v, n, err)
			}
		}
	}
}

// TestHugeCountsDoNotAllocate checks that impossible counts fail before any
// allocation sized by them.
func TestHugeCountsDoNotAllocate(t *testing.T) {
	e := &enc{}
	e.i32(metadata.MetadataMagic).i32(3).i64(1).i32(0).i32(1)
	e.raw(make([]byte, 16)).i32(1).i32(1).u8(0).i32(1).i32(0)
	e.i32(1).u8(4).i32(0x7FFFFFFF)
	allocs := testing.AllocsPerRun(10, func() {
		if _, err := metadata.ParseMetadata(e.Bytes(), "huge"); !errors.Is(err, wire.ErrCorrupt) {
			t.Fatal(err)
		}
	})
	if allocs > 20 {
		t.Errorf("%v allocations for a corrupt count", allocs)
	}
}
