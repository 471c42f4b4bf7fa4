package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	rocksdbsnap "github.com/stateutil/stateutil/backends/rocksdb"
	"github.com/stateutil/stateutil/internal/rocksdb"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/snapshot/generate"
)

// scanLine is one pair as `sst_dump --command=scan --output_hex` prints it.
var scanLine = regexp.MustCompile(`^'([0-9A-F]*)' seq:\d+, type:\d+ => ([0-9A-F]*)$`)

// sstPairs reads every pair of the SST files with RocksDB's own sst_dump,
// in the order of the files' names (a state's files are numbered in
// order), as "KEYHEX VALUEHEX" lines, and whether each file is LZ4.
func sstPairs(t *testing.T, files []string) (pairs []string, lz4 []bool) {
	t.Helper()
	for _, f := range files {
		out, err := exec.Command("sst_dump", "--file="+f, "--command=scan", "--output_hex").Output()
		if err != nil {
			t.Fatalf("sst_dump %s: %v", f, err)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if m := scanLine.FindStringSubmatch(l); m != nil {
				pairs = append(pairs, m[1]+" "+m[2])
			}
		}
		props, err := exec.Command("sst_dump", "--file="+f, "--show_properties").Output()
		if err != nil {
			t.Fatalf("sst_dump %s: %v", f, err)
		}
		lz4 = append(lz4, strings.Contains(string(props), "compression algo: LZ4"))
	}
	return pairs, lz4
}

// The floor writes exactly the pairs of the snapshot's databases, state by
// state and in order, into SST files that RocksDB's sst_dump reads back,
// compressed as the snapshot's own files are.
func TestFloorWritesTheSnapshotsPairs(t *testing.T) {
	if _, err := exec.LookPath("sst_dump"); err != nil {
		t.Skip("sst_dump (Debian's rocksdb-tools) is not installed")
	}
	ctx := context.Background()
	dir := t.TempDir()
	snap := filepath.Join(dir, "snap")
	reg := formattest.Registry(rocksdbsnap.Register)
	w, err := reg.Create(ctx, rocksdbsnap.Format, snap, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := generate.Default()
	c.Keys, c.Parallelism = 3000, 2
	if _, err := generate.Write(ctx, w, c); err != nil {
		t.Fatal(err)
	}
	pairs, out := filepath.Join(dir, "pairs"), filepath.Join(dir, "out")
	if err := extract(snap, pairs); err != nil {
		t.Fatal(err)
	}
	if err := write(pairs, out); err != nil {
		t.Fatal(err)
	}

	subtasks, err := filepath.Glob(filepath.Join(snap, "*", "CURRENT"))
	if err != nil || len(subtasks) == 0 {
		t.Fatalf("no subtask databases in %s: %v", snap, err)
	}
	states := 0
	for _, current := range subtasks {
		sub := filepath.Dir(current)
		lz4, err := usesLZ4(sub)
		if err != nil {
			t.Fatal(err)
		}
		db, err := rocksdb.OpenReadOnly(sub, rocksdb.ReadOnlyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i, cf := range db.ColumnFamilies() {
			var want []string
			it := db.NewIterator(cf, nil, nil)
			for ; it.Valid(); it.Next() {
				want = append(want, strings.ToUpper(hex.EncodeToString(it.Key())+" "+hex.EncodeToString(it.Value())))
			}
			it.Close()
			files, _ := filepath.Glob(filepath.Join(out, fmt.Sprintf("%s-%d-*.sst", filepath.Base(sub), i)))
			sort.Slice(files, func(a, b int) bool { return fileNumber(files[a]) < fileNumber(files[b]) })
			if len(want) == 0 {
				if len(files) != 0 {
					t.Errorf("%s state %d: no pairs, yet files %v", sub, i, files)
				}
				continue
			}
			states++
			got, compressed := sstPairs(t, files)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s state %d: sst_dump reads %d pairs from %d files, the database holds %d (or they differ)", sub, i, len(got), len(files), len(want))
			}
			for j, c := range compressed {
				if c != lz4 {
					t.Errorf("%s: LZ4 %t, the snapshot's files %t", files[j], c, lz4)
				}
			}
		}
		db.Close()
	}
	if states < 2 {
		t.Fatalf("only %d states with pairs: the test reads too little", states)
	}
}

func fileNumber(f string) int {
	var n int
	base := strings.TrimSuffix(filepath.Base(f), ".sst")
	fmt.Sscanf(base[strings.LastIndexByte(base, '-')+1:], "%d", &n)
	return n
}
