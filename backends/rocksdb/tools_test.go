package rocksdb

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/internal/rocksdb"
	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// TestRealToolsAgree restores a subtask's files the way Restore does and
// lets RocksDB's own ldb and sst_dump read them.
func TestRealToolsAgree(t *testing.T) {
	ldb, sstDump := rockstest.Tool(t, "ldb"), rockstest.Tool(t, "sst_dump")
	ctx := context.Background()
	op := rockstest.Operator("0e0f", 1, 4096)
	loc := filepath.Join(t.TempDir(), "sp")
	writeSnapshot(t, loc, op, rockstest.Entries(t, op, 300, 9))

	d0 := chkdir.At(storage.Local(), loc)
	m, err := rocksdbformat.ReadMetadata(ctx, d0)
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handles[0]
	dir := filepath.Join(t.TempDir(), "restored")
	if err := rocksdbformat.DownloadHandle(ctx, d0, h, dir); err != nil {
		t.Fatal(err)
	}

	// Our view of every column family, raw.
	d, err := rocksdb.OpenReadOnly(dir, rocksdb.ReadOnlyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string][]string{}
	for _, cf := range d.ColumnFamilies() {
		it := d.NewIterator(cf, nil, nil)
		for ; it.Valid(); it.Next() {
			ours[cf] = append(ours[cf], "0x"+strings.ToUpper(hex.EncodeToString(it.Key()))+" : 0x"+strings.ToUpper(hex.EncodeToString(it.Value())))
		}
		it.Close()
	}
	d.Close()

	out := rockstest.Run(t, ldb, "--db="+dir, "list_column_families")
	for _, ks := range op.KeyedStates {
		if !strings.Contains(out, ks.Name) {
			t.Errorf("ldb list_column_families lacks %q:\n%s", ks.Name, out)
		}
	}
	for _, ks := range op.KeyedStates {
		out := rockstest.Run(t, ldb, "--db="+dir, "--column_family="+ks.Name, "scan", "--hex")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if !slices.Equal(lines, ours[ks.Name]) {
			t.Errorf("ldb scan of %q disagrees: %d lines, stateutil %d\nldb: %.300s\nours: %.300v", ks.Name, len(lines), len(ours[ks.Name]), out, ours[ks.Name])
		}
		if len(lines) == 0 {
			t.Errorf("state %q is empty", ks.Name)
		}
	}

	var ssts int
	for _, f := range h.Files {
		if strings.HasSuffix(f.Local, ".sst") {
			ssts++
			out := rockstest.Run(t, sstDump, "--file="+filepath.Join(dir, f.Local), "--command=check", "--verify_checksum")
			if strings.Contains(strings.ToLower(out), "corrupt") {
				t.Errorf("sst_dump check of %s: %s", f.Local, out)
			}
		}
	}
	if ssts == 0 {
		t.Fatal("no SST files in the snapshot")
	}

	// And sst_dump sees damage stateutil's checksum also catches.
	sst := ""
	for _, f := range h.Files {
		if strings.HasSuffix(f.Local, ".sst") {
			sst = filepath.Join(dir, f.Local)
		}
	}
	data, _ := os.ReadFile(sst)
	data[len(data)/3] ^= 0x55
	os.WriteFile(sst, data, 0o644)
	bad, err := exec.Command(sstDump, "--file="+sst, "--command=check", "--verify_checksum").CombinedOutput()
	if err == nil && !bytes.Contains(bytes.ToLower(bad), []byte("corrupt")) && !bytes.Contains(bytes.ToLower(bad), []byte("mismatch")) {
		t.Errorf("sst_dump --verify_checksum did not notice a flipped byte: %s", bad)
	}
}

// TestLdbAgreesWithEntries decodes ldb's scan of a key-group range with
// our codec and compares with Reader.Entries.
func TestLdbAgreesWithEntries(t *testing.T) {
	ldb := rockstest.Tool(t, "ldb")
	ctx := context.Background()
	op := rockstest.Operator("0e0f", 1, 128)
	loc := filepath.Join(t.TempDir(), "sp")
	entries := rockstest.Entries(t, op, 200, 11)
	writeSnapshot(t, loc, op, entries)
	d0 := chkdir.At(storage.Local(), loc)
	m, err := rocksdbformat.ReadMetadata(ctx, d0)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "restored")
	if err := rocksdbformat.DownloadHandle(ctx, d0, m.Handles[0], dir); err != nil {
		t.Fatal(err)
	}
	kgs := keygroup.Range{Start: 10, End: 40}
	cs := rocksdbformat.Codecs(op)
	var fromLdb []snapshot.Entry
	for _, ks := range op.KeyedStates {
		c := cs[ks.Name]
		out := rockstest.Run(t, ldb, "--db="+dir, "--column_family="+ks.Name, "scan", "--hex",
			"--from=0x"+hex.EncodeToString(c.KeyGroupPrefix(kgs.Start)), "--to=0x"+hex.EncodeToString(c.UpperBound(kgs.End)))
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line == "" {
				continue
			}
			k, v, _ := strings.Cut(line, " : ")
			kb, _ := hex.DecodeString(strings.TrimPrefix(k, "0x"))
			vb, _ := hex.DecodeString(strings.TrimPrefix(v, "0x"))
			var e snapshot.Entry
			if err := c.DecodeKey(kb, &e); err != nil {
				t.Fatal(err)
			}
			if _, err := c.DecodeValues(kb, vb, &e, func(e *snapshot.Entry) bool { fromLdb = append(fromLdb, e.Clone()); return true }); err != nil {
				t.Fatal(err)
			}
		}
	}
	var want []snapshot.Entry
	for _, e := range entries[0] {
		if kgs.Contains(e.KeyGroup) {
			want = append(want, e)
		}
	}
	rockstest.SameEntries(t, "ldb", want, fromLdb)
}
