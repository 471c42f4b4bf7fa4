package flink

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/storage"
)

// manifestSizes reads MANIFEST.tsv: local_path -> size. The sizes there come
// from the files as copied, independently of this package.
func manifestSizes(t *testing.T, root string) map[string]int64 {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 2 {
			continue
		}
		if n, err := strconv.ParseInt(cols[1], 10, 64); err == nil {
			out[cols[0]] = n
		}
	}
	return out
}

// forEachStream calls fn for every stream handle a subtask state refers to.
func forEachStream(st *metadata.SubtaskState, fn func(*metadata.StreamHandle)) {
	var keyed func(*metadata.KeyedHandle)
	keyed = func(h *metadata.KeyedHandle) {
		switch {
		case h == nil:
		case h.KeyGroups != nil:
			fn(h.KeyGroups.Delegate)
		case h.Incremental != nil:
			fn(h.Incremental.Meta)
			for _, f := range append(append([]metadata.NamedStreamHandle{}, h.Incremental.Shared...), h.Incremental.Private...) {
				fn(f.Handle)
			}
		case h.Changelog != nil:
			for _, k := range append(append([]*metadata.KeyedHandle{}, h.Changelog.Materialized...), h.Changelog.NonMaterialized...) {
				keyed(k)
			}
		case h.ChangelogFiles != nil:
			for _, o := range h.ChangelogFiles.Handles {
				fn(o.Handle)
			}
		}
	}
	for _, h := range []*metadata.OperatorStateHandle{st.ManagedOperatorState, st.RawOperatorState} {
		if h != nil {
			fn(h.Delegate)
		}
	}
	keyed(st.ManagedKeyedState)
	keyed(st.RawKeyedState)
}

// TestRelativeHandleSizes checks, for every fixture directory with state
// files, that each relative handle resolves to an existing file whose size in
// MANIFEST.tsv is the size the handle declares.
func TestRelativeHandleSizes(t *testing.T) {
	root, files := metadataFiles(t)
	sizes := manifestSizes(t, root)
	dirs, handles := 0, 0
	for _, mf := range files {
		m, err := ReadMetadata(context.Background(), storage.Local(), mf)
		if err != nil {
			t.Fatal(err)
		}
		res := statefile.NewResolver(storage.Local(), mf, nil)
		seen := 0
		for _, op := range m.Operators {
			for _, st := range op.Subtasks {
				forEachStream(st, func(h *metadata.StreamHandle) {
					if h == nil || h.Type != metadata.HandleRelativeFile {
						return
					}
					loc, err := res.Locate(context.Background(), h)
					if err != nil {
						t.Errorf("%s: %v", mf, err)
						return
					}
					rel, _ := filepath.Rel(root, loc.Path)
					want, ok := sizes[filepath.ToSlash(rel)]
					if !ok {
						t.Errorf("%s: %s is not in MANIFEST.tsv", mf, rel)
						return
					}
					if want != h.Size {
						t.Errorf("%s: handle says %d bytes, MANIFEST %d", rel, h.Size, want)
					}
					seen++
				})
			}
		}
		if seen > 0 {
			dirs++
			handles += seen
		}
	}
	if dirs < 10 {
		t.Errorf("only %d fixture directories with relative handles", dirs)
	}
	t.Logf("%d relative handles in %d directories match MANIFEST.tsv sizes", handles, dirs)
}

