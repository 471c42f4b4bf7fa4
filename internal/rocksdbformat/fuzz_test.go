package rocksdbformat

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// The fuzz targets below run their seeds under go test (-run Fuzz) and
// are fuzzed by make fuzz (scripts/fuzz.sh finds every ^Fuzz target).

var (
	fuzzKinds    = []snapshot.StateKind{snapshot.Value, snapshot.List, snapshot.Map, snapshot.Reducing, snapshot.Aggregating}
	fuzzKeyTypes = []snapshot.Type{tString, {Name: snapshot.TypeInt32}, tInt64, tBytes}
	fuzzNsTypes  = []snapshot.Type{tVoid, tString, tInt64, {Name: snapshot.TypeInt32}}
	// fuzzMaxP gives both key-group prefix widths: 1 byte, then 2.
	fuzzMaxP = []int{128, 1 << 15}
)

// fuzzCodecs calls fn with a codec for every state kind, both prefix
// widths, with and without TTL, for the key and namespace types sel picks.
func fuzzCodecs(sel uint8, fn func(c *Codec, maxP int)) {
	kt := fuzzKeyTypes[int(sel)%len(fuzzKeyTypes)]
	nt := fuzzNsTypes[int(sel/4)%len(fuzzNsTypes)]
	for _, kind := range fuzzKinds {
		for _, maxP := range fuzzMaxP {
			for _, ttl := range []int64{0, 60_000} {
				ks := snapshot.KeyedState{Name: "s", Kind: kind, KeyType: kt, NamespaceType: nt, UserKeyType: tBytes, ValueType: tBytes}
				if ttl != 0 {
					ks.TTL = &snapshot.TTL{TTLMillis: ttl}
				}
				fn(newCodec(&ks, maxP), maxP)
			}
		}
	}
}

// typeSel is the fuzzCodecs selector of a key and a namespace type.
func typeSel(kt, nt snapshot.Type) uint8 {
	var k, n int
	for i, t := range fuzzKeyTypes {
		if t.Name == kt.Name {
			k = i
		}
	}
	for i, t := range fuzzNsTypes {
		if t.Name == nt.Name {
			n = i
		}
	}
	return uint8(n*4 + k)
}

// fit makes b a valid part of a type of the given width (-1: any).
func fit(b []byte, width int) []byte {
	if width < 0 {
		return b
	}
	out := make([]byte, width)
	copy(out, b)
	return out
}

// fuzzEntry is the valid entry of c closest to the fuzzer's bytes.
func fuzzEntry(c *Codec, maxP int, kg uint16, key, ns, uk, val []byte, expires int64) snapshot.Entry {
	e := snapshot.Entry{State: c.State, KeyGroup: int(kg) % maxP, Key: fit(key, c.keyW), Value: val}
	if !c.void {
		e.Namespace = fit(ns, c.nsW)
	}
	if c.Kind == snapshot.Map {
		e.UserKey = uk
	}
	if c.ttl != 0 {
		e.ExpiresAt = expires
	}
	return e
}

// seedEntries are the entries of a generated snapshot's operator.
func seedEntries(t testing.TB) (*snapshot.Operator, []snapshot.Entry) {
	op := rockstest.Operator("f0", 1, 128)
	return op, rockstest.Entries(t, op, 12, 3)[0]
}

