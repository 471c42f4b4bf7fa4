package rocksdb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/lookup"
	"github.com/stateutil/stateutil/snapshot"
)

// A point read finds exactly the entries a scan of the key's key group
// holds for that key, namespace and state, and nothing for keys the
// snapshot lacks.
func TestKeyEntriesMatchTheScan(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "snap")
	op := rockstest.Operator("a1", 3, 200)
	written := rockstest.Entries(t, op, 120, 4)
	writeSnapshot(t, dir, op, written)
	r, err := testReg.Open(ctx, dir, snapshot.OpenOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	kr, ok := r.(lookup.KeyReader)
	if !ok {
		t.Fatal("the rocksdb reader has no point reads")
	}
	type id struct {
		state, key, ns string
		kg, sub        int
	}
	want := map[id][]snapshot.Entry{}
	var order []id
	for sub, es := range written {
		for _, e := range es {
			k := id{e.State, string(e.Key), string(e.Namespace), e.KeyGroup, sub}
			if _, seen := want[k]; !seen {
				order = append(order, k)
			}
			want[k] = append(want[k], e)
		}
	}
	if len(order) < 300 {
		t.Fatalf("only %d keys generated", len(order))
	}
	snap := r.Snapshot()
	rop, _ := snap.Operator("a1")
	for _, k := range order {
		got, err := kr.KeyEntries(ctx, rop, k.sub, k.kg, k.state, []byte(k.key), []byte(k.ns))
		if err != nil {
			t.Fatal(err)
		}
		rockstest.SameEntries(t, k.state+" "+k.key, rockstest.Canonical(want[k]), rockstest.Canonical(got))
	}
	// The scan agrees with what was written, so the two reads agree.
	var scanned []snapshot.Entry
	for sub := range written {
		scanned = append(scanned, rockstest.Collect(t, r.Entries(ctx, rop, sub, keygroup.Range{Start: 0, End: 199}))...)
	}
	rockstest.SameEntries(t, "scan", rockstest.Canonical(slices.Concat(written...)), rockstest.Canonical(scanned))

	i := slices.IndexFunc(order, func(k id) bool { return k.state == "events" }) // a string namespace
	k := order[i]
	for _, miss := range []struct{ key, ns string }{{"no-such-user", k.ns}, {k.key + "x", k.ns}, {k.key, k.ns + "x"}} {
		got, err := kr.KeyEntries(ctx, rop, k.sub, k.kg, k.state, []byte(miss.key), []byte(miss.ns))
		if err != nil || len(got) != 0 {
			t.Fatalf("key %q namespace %q: %d entries, err %v; want none", miss.key, miss.ns, len(got), err)
		}
	}
}

// A point read does not read the files through, but every block it reads
// is verified: a damaged block is an error, never a missing key or other
// values.
func TestKeyEntriesOfDamagedBlocks(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "snap")
	op := rockstest.Operator("a1", 1, 128)
	written := rockstest.Entries(t, op, 400, 9)
	writeSnapshot(t, dir, op, written)
	ssts, err := filepath.Glob(filepath.Join(dir, "*", "*.sst"))
	if err != nil || len(ssts) == 0 {
		t.Fatalf("no SST files (%v)", err)
	}
	for _, sst := range ssts { // a byte in the middle of each file's data blocks
		b, err := os.ReadFile(sst)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/3] ^= 0x5a
		if err := os.WriteFile(sst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := testReg.Open(ctx, dir, snapshot.OpenOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rop := r.Snapshot().Operators[0]
	kr := r.(lookup.KeyReader)
	want := map[string][]snapshot.Entry{}
	for _, e := range written[0] {
		id := e.State + "\x00" + string(e.Key) + "\x00" + string(e.Namespace)
		want[id] = append(want[id], e)
	}
	damaged := 0
	for id, es := range want {
		e := es[0]
		got, err := kr.KeyEntries(ctx, rop, 0, e.KeyGroup, e.State, e.Key, e.Namespace)
		if errors.Is(err, snapshot.ErrCorrupt) {
			damaged++
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", id, err)
		}
		rockstest.SameEntries(t, id, rockstest.Canonical(es), rockstest.Canonical(got))
	}
	if damaged == 0 {
		t.Fatalf("none of %d keys read a damaged block", len(want))
	}
	t.Logf("%d of %d keys read a damaged block", damaged, len(want))
}