// TestOperatorStateFigures checks operator state read from files against
// offsets and strings read by hand with xxd.
func TestOperatorStateFigures(t *testing.T) {
	root := fixtureRoot(t)
	dragons := []any{"Here be dragons!", "Here be more dragons!", "Here be yet more dragons!", "Here be the mostest dragons!"}
	for _, c := range []struct {
		dir, file string
		version   int
		offsets   []int64
	}{
		// xxd .../566b8b97-...: header version 5 at 0, one state
		// "source-state" (SPLIT_DISTRIBUTE, StringSerializerSnapshot v3),
		// short 0 broadcast states at 0xc4; elements at 0xc6, 0xd7, 0xed,
		// 0x107 ("\x11Here be dragons!" ...), file ends at 0x124 (292).
		{"new-stateful-broadcast-udf-migration-itcase-flink1.17-hashmap-checkpoint", "566b8b97-31e7-4195-a029-0987d968c420", 5, []int64{0xc6, 0xd7, 0xed, 0x107}},
		// xxd of _metadata at 0xae8: version 2, the Java-serialized
		// StringSerializer block ends at 0xc87, then int 1 (state count),
		// elements from 0xc8b (stream offset 419).
		{"type-serializer-snapshot-migration-itcase-flink1.3-savepoint", "", 2, []int64{419, 436, 458, 484}},
	} {
		mf := filepath.Join(root, c.dir, "_metadata")
		m, err := ReadMetadata(context.Background(), storage.Local(), mf)
		if err != nil {
			t.Fatal(err)
		}
		res := statefile.NewResolver(storage.Local(), mf, nil)
		found := false
		for _, op := range m.Operators {
			for _, st := range op.Subtasks {
				h := st.ManagedOperatorState
				if h == nil || len(h.States) != 1 || h.States[0].Name != "source-state" {
					continue
				}
				if c.file != "" && !strings.Contains(h.Delegate.Path, c.file) {
					continue
				}
				found = true
				of, err := res.ReadOperatorState(context.Background(), h)
				if err != nil {
					t.Fatalf("%s: %v", c.dir, err)
				}
				p := of.Partitions[0]
				if of.Version != c.version || of.HeaderSize != c.offsets[0] ||
					len(p.Elements) != 4 || p.Mode != metadata.SplitDistribute {
					t.Fatalf("%s: version %d header %d elements %d", c.dir, of.Version, of.HeaderSize, len(p.Elements))
				}
				for i, e := range p.Elements {
					v, n, err := DecodeValue(p.Meta.Value(), e)
					if err != nil || v != dragons[i] || n != len(e) || p.Offsets[i] != c.offsets[i] {
						t.Errorf("%s: element %d = %v (%d of %d bytes, %v) at %d", c.dir, i, v, n, len(e), err, p.Offsets[i])
					}
				}
			}
		}
		if !found {
			t.Errorf("%s: no source-state handle", c.dir)
		}
	}
}

// TestBroadcastAndKeyedHeaders checks header contents seen with xxd.
func TestBroadcastAndKeyedHeaders(t *testing.T) {
	root := fixtureRoot(t)
	// xxd .../0e3582f2-...: version 5, 0 operator states, 2 broadcast states
	// "broadcast-state-2" and "broadcast-state-1", BROADCAST mode, VALUE =
	// LongSerializerSnapshot, KEY = StringSerializerSnapshot.
	dir := filepath.Join(root, "new-stateful-broadcast-udf-migration-itcase-flink1.17-hashmap-checkpoint")
	res := statefile.NewResolver(storage.Local(), filepath.Join(dir, "_metadata"), nil)
	of, err := res.ReadOperatorState(context.Background(), &metadata.OperatorStateHandle{Type: metadata.HandleOperatorState,
		Delegate: &metadata.StreamHandle{Type: metadata.HandleRelativeFile, Path: "0e3582f2-8a8d-4471-9088-63e26bbfcd2d", Size: 704}})
	if err != nil {
		t.Fatal(err)
	}
	if len(of.States) != 0 || len(of.BroadcastStates) != 2 || of.BroadcastStates[0].Name != "broadcast-state-2" ||
		of.BroadcastStates[1].Name != "broadcast-state-1" || of.BroadcastStates[0].Type != statefile.BroadcastMapState ||
		of.BroadcastStates[0].Options["OPERATOR_STATE_DISTRIBUTION_MODE"] != "BROADCAST" ||
		!strings.HasSuffix(of.BroadcastStates[0].Serializers["KEY_SERIALIZER"].Class, "StringSerializerSnapshot") ||
		!strings.HasSuffix(of.BroadcastStates[0].Value().Class, "LongSerializerSnapshot") {
		t.Errorf("broadcast header: %+v", of.BroadcastStates)
	}

	// The Flink 1.7 savepoint keeps keyed state inline. Its header (dumped
	// from _metadata): version 6, no compression, key serializer a legacy
	// TupleSerializerConfigSnapshot of a Java-serialized TupleSerializer,
	// one state "testState" of type VALUE whose value serializer is the
	// test's TestSerializerSnapshot and namespace serializer
	// VoidNamespaceSerializer.
	mf := filepath.Join(root, "type-serializer-snapshot-migration-itcase-flink1.7-savepoint", "_metadata")
	m, err := ReadMetadata(context.Background(), storage.Local(), mf)
	if err != nil {
		t.Fatal(err)
	}
	res = statefile.NewResolver(storage.Local(), mf, nil)
	n := 0
	for _, op := range m.Operators {
		for _, st := range op.Subtasks {
			if st.ManagedKeyedState == nil {
				continue
			}
			kf, err := res.ReadKeyGroups(context.Background(), st.ManagedKeyedState)
			if err != nil {
				t.Fatal(err)
			}
			h := kf.Header
			if h.Version != 6 || h.Compression || h.KeySerializer.SerializerClass != "org.apache.flink.api.java.typeutils.runtime.TupleSerializer" ||
				len(h.States) != 1 || h.States[0].Name != "testState" || h.States[0].KeyedStateType() != "VALUE" ||
				!strings.HasSuffix(h.States[0].Value().Class, "$TestSerializerSnapshot") ||
				h.States[0].Serializers["NAMESPACE_SERIALIZER"].SerializerClass != "org.apache.flink.runtime.state.VoidNamespaceSerializer" {
				t.Errorf("keyed header: %+v %+v", h, h.States)
			}
			n++
		}
	}
	if n == 0 {
		t.Error("no keyed state in the 1.7 savepoint")
	}
}