// FuzzLayoutRoundTrip: for every state kind and both prefix widths, the
// key and value an entry is stored as decode to that entry; a list's
// merged value decodes to its elements; and a map key's prefix (what
// MapEntries seeks) is a prefix of that key's map entries only.
func FuzzLayoutRoundTrip(f *testing.F) {
	op, es := seedEntries(f)
	for _, e := range es {
		ks, _ := op.KeyedStateByName(e.State)
		f.Add(typeSel(ks.KeyType, ks.NamespaceType), uint16(e.KeyGroup), e.Key, e.Namespace, e.UserKey, e.Value, []byte("other"), e.ExpiresAt)
	}
	f.Add(uint8(0), uint16(0xffff), []byte{}, []byte{}, []byte{}, []byte{}, []byte{}, int64(-1<<63))
	f.Add(uint8(5), uint16(200), []byte{0xff, 0xff}, []byte(","), []byte{0}, []byte{','}, []byte{0x80, 0x01}, int64(1<<63-1))
	f.Fuzz(func(t *testing.T, sel uint8, kg uint16, key, ns, uk, v1, v2 []byte, expires int64) {
		fuzzCodecs(sel, func(c *Codec, maxP int) {
			e := fuzzEntry(c, maxP, kg, key, ns, uk, v1, expires)
			k, err := c.EncodeKey(nil, &e)
			if err != nil {
				t.Fatalf("%s maxP %d: encode key of %+v: %v", c.Kind, maxP, e, err)
			}
			var got snapshot.Entry
			if err := c.DecodeKey(k, &got); err != nil {
				t.Fatalf("%s maxP %d: decode key %x: %v", c.Kind, maxP, k, err)
			}
			// The key's map prefix: the lookup key of Get/GetList/MapEntries.
			prefix, err := c.EncodeKey(nil, &snapshot.Entry{KeyGroup: e.KeyGroup, Key: e.Key, Namespace: e.Namespace})
			if err != nil || !bytes.HasPrefix(k, prefix) || (c.Kind != snapshot.Map && !bytes.Equal(k, prefix)) {
				t.Fatalf("%s maxP %d: lookup key %x (%v) is not the prefix of %x", c.Kind, maxP, prefix, err, k)
			}
			other := fuzzEntry(c, maxP, kg, v1, v2, nil, nil, 0)
			if !bytes.Equal(other.Key, e.Key) || !bytes.Equal(other.Namespace, e.Namespace) {
				op, err := c.EncodeKey(nil, &other)
				if err != nil || bytes.HasPrefix(k, op) {
					t.Fatalf("%s maxP %d: key %x of (%x, %x) starts with the prefix %x of (%x, %x) (%v)", c.Kind, maxP, k, e.Key, e.Namespace, op, other.Key, other.Namespace, err)
				}
			}
			var want []snapshot.Entry
			var v []byte
			if c.Kind == snapshot.List {
				for i, val := range [][]byte{v1, v2, {}} {
					x := e
					x.Value = val
					if c.ttl != 0 {
						x.ExpiresAt = expires + int64(i) // wraps, as stored
					}
					if v, err = c.AppendElement(v, len(v), &x); err != nil {
						t.Fatal(err)
					}
					want = append(want, x)
				}
			} else {
				if v, err = c.EncodeValue(nil, &e); err != nil {
					t.Fatal(err)
				}
				want = append(want, e)
			}
			var gotAll []snapshot.Entry
			if _, err := c.DecodeValues(k, v, &got, func(x *snapshot.Entry) bool {
				gotAll = append(gotAll, x.Clone())
				return true
			}); err != nil {
				t.Fatalf("%s maxP %d: decode value %x: %v", c.Kind, maxP, v, err)
			}
			if len(gotAll) != len(want) {
				t.Fatalf("%s maxP %d: %d values decoded, want %d", c.Kind, maxP, len(gotAll), len(want))
			}
			for i := range want {
				if !gotAll[i].Equal(&want[i]) {
					t.Fatalf("%s maxP %d: value %d decoded as\n%+v\nwant\n%+v", c.Kind, maxP, i, gotAll[i], want[i])
				}
			}
		})
	})
}

