package rocksdb

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stateutil/stateutil/internal/chkdir"
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
func fuzzCodecs(sel uint8, fn func(c *codec, maxP int)) {
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
func fuzzEntry(c *codec, maxP int, kg uint16, key, ns, uk, val []byte, expires int64) snapshot.Entry {
	e := snapshot.Entry{State: c.state, KeyGroup: int(kg) % maxP, Key: fit(key, c.keyW), Value: val}
	if !c.void {
		e.Namespace = fit(ns, c.nsW)
	}
	if c.kind == snapshot.Map {
		e.UserKey = uk
	}
	if c.ttl != 0 {
		e.ExpiresAt = expires
	}
	return e
}

// seedEntries are the entries of a generated snapshot's operator.
func seedEntries(t testing.TB) (*snapshot.Operator, []snapshot.Entry) {
	op := testOperator("f0", 1, 128)
	return op, testEntries(t, op, 12, 3)[0]
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
		fuzzCodecs(sel, func(c *codec, maxP int) {
			e := fuzzEntry(c, maxP, kg, key, ns, uk, v1, expires)
			k, err := c.encodeKey(nil, &e)
			if err != nil {
				t.Fatalf("%s maxP %d: encode key of %+v: %v", c.kind, maxP, e, err)
			}
			var got snapshot.Entry
			if err := c.decodeKey(k, &got); err != nil {
				t.Fatalf("%s maxP %d: decode key %x: %v", c.kind, maxP, k, err)
			}
			// The key's map prefix: the lookup key of Get/GetList/MapEntries.
			prefix, err := c.encodeKey(nil, &snapshot.Entry{KeyGroup: e.KeyGroup, Key: e.Key, Namespace: e.Namespace})
			if err != nil || !bytes.HasPrefix(k, prefix) || (c.kind != snapshot.Map && !bytes.Equal(k, prefix)) {
				t.Fatalf("%s maxP %d: lookup key %x (%v) is not the prefix of %x", c.kind, maxP, prefix, err, k)
			}
			other := fuzzEntry(c, maxP, kg, v1, v2, nil, nil, 0)
			if !bytes.Equal(other.Key, e.Key) || !bytes.Equal(other.Namespace, e.Namespace) {
				op, err := c.encodeKey(nil, &other)
				if err != nil || bytes.HasPrefix(k, op) {
					t.Fatalf("%s maxP %d: key %x of (%x, %x) starts with the prefix %x of (%x, %x) (%v)", c.kind, maxP, k, e.Key, e.Namespace, op, other.Key, other.Namespace, err)
				}
			}
			var want []snapshot.Entry
			var v []byte
			if c.kind == snapshot.List {
				for i, val := range [][]byte{v1, v2, {}} {
					x := e
					x.Value = val
					if c.ttl != 0 {
						x.ExpiresAt = expires + int64(i) // wraps, as stored
					}
					if v, err = c.appendElement(v, len(v), &x); err != nil {
						t.Fatal(err)
					}
					want = append(want, x)
				}
			} else {
				if v, err = c.encodeValue(nil, &e); err != nil {
					t.Fatal(err)
				}
				want = append(want, e)
			}
			var gotAll []snapshot.Entry
			if _, err := c.decodeValues(k, v, &got, func(x *snapshot.Entry) bool {
				gotAll = append(gotAll, x.Clone())
				return true
			}); err != nil {
				t.Fatalf("%s maxP %d: decode value %x: %v", c.kind, maxP, v, err)
			}
			if len(gotAll) != len(want) {
				t.Fatalf("%s maxP %d: %d values decoded, want %d", c.kind, maxP, len(gotAll), len(want))
			}
			for i := range want {
				if !gotAll[i].Equal(&want[i]) {
					t.Fatalf("%s maxP %d: value %d decoded as\n%+v\nwant\n%+v", c.kind, maxP, i, gotAll[i], want[i])
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
	cs := codecs(op)
	for _, e := range es {
		c := cs[e.State]
		ks, _ := op.KeyedStateByName(e.State)
		k, err := c.encodeKey(nil, &e)
		if err != nil {
			f.Fatal(err)
		}
		v, err := c.encodeValue(nil, &e)
		if c.kind == snapshot.List {
			v, err = c.appendElement(v[:0], 0, &e)
		}
		if err != nil {
			f.Fatal(err)
		}
		f.Add(typeSel(ks.KeyType, ks.NamespaceType), k, v)
	}
	f.Add(uint8(0), []byte{0, 0x80}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add(uint8(1), []byte{1}, []byte{5, 'a', ','})
	f.Fuzz(func(t *testing.T, sel uint8, k, v []byte) {
		fuzzCodecs(sel, func(c *codec, maxP int) {
			var e snapshot.Entry
			if err := c.decodeKey(k, &e); err == nil {
				e = e.Clone()
				k2, err := c.encodeKey(nil, &e)
				if err != nil {
					t.Fatalf("%s maxP %d: key %x decodes to %+v, which does not encode: %v", c.kind, maxP, k, e, err)
				}
				var back snapshot.Entry
				if err := c.decodeKey(k2, &back); err != nil || !back.Equal(&e) {
					t.Fatalf("%s maxP %d: key %x re-encoded as %x decodes to %+v (%v), want %+v", c.kind, maxP, k, k2, back, err, e)
				}
			}
			n := 0
			if _, err := c.decodeValues(k, v, &e, func(x *snapshot.Entry) bool {
				n++
				return true
			}); err == nil && n > len(v)+1 {
				t.Fatalf("%s maxP %d: %d values from %d bytes", c.kind, maxP, n, len(v))
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

// seedFiles generates snapshots and returns the bytes of their _metadata
// and operator-state files: a savepoint the Writer wrote (self-contained)
// and two incremental checkpoints (the second references the first one's
// shared SSTs).
func seedFiles(f *testing.F) (metas, opStates [][]byte) {
	ctx := context.Background()
	sp := filepath.Join(f.TempDir(), "sp")
	op := testOperator("f0", 2, 128)
	writeSnapshot(f, sp, op, testEntries(f, op, 30, 4))
	root := f.TempDir()
	b, err := NewIncremental(IncrementalOptions{LocalDir: f.TempDir(), Retain: 2, Storage: testReg.Storage})
	if err != nil {
		f.Fatal(err)
	}
	defer b.Close()
	kv := kvOperator(2, 256)
	r := rand.New(rand.NewPCG(5, 6))
	for id := int64(1); id <= 2; id++ {
		fillKV(f, b, kv, 0, 200, 16, r)
		for _, in := range b.Instances() {
			in.SetOperatorState("offsets", [][]byte{[]byte("p0"), []byte("p1")})
			in.SetRaw(snapshot.RawState{Operator: []byte{byte(id)}})
		}
		if _, err := b.Checkpoint(ctx, root, "job", id); err != nil {
			f.Fatal(err)
		}
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
		var m *metadata
		var err error
		if n := allocated(func() { m, err = readMetadata(ctx, d) }); n > allocLimit(len(data)) {
			t.Fatalf("reading %d bytes of _metadata allocated %d bytes", len(data), n)
		}
		if err != nil {
			return
		}
		m.fillFiles()
		_, _ = m.sharedPaths(d)
		for _, op := range m.Snapshot.Operators {
			if op == nil {
				continue
			}
			for _, sub := range op.Subtasks {
				if sub != nil {
					m.handle(op.ID, sub.Index)
				}
			}
		}
		r, err := openReader(ctx, storage.Local(), dir, snapshot.OpenOptions{TempDir: t.TempDir()})
		if err != nil {
			t.Fatalf("readMetadata accepted what openReader refuses: %v", err)
		}
		_ = r.Snapshot()
		_ = r.Close()
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
	rel := path.Join(subtaskDirName("f0", 0), opStateName)
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
		var o *opState
		var err error
		if n := allocated(func() { o, err = readOpState(ctx, d, &file{Path: rel, Size: size}) }); n > allocLimit(len(data)) {
			t.Fatalf("reading %d bytes of operator state allocated %d bytes", len(data), n)
		}
		if err != nil {
			return
		}
		o.stats()
		o.empty()
		in := &Instance{ops: *o, kgs: keygroup.Range{Start: 0, End: 0}}
		in.subtaskModel()
	})
}