// TestReadAllState reads every operator and keyed stream of every fixture.
func TestReadAllState(t *testing.T) {
	root, files := metadataFiles(t)
	counts := map[string]int{}
	for _, mf := range files {
		rel, _ := filepath.Rel(root, mf)
		m, err := ReadMetadata(context.Background(), storage.Local(), mf)
		if err != nil {
			t.Fatal(err)
		}
		res := statefile.NewResolver(storage.Local(), mf, nil)
		for _, op := range m.Operators {
			for _, st := range op.Subtasks {
				for _, h := range []*metadata.OperatorStateHandle{st.ManagedOperatorState, st.RawOperatorState} {
					if h == nil {
						continue
					}
					if _, err := res.ReadOperatorState(context.Background(), h); err != nil {
						t.Errorf("%s: %v", rel, err)
					}
					counts["operator"]++
				}
				if h := st.RawKeyedState; h != nil && h.KeyGroups != nil {
					if _, err := res.ReadRawKeyGroups(context.Background(), h); err != nil {
						t.Errorf("%s: raw: %v", rel, err)
					}
					counts["raw keyed"]++
				}
				h := st.ManagedKeyedState
				switch {
				case h == nil:
				case h.KeyGroups != nil:
					kf, err := res.ReadKeyGroups(context.Background(), h)
					if err != nil {
						t.Errorf("%s: %v", rel, err)
						continue
					}
					counts["keyed "+string(kf.Format)]++
					for _, g := range kf.KeyGroups {
						counts["entries"] += len(g.Entries)
					}
				case h.Incremental != nil:
					if _, err := res.ReadNativeMeta(context.Background(), h.Incremental); err != nil {
						t.Errorf("%s: %v", rel, err)
					}
					nf, err := res.NativeFiles(context.Background(), h.Incremental)
					if err != nil {
						t.Errorf("%s: %v", rel, err)
					}
					for _, f := range nf {
						if _, err := os.Stat(f.Location.Path); err != nil {
							t.Errorf("%s: native file %s: %v", rel, f.LocalName, err)
						}
					}
					counts["native"]++
				}
			}
		}
	}
	t.Logf("read %v", counts)
	if counts["keyed canonical"] == 0 || counts["keyed heap"] == 0 || counts["native"] == 0 || counts["entries"] == 0 {
		t.Errorf("a kind of state was never read: %v", counts)
	}
}

func TestPathMapping(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kg"), []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &metadata.StreamHandle{Type: metadata.HandleFile, Path: "file:/old/cluster/chk-1/kg", Size: 3}
	res := statefile.NewResolver(storage.Local(), filepath.Join(dir, "_metadata"), nil)
	if _, _, _, err := res.Bytes(context.Background(), h); err == nil || !strings.Contains(err.Error(), "absolute state path") {
		t.Errorf("unmapped absolute path: %v", err)
	}
	res.Mappings = []statefile.PathMapping{{Old: "file:/old", New: "/elsewhere"}, {Old: "file:/old/cluster/chk-1", New: dir}}
	loc, err := res.Locate(context.Background(), h)
	if err != nil || !loc.Absolute || !loc.Remapped || loc.Path != filepath.Join(dir, "kg") {
		t.Fatalf("locate: %+v %v", loc, err)
	}
	if b, _, _, err := res.Bytes(context.Background(), h); err != nil || string(b) != "abc" {
		t.Errorf("bytes: %q %v", b, err)
	}
	if _, err := res.Locate(context.Background(), &metadata.StreamHandle{Type: metadata.HandleFile, Path: "hdfs://nn/x"}); !errors.Is(err, statefile.ErrNotLocal) {
		t.Errorf("hdfs path: %v", err)
	}
	if _, err := res.Locate(context.Background(), &metadata.StreamHandle{Type: metadata.HandleRelativeFile, Path: "../x"}); !errors.Is(err, wire.ErrCorrupt) {
		t.Errorf("escaping relative path: %v", err)
	}
}