// FuzzLayoutDecode feeds arbitrary keys and values to every codec: they
// decode or fail with an error, never panic, and a key that decodes
// encodes again to one that decodes to the same entry.
func FuzzLayoutDecode(f *testing.F) {
	op, es := seedEntries(f)
	cs := Codecs(op)
	for _, e := range es {
		c := cs[e.State]
		ks, _ := op.KeyedStateByName(e.State)
		k, err := c.EncodeKey(nil, &e)
		if err != nil {
			f.Fatal(err)
		}
		v, err := c.EncodeValue(nil, &e)
		if c.Kind == snapshot.List {
			v, err = c.AppendElement(v[:0], 0, &e)
		}
		if err != nil {
			f.Fatal(err)
		}
		f.Add(typeSel(ks.KeyType, ks.NamespaceType), k, v)
	}
	f.Add(uint8(0), []byte{0, 0x80}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add(uint8(1), []byte{1}, []byte{5, 'a', ','})
	f.Fuzz(func(t *testing.T, sel uint8, k, v []byte) {
		fuzzCodecs(sel, func(c *Codec, maxP int) {
			var e snapshot.Entry
			if err := c.DecodeKey(k, &e); err == nil {
				e = e.Clone()
				k2, err := c.EncodeKey(nil, &e)
				if err != nil {
					t.Fatalf("%s maxP %d: key %x decodes to %+v, which does not encode: %v", c.Kind, maxP, k, e, err)
				}
				var back snapshot.Entry
				if err := c.DecodeKey(k2, &back); err != nil || !back.Equal(&e) {
					t.Fatalf("%s maxP %d: key %x re-encoded as %x decodes to %+v (%v), want %+v", c.Kind, maxP, k, k2, back, err, e)
				}
			}
			n := 0
			if _, err := c.DecodeValues(k, v, &e, func(x *snapshot.Entry) bool {
				n++
				return true
			}); err == nil && n > len(v)+1 {
				t.Fatalf("%s maxP %d: %d values from %d bytes", c.Kind, maxP, n, len(v))
			}
		})
	})
}

// fuzzDir is a directory for one fuzz process's files, reused by every
// input (a fresh t.TempDir per input would cost more than the decoding).
func fuzzDir(f *testing.F) (chkdir.Dir, string) {
	dir := f.TempDir()
	st, p, err := testReg.Storage.Resolve(context.Background(), dir)
	if err != nil {
		f.Fatal(err)
	}
	return chkdir.At(st, p), dir
}

// allocated runs fn and returns the bytes it allocated (the process's,
// which is fn's when nothing else runs).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// allocLimit is what decoding n bytes of a stateutil file may allocate:
// linear in n. A length claim the bytes cannot back (a 4-byte array32
// header asking for 2^32 elements) goes far past it.
func allocLimit(n int) uint64 { return 8<<20 + 4096*uint64(n) }

// seedFiles writes snapshots as the format's writer and the runtime's
// checkpointer do (Instance.Upload, then WriteMetadata) and returns the
// bytes of their _metadata and operator-state files: a self-contained
// savepoint and two incremental checkpoints (SST files in the job's shared
// directory; the second references the first one's).
func seedFiles(f *testing.F) (metas, opStates [][]byte) {
	ctx := context.Background()
	st := storage.Local()
	open := func(op *snapshot.Operator) []*Instance {
		var ins []*Instance
		for i := range op.Parallelism {
			in, err := OpenInstance(filepath.Join(f.TempDir(), "db"), op, i, keygroup.RangeOf(op.MaxParallelism, op.Parallelism, i))
			if err != nil {
				f.Fatal(err)
			}
			f.Cleanup(func() { in.Close() })
			ins = append(ins, in)
		}
		return ins
	}
	commit := func(d chkdir.Dir, op *snapshot.Operator, ins []*Instance, target func(*Instance) Target) {
		c := *op
		c.Subtasks = nil
		m := &Metadata{Snapshot: &snapshot.Snapshot{Format: FormatName, JobID: "job", Operators: []*snapshot.Operator{&c}}}
		for _, in := range ins {
			h, _, err := in.Upload(ctx, target(in), f.TempDir())
			if err != nil {
				f.Fatal(err)
			}
			m.Handles = append(m.Handles, h)
			c.Subtasks = append(c.Subtasks, in.SubtaskModel())
		}
		if err := WriteMetadata(ctx, d, m); err != nil {
			f.Fatal(err)
		}
	}

	sp := filepath.Join(f.TempDir(), "sp")
	op := rockstest.Operator("f0", 2, 128)
	ins := open(op)
	for i, es := range rockstest.Entries(f, op, 30, 4) {
		for j := range es {
			if err := ins[i].Put(&es[j]); err != nil {
				f.Fatal(err)
			}
		}
		for j := range 3 {
			ins[i].AddElement("offsets", []byte(fmt.Sprintf("p%d-%d", i, j)))
		}
		ins[i].SetRaw(snapshot.RawState{Keyed: []byte{byte(i)}})
	}
	commit(chkdir.At(st, sp), op, ins, func(*Instance) Target { return Target{Dir: chkdir.At(st, sp)} })

	root := f.TempDir()
	kv := rockstest.KVOperator(2, 256)
	ins = open(kv)
	uploaded := map[string]File{} // by local name and size
	r := rand.New(rand.NewPCG(5, 6))
	for id := int64(1); id <= 2; id++ {
		rockstest.PutKV(f, kv, 0, 200, 16, r, func(sub int, e *snapshot.Entry) error { return ins[sub].Put(e) })
		for _, in := range ins {
			in.SetOperatorState("offsets", [][]byte{[]byte("p0"), []byte("p1")})
			in.SetRaw(snapshot.RawState{Operator: []byte{byte(id)}})
		}
		chk := chkdir.At(st, filepath.Join(root, "job", chkdir.CheckpointDirName(id)))
		shared := func(ctx context.Context, name, local string, size int64) (File, bool, error) {
			k := name + "/" + strconv.FormatInt(size, 10)
			if f, ok := uploaded[k]; ok {
				return f, false, nil
			}
			remote := path.Join(chk.JobDir, chkdir.SharedDir, RandomName()+"-"+name)
			n, crc, err := UploadFile(ctx, st, local, remote)
			uploaded[k] = File{Local: name, Path: SharedRef(path.Base(remote)), Size: n, CRC32C: crc, Shared: true}
			return uploaded[k], true, err
		}
		if err := st.MkdirAll(ctx, path.Join(chk.JobDir, chkdir.SharedDir)); err != nil {
			f.Fatal(err)
		}
		commit(chk, kv, ins, func(*Instance) Target { return Target{Dir: chk, Shared: shared} })
	}

	for _, dir := range []string{sp, filepath.Join(root, "job", "chk-1"), filepath.Join(root, "job", "chk-2")} {
		files, _ := filepath.Glob(filepath.Join(dir, "*", opStateName))
		for _, name := range append(files, filepath.Join(dir, MetadataName)) {
			data, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			if filepath.Base(name) == MetadataName {
				metas = append(metas, data)
			} else {
				opStates = append(opStates, data)
			}
		}
	}
	if len(metas) != 3 || len(opStates) == 0 {
		f.Fatalf("generated %d _metadata and %d operator-state files", len(metas), len(opStates))
	}
	return metas, opStates
}

// framedBody is the msgpack body of a framed file, for seeds of the
// framed-arbitrary-body mode.
func framedBody(data []byte) []byte {
	const header, trailer = 8 + 4 + 8, 4
	if len(data) < header+trailer {
		return nil
	}
	return data[header : len(data)-trailer]
}

// FuzzMetadata feeds arbitrary bytes, and envelopes with a valid checksum
// around arbitrary bodies, to the _metadata reader: it returns the
// metadata or an error, never panics, allocates in proportion to the
// input, and what it accepts can be walked (file lists, shared
// references, the reader's snapshot).
func FuzzMetadata(f *testing.F) {
	metas, _ := seedFiles(f)
	for _, m := range metas {
		f.Add(m, false)
		f.Add(framedBody(m), true)
	}
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff}, true) // array32 claiming 2^32 elements
	f.Add([]byte{0x82, 0xa8, 's', 'n', 'a', 'p', 's', 'h', 'o', 't', 0x80, 0xa7, 'h', 'a', 'n', 'd', 'l', 'e', 's', 0x91, 0xc0}, true)
	d, dir := fuzzDir(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte, wrap bool) {
		if wrap {
			data = metaKind.Encode(data)
		}
		if err := os.WriteFile(filepath.Join(dir, MetadataName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		var m *Metadata
		var err error
		if n := allocated(func() { m, err = ReadMetadata(ctx, d) }); n > allocLimit(len(data)) {
			t.Fatalf("reading %d bytes of _metadata allocated %d bytes", len(data), n)
		}
		if err != nil {
			return
		}
		m.fillFiles()
		_, _ = m.SharedPaths(d)
		for _, op := range m.Snapshot.Operators {
			if op == nil {
				continue
			}
			for _, sub := range op.Subtasks {
				if sub != nil {
					m.Handle(op.ID, sub.Index)
				}
			}
		}
		// The reader's way in: the directory resolved as a snapshot.
		rd, err := chkdir.ResolveIn(ctx, storage.Local(), dir)
		if err == nil {
			_, err = ReadMetadata(ctx, rd)
		}
		if err != nil {
			t.Fatalf("ReadMetadata accepted what the resolved directory refuses: %v", err)
		}
	})
}

