package rocksdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// oneSubtaskSnapshot writes keys keys' entries of every state as a
// one-subtask snapshot, and lists its SST files.
func oneSubtaskSnapshot(t *testing.T, keys int, seed uint64) (dir string, written [][]snapshot.Entry, ssts []string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "snap")
	op := rockstest.Operator("a1", 1, 128)
	written = rockstest.Entries(t, op, keys, seed)
	writeSnapshot(t, dir, op, written)
	ssts, err := filepath.Glob(filepath.Join(dir, "*", "*.sst"))
	if err != nil || len(ssts) == 0 {
		t.Fatalf("no SST files (%v)", err)
	}
	return dir, written, ssts
}

// A point read does not read the files through, but every block it reads
// is verified: a damaged block is an error, never a missing key or other
// values.
func TestKeyEntriesOfDamagedBlocks(t *testing.T) {
	ctx := context.Background()
	dir, written, ssts := oneSubtaskSnapshot(t, 400, 9)
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

// A read with ChecksumReads links the files unread and verifies each
// block it reads: whatever byte of a file is damaged, the read fails as
// corrupt or yields the entries written, never other ones. Read as verify
// reads (whole files checked first), every damaged byte fails.
func TestChecksumReadsOfDamagedFiles(t *testing.T) {
	ctx := context.Background()
	dir, written, ssts := oneSubtaskSnapshot(t, 300, 5)
	sst := ssts[len(ssts)/2]
	orig, err := os.ReadFile(sst)
	if err != nil {
		t.Fatal(err)
	}
	want := rockstest.Canonical(written[0])
	read := func(checksumReads bool) ([]snapshot.Entry, error) {
		r, err := testReg.Open(ctx, dir, snapshot.OpenOptions{TempDir: t.TempDir(), ChecksumReads: checksumReads})
		if err != nil {
			return nil, err
		}
		defer r.Close()
		var got []snapshot.Entry
		for e, err := range r.Entries(ctx, r.Snapshot().Operators[0], 0, keygroup.Range{Start: 0, End: 127}) {
			if err != nil {
				return nil, err
			}
			got = append(got, e.Clone())
		}
		return got, nil
	}
	if got, err := read(true); err != nil {
		t.Fatal(err)
	} else {
		rockstest.SameEntries(t, "undamaged", want, rockstest.Canonical(got))
	}
	// Bytes across the file, and every byte of its last 64 (the footer).
	var positions []int
	for p := 0; p < len(orig)-64; p += max(1, len(orig)/300) {
		positions = append(positions, p)
	}
	for p := max(0, len(orig)-64); p < len(orig); p++ {
		positions = append(positions, p)
	}
	unchanged := 0
	for _, p := range positions {
		b := slices.Clone(orig)
		b[p] ^= 0x20
		if err := os.WriteFile(sst, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := read(true)
		switch {
		case errors.Is(err, snapshot.ErrCorrupt):
		case err != nil:
			t.Fatalf("byte %d of %s damaged: %v, not corrupt", p, filepath.Base(sst), err)
		default:
			rockstest.SameEntries(t, fmt.Sprintf("byte %d damaged", p), want, rockstest.Canonical(got))
			unchanged++
			// Only the padding of the footer (its last 53 bytes: handles,
			// padding, then format version and magic number) is read by
			// nothing.
			if p < len(orig)-53 || p >= len(orig)-12 {
				t.Errorf("byte %d of %d damaged: the read did not see it", p, len(orig))
			}
		}
		if _, err := read(false); !errors.Is(err, snapshot.ErrCorrupt) {
			t.Fatalf("byte %d of %s damaged, whole files checked: %v, want corrupt", p, filepath.Base(sst), err)
		}
	}
	if err := os.WriteFile(sst, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes of %d damaged one at a time: %d failed the read, %d changed nothing read", len(positions), len(orig), len(positions)-unchanged, unchanged)
}

// An SST file swapped for another of the same size, each block sound (the
// same entries written by another run), is refused by a read with
// ChecksumReads too: RocksDB checks the file's unique id against the
// MANIFEST as it opens it.
func TestChecksumReadsRefuseASwappedFile(t *testing.T) {
	ctx := context.Background()
	a, _, sa := oneSubtaskSnapshot(t, 300, 5)
	_, _, sb := oneSubtaskSnapshot(t, 300, 5)
	// The other run's file of the same size: the same pairs.
	x, err := os.ReadFile(sa[0])
	if err != nil {
		t.Fatal(err)
	}
	var y []byte
	for _, f := range sb {
		if y, err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
		if len(y) == len(x) {
			break
		}
	}
	if len(x) != len(y) || bytes.Equal(x, y) {
		t.Fatalf("no file of the other run has other bytes of %s's size %d", sa[0], len(x))
	}
	if err := os.WriteFile(sa[0], y, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := testReg.Open(ctx, a, snapshot.OpenOptions{TempDir: t.TempDir(), ChecksumReads: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for _, err = range r.Entries(ctx, r.Snapshot().Operators[0], 0, keygroup.Range{Start: 0, End: 127}) {
		if err != nil {
			break
		}
		n++
	}
	if !errors.Is(err, snapshot.ErrCorrupt) || n != 0 {
		t.Fatalf("swapped file: %d entries read, then %v; want none, and corrupt", n, err)
	}
}

// HeldEntries keeps each key group's entries valid, uncopied, until the
// first entry of the next key group has been taken, and the last key
// group until the end is marked: they equal what Entries yields.
func TestHeldEntriesStayValidPerKeyGroup(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "snap")
	op := rockstest.Operator("a1", 1, 4) // key groups of many batches each
	writeSnapshot(t, dir, op, rockstest.Entries(t, op, 40_000, 3))
	r, err := testReg.Open(ctx, dir, snapshot.OpenOptions{TempDir: t.TempDir(), ChecksumReads: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rop := r.Snapshot().Operators[0]
	all := keygroup.Range{Start: 0, End: 3}
	want := map[int][]snapshot.Entry{}
	for e, err := range r.Entries(ctx, rop, 0, all) {
		if err != nil {
			t.Fatal(err)
		}
		want[e.KeyGroup] = append(want[e.KeyGroup], e.Clone())
	}
	if len(want) != 4 {
		t.Fatalf("%d key groups, want 4", len(want))
	}
	// held, the entries a caller holds uncopied, checked as each key
	// group ends.
	read := func(entries snapshot.Entries, marked bool) (intact bool) {
		intact = true
		var held []snapshot.Entry
		check := func() {
			if len(held) == 0 {
				return
			}
			// Another read meanwhile takes batches from the pool: any
			// the held entries lie in would be overwritten.
			n := 0
			for _, err := range r.Entries(ctx, rop, 0, all) {
				if n++; err != nil || n == 20_000 {
					break
				}
			}
			kg := held[0].KeyGroup
			w := want[kg]
			if len(held) != len(w) {
				t.Fatalf("key group %d: %d entries, want %d", kg, len(held), len(w))
			}
			for i := range w {
				intact = intact && held[i].Equal(&w[i])
			}
			held = held[:0]
		}
		for e, err := range entries {
			if err != nil {
				t.Fatal(err)
			}
			if e.KeyGroup < 0 {
				if !marked {
					t.Fatal("an end marked where none should be")
				}
				check()
				marked = false
				continue
			}
			if len(held) > 0 && e.KeyGroup != held[0].KeyGroup {
				check()
			}
			held = append(held, e)
		}
		if marked {
			t.Fatal("the end was not marked")
		}
		check()
		return intact
	}
	h := r.(snapshot.KeyGroupHolder)
	if !read(h.HeldEntries(ctx, rop, 0, all), true) {
		t.Error("held entries changed before their key group ended")
	}
	if read(r.Entries(ctx, rop, 0, all), false) {
		t.Error("entries held uncopied from Entries stay intact too: the test cannot tell")
	}
}