// TestSnappyKeyGroups builds a canonical keyed stream whose key groups are
// compressed with the Snappy framing format (what snappy-java's framed
// streams write) and reads it back.
func TestSnappyKeyGroups(t *testing.T) {
	hdr := &enc{}
	hdr.i32(6).u8(1) // version 6, compression on
	hdr.i32(2).utf("org.apache.flink.api.common.typeutils.base.LongSerializer$LongSerializerSnapshot").i32(3)
	hdr.raw([]byte{0, 1}).utf("count").i32(0).i32(1).utf("KEYED_STATE_TYPE").utf("VALUE").i32(1)
	hdr.utf("VALUE_SERIALIZER").i32(2).utf("org.apache.flink.api.common.typeutils.base.IntSerializer$IntSerializerSnapshot").i32(3)
	group := func(keys ...byte) []byte {
		plain := &enc{}
		plain.raw([]byte{0, 0})
		for i, k := range keys {
			key := []byte{k, 0, 0, 0, 0, 0, 0, 0, 7, 0}
			if i == len(keys)-1 {
				key[0] |= 0x80
			}
			plain.i32(int32(len(key))).raw(key).i32(4).i32(int32(i + 1))
		}
		plain.raw([]byte{0xFF, 0xFF})
		var buf bytes.Buffer
		w := snappy.NewBufferedWriter(&buf)
		w.Write(plain.Bytes())
		w.Close()
		return buf.Bytes()
	}
	data := append([]byte{}, hdr.Bytes()...)
	o0 := int64(len(data))
	data = append(data, group(0, 0)...)
	o1 := int64(len(data))
	data = append(data, group(1)...)
	kf, err := statefile.ParseKeyGroups(serializers, data, "snappy", 0, &metadata.KeyGroupsHandle{Range: metadata.KeyGroupRange{Start: 0, Count: 3}, Offsets: []int64{o0, o1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if !kf.Header.Compression || kf.Format != statefile.CanonicalFormat || len(kf.KeyGroups) != 3 ||
		len(kf.KeyGroups[0].Entries) != 2 || len(kf.KeyGroups[1].Entries) != 1 || len(kf.KeyGroups[2].Entries) != 0 {
		t.Fatalf("%+v", kf)
	}
	e := kf.KeyGroups[0].Entries[1]
	v, _, err := DecodeValue(kf.Header.States[0].Value(), e.Value)
	if e.State != "count" || e.Key[0] != 0 || err != nil || v != int32(2) {
		t.Errorf("entry %+v value %v %v", e, v, err)
	}
	// A flipped byte in a compressed chunk fails the CRC.
	bad := append([]byte{}, data...)
	bad[o1+len64(bad[o1:])/2] ^= 0xFF
	if _, err := statefile.ParseKeyGroups(serializers, bad, "snappy", 0, &metadata.KeyGroupsHandle{Range: metadata.KeyGroupRange{Start: 0, Count: 2}, Offsets: []int64{o0, o1}}); !errors.Is(err, wire.ErrCorrupt) {
		t.Errorf("corrupt snappy chunk: %v", err)
	}
}

func len64(b []byte) int64 { return int64(len(b)) }

func TestDecodeValues(t *testing.T) {
	simple := func(name string) *typeser.SerializerSnapshot {
		return &typeser.SerializerSnapshot{Class: "org.apache.flink.api.common.typeutils.base." + name + "$" + name + "Snapshot", Version: 3}
	}
	long, str := simple("LongSerializer"), simple("StringSerializer")
	tuple := &typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.TupleSerializerSnapshot", Nested: []*typeser.SerializerSnapshot{long, str}}
	ttl := &typeser.SerializerSnapshot{Class: "org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot", Nested: []*typeser.SerializerSnapshot{long, tuple}}
	b := binary.BigEndian.AppendUint64(nil, 1700000000000)
	b = binary.BigEndian.AppendUint64(b, 42)
	// "hé😀": length 4 UTF-16 units + 1 = 5; é = 0xE9 -> E9 01; the
	// surrogates D83D DE00 -> BD B0 03, 80 BC 03.
	b = append(b, 5, 'h', 0xE9, 0x01, 0xBD, 0xB0, 0x03, 0x80, 0xBC, 0x03)
	v, n, err := DecodeValue(ttl, b)
	if err != nil || n != len(b) {
		t.Fatalf("%v %d %v", v, n, err)
	}
	tv := v.(typeser.TTLValue)
	if tv.LastAccess != 1700000000000 || FormatValue(tv.Value) != `(42, "hé😀")` {
		t.Errorf("got %s", FormatValue(v))
	}
	if v, _, _ := DecodeValue(str, []byte{0}); v != nil {
		t.Errorf("null string: %v", v)
	}
	if _, _, err := DecodeValue(str, []byte{200, 1, 'a'}); !errors.Is(err, wire.ErrCorrupt) {
		t.Errorf("long string in short bytes: %v", err)
	}
	raw, _, _ := DecodeValue(&typeser.SerializerSnapshot{Class: "com.example.PojoSnapshot"}, []byte{1, 2})
	if rv, ok := raw.(typeser.RawValue); !ok || rv.Serializer != "com.example.PojoSnapshot" || len(rv.Bytes) != 2 {
		t.Errorf("raw: %#v", raw)
	}
}