// FuzzOperatorState does the same for the operator-state file, whose size
// the _metadata states (and may state wrongly).
func FuzzOperatorState(f *testing.F) {
	_, opStates := seedFiles(f)
	for _, o := range opStates {
		f.Add(o, false, int64(len(o)))
		f.Add(framedBody(o), true, int64(-1))
	}
	f.Add([]byte{0x82, 0xa6, 's', 't', 'a', 't', 'e', 's', 0xdd, 0x7f, 0xff, 0xff, 0xff}, true, int64(1<<62))
	d, dir := fuzzDir(f)
	rel := path.Join(SubtaskDirName("f0", 0), opStateName)
	if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(path.Dir(rel))), 0o755); err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte, wrap bool, size int64) {
		if wrap {
			data = opStateKind.Encode(data)
		}
		if size < 0 {
			size = int64(len(data))
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		var o *OpState
		var err error
		if n := allocated(func() { o, err = ReadOpState(ctx, d, &File{Path: rel, Size: size}) }); n > allocLimit(len(data)) {
			t.Fatalf("reading %d bytes of operator state allocated %d bytes", len(data), n)
		}
		if err != nil {
			return
		}
		o.stats()
		o.empty()
		in := &Instance{ops: *o, kgs: keygroup.Range{Start: 0, End: 0}}
		in.SubtaskModel()
	})
}
