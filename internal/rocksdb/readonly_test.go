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
