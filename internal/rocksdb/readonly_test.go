package rocksdb

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/linxGnu/grocksdb"
)

// pairsOf reads every pair of cf through it.
func pairsOf(t *testing.T, it *Iterator) [][2][]byte {
	t.Helper()
	defer it.Close()
	var out [][2][]byte
	for ; it.Valid(); it.Next() {
		out = append(out, [2][]byte{slices.Clone(it.Key()), slices.Clone(it.Value())})
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSSTCopyFromEitherIterator copies a column family into an SST file
// after reading its first pairs in Go, from a read-only database's
// iterator (the shim's C loop) and from a writable one's, and ingests
// the file into another database: every pair arrives once, in order.
func TestSSTCopyFromEitherIterator(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "src")
	src, err := Open(dir, []string{"s"})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range 20_000 {
		if err := src.Put("s", []byte(fmt.Sprintf("k%06d", i)), randomBytes(rng, rng.IntN(100))); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.Flush(); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(dir, ReadOnlyOptions{Verified: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	lower, upper := []byte("k000100"), []byte("k019000")
	want := pairsOf(t, src.NewIterator("s", lower, upper))
	for _, tc := range []struct {
		name string
		it   func() *Iterator
	}{
		{"read-only", func() *Iterator { return ro.NewIterator("s", lower, upper) }},
		{"writable", func() *Iterator { return src.NewIterator("s", lower, upper) }},
	} {
		for _, head := range []int{0, 1, 5000} {
			it := tc.it()
			p := filepath.Join(t.TempDir(), "copy.sst")
			w, err := NewSSTWriter(p, true)
			if err != nil {
				t.Fatal(err)
			}
			for range head {
				if err := w.Add(it.Key(), it.Value()); err != nil {
					t.Fatal(err)
				}
				it.Next()
			}
			if err := w.Copy(ctx, it); err != nil {
				t.Fatal(err)
			}
			if it.Valid() || it.Err() != nil {
				t.Fatalf("%s: iterator after the copy: valid %v, %v", tc.name, it.Valid(), it.Err())
			}
			it.Close()
			if ok, err := w.Finish(); !ok || err != nil {
				t.Fatalf("%s: finish: %v %v", tc.name, ok, err)
			}
			w.Close()
			dst, err := Open(filepath.Join(t.TempDir(), "dst"), []string{"s"})
			if err != nil {
				t.Fatal(err)
			}
			if err := dst.Ingest("s", []string{p}); err != nil {
				t.Fatal(err)
			}
			got := pairsOf(t, dst.NewIterator("s", nil, nil))
			dst.Close()
			if !slices.EqualFunc(got, want, func(a, b [2][]byte) bool { return bytes.Equal(a[0], b[0]) && bytes.Equal(a[1], b[1]) }) {
				t.Fatalf("%s, %d pairs read first: the copy holds %d pairs, want the %d of the range", tc.name, head, len(got), len(want))
			}
		}
	}
}

// listAppend writes merge operands the way Flink's list state does.
type listAppend struct{}

func (listAppend) Name() string { return "stringappendtest" }
func (listAppend) FullMerge(_, existing []byte, operands [][]byte) ([]byte, bool) {
	if existing != nil {
		operands = append([][]byte{existing}, operands...)
	}
	return bytes.Join(operands, []byte{','}), true
}

// TestReadOnlyFlinkLists reads merge operands left in separate SST files,
// as Flink's list state leaves them: joined by ',' with FlinkLists, an
// iterator error without it.
func TestReadOnlyFlinkLists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	// Never destroyed: grocksdb v1.7.15 frees a Go merge operator twice.
	o := grocksdb.NewDefaultOptions()
	o.SetCreateIfMissing(true)
	o.SetMergeOperator(listAppend{})
	db, err := grocksdb.OpenDb(o, dir)
	if err != nil {
		t.Fatal(err)
	}
	wo := grocksdb.NewDefaultWriteOptions()
	fo := grocksdb.NewDefaultFlushOptions()
	fo.SetWait(true)
	for _, op := range []string{"a", "b,c", "d"} {
		if err := db.Merge(wo, []byte("k"), []byte(op)); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(fo); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Put(wo, []byte("v"), []byte("plain")); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(fo); err != nil {
		t.Fatal(err)
	}
	wo.Destroy()
	fo.Destroy()
	db.Close()

	ro, err := OpenReadOnly(dir, ReadOnlyOptions{FlinkLists: true})
	if err != nil {
		t.Fatal(err)
	}
	got := pairsOf(t, ro.NewIterator("default", nil, nil))
	ro.Close()
	if len(got) != 2 || string(got[0][1]) != "a,b,c,d" || string(got[1][1]) != "plain" {
		t.Fatalf("read %q, want k=a,b,c,d and v=plain", got)
	}
	plain, err := OpenReadOnly(dir, ReadOnlyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	it := plain.NewIterator("default", nil, nil)
	defer it.Close()
	for ; it.Valid(); it.Next() {
	}
	if it.Err() == nil {
		t.Fatal("merge operands read without a merge operator")
	}
}

// A read-only database's iterator, retaining, keeps every pair it read
// valid until Release: across many batches and a pair larger than a
// batch. A writable database's refuses to retain.
func TestIteratorRetain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db, err := Open(dir, []string{"s"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	var want [][2][]byte
	for i := range 3000 {
		v := randomBytes(rng, rng.IntN(900))
		if i == 1500 {
			v = randomBytes(rng, 3*batchBytes) // a batch of its own
		}
		k := []byte(fmt.Sprintf("k%05d", i))
		if err := db.Put("s", k, v); err != nil {
			t.Fatal(err)
		}
		want = append(want, [2][]byte{k, v})
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if it := db.NewIterator("s", nil, nil); it.Retain() {
		t.Error("a writable database's iterator retains")
	} else {
		it.Close()
	}
	ro, err := OpenReadOnly(dir, ReadOnlyOptions{Verified: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	check := func(what string, got [][2][]byte) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d pairs, want %d", what, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i][0], want[i][0]) || !bytes.Equal(got[i][1], want[i][1]) {
				t.Fatalf("%s: pair %d is %q (%d bytes), want %q (%d bytes)", what, i, got[i][0], len(got[i][1]), want[i][0], len(want[i][1]))
			}
		}
	}
	// Pairs held uncopied while the iterator goes on, released every
	// 700, checked before each release.
	it := ro.NewIterator("s", nil, nil)
	defer func() { it.Close() }() // before the database, even on failure
	if !it.Retain() {
		t.Fatal("a read-only database's iterator does not retain")
	}
	var held, all [][2][]byte
	for ; it.Valid(); it.Next() {
		held = append(held, [2][]byte{it.Key(), it.Value()})
		if len(held) == 700 {
			all = append(all, cloned(held[:699])...)
			held = held[699:] // the current pair outlives Release
			it.Release()
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	check("retained", append(all, cloned(held)...))
	it.Close()
	// Without Retain, pairs held uncopied are overwritten: the test can
	// tell.
	it = ro.NewIterator("s", nil, nil)
	held = held[:0]
	for ; it.Valid(); it.Next() {
		held = append(held, [2][]byte{it.Key(), it.Value()})
	}
	same := true
	for i := range want {
		same = same && bytes.Equal(held[i][0], want[i][0])
	}
	if same {
		t.Error("pairs held without Retain are all intact: the test cannot tell")
	}
	it.Close()
}

func cloned(ps [][2][]byte) [][2][]byte {
	out := make([][2][]byte, len(ps))
	for i, p := range ps {
		out[i] = [2][]byte{slices.Clone(p[0]), slices.Clone(p[1])}
	}
	return out
}
