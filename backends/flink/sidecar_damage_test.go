package flink

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/sidecar"
	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/verify"
)

// corpusEntry is the checked-in real Flink snapshot VERSION/NAME.
func corpusEntry(t *testing.T, name string) flinkharness.Entry {
	t.Helper()
	es, err := flinkharness.ReadCorpus(filepath.Join(flinkharness.RepoRoot(), "testdata", "flink"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Manifest.FlinkVersion+"/"+e.Name == name {
			return e
		}
	}
	t.Fatalf("no corpus entry %s", name)
	return flinkharness.Entry{}
}

// writeSavepoint has stateutil write a real snapshot as a Flink savepoint
// at dst: in one process, or planned in shards, each shard run and the
// plan committed (the writer's Adopter path); shards -1 upgrades a Flink
// 1.x snapshot for Flink 2.3 (stateutil upgrade) in one process.
func writeSavepoint(t *testing.T, src, dst string, change redistribute.Request, shards int) {
	t.Helper()
	e := corpusEntry(t, src)
	old, nw := e.PathMap()
	req := migrate.Request{Source: e.SnapshotDir(), Destination: dst, Format: "flink", Change: change, PathMap: map[string]string{old: nw}}
	if shards < 0 {
		// An upgrade to Flink 2.3 (stateutil upgrade).
		req.Upgrade, req.ReaderVersion, shards = true, "2.3", 0
	}
	copyOf(t, req, shards)
}

// copyOf makes the copy req asks for, in one process (and verified as
// req says) or in shards, and returns its plan.
func copyOf(t *testing.T, req migrate.Request, shards int) *migrate.Plan {
	t.Helper()
	ctx := context.Background()
	if shards == 0 {
		res, err := migrate.Run(ctx, testReg, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Verified != req.Verify {
			t.Fatalf("verified: %v", res.Verified)
		}
		return res.Plan
	}
	sp, err := migrate.PlanShards(ctx, testReg, migrate.ShardRequest{Request: req, Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate.OpenStaging(ctx, testReg, sp); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= shards; i++ {
		if _, err := migrate.RunShard(ctx, testReg, sp, i, migrate.ShardOptions{}); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	if _, err := migrate.CommitShards(ctx, testReg, sp, migrate.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	return sp.Plan
}

// verifyFlink checks dir as `stateutil verify` does: nil when it passes,
// else the error that refused it (which must be damage) or its findings.
func verifyFlink(t *testing.T, dir string) (findings []string, err error) {
	ctx := context.Background()
	r, err := testReg.Open(ctx, dir, snapshot.OpenOptions{TempDir: t.TempDir()})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	res, err := verify.Check(ctx, dir, r, testReg.Codecs)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Findings {
		findings = append(findings, f.String())
	}
	return findings, nil
}

// damageNamed reports whether verify refused dir, or found a problem, as
// damage of the file at path p.
func damageNamed(t *testing.T, dir, p string) (bool, string) {
	findings, err := verifyFlink(t, dir)
	if err != nil {
		return errors.Is(err, snapshot.ErrCorrupt) && strings.Contains(err.Error(), p), err.Error()
	}
	for _, f := range findings {
		if strings.Contains(f, p) {
			return true, ""
		}
	}
	return false, strings.Join(findings, "; ")
}

func dirFiles(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// TestWrittenSavepointDamageDetected: every Flink savepoint stateutil
// writes carries the checksum manifest, so that verify finds every
// sampled single-byte flip of every file (state files, _metadata, the
// manifest) and every cut, and names the damaged file; a state file gone
// too. Without the manifest, a savepoint verifies as Flink's do.
func TestWrittenSavepointDamageDetected(t *testing.T) {
	const flipsPerFile = 64
	for _, c := range []struct {
		name, src string
		change    redistribute.Request
		shards    int
	}{
		{"canonical", "2.3.0/basic-hashmap-canonical", redistribute.Request{}, 0},
		{"rescaled", "1.20.5/basic-hashmap-canonical", redistribute.Request{Parallelism: 3, MaxParallelism: 256}, 0},
		{"rescaled-from-native", "1.20.5/basic-rocksdb-native", redistribute.Request{Parallelism: 3}, 0},
		{"sharded", "2.3.0/basic-hashmap-canonical", redistribute.Request{Parallelism: 4}, 2},
		{"upgraded", "1.20.5/collections-hashmap-canonical", redistribute.Request{Parallelism: 3}, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "sp")
			writeSavepoint(t, c.src, dir, c.change, c.shards)
			if findings, err := verifyFlink(t, dir); err != nil || len(findings) > 0 {
				t.Fatalf("undamaged: %v %v", err, findings)
			}
			names := dirFiles(t, dir)
			if !slices.Contains(names, ChecksumsFile) || !slices.Contains(names, "_metadata") {
				t.Fatalf("written files %v lack %s or _metadata", names, ChecksumsFile)
			}
			flips, cuts := 0, 0
			for _, name := range names {
				p := filepath.Join(dir, name)
				orig, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				damage := func(what string, b []byte) {
					if err := os.WriteFile(p, b, 0o600); err != nil {
						t.Fatal(err)
					}
					if ok, msg := damageNamed(t, dir, p); !ok {
						t.Errorf("%s %s: not reported as damage of the file: %s", name, what, msg)
					}
				}
				step := max(1, len(orig)/flipsPerFile)
				for i, off := 0, 0; off < len(orig); i, off = i+1, off+step {
					b := slices.Clone(orig)
					b[off] ^= 1 << (i % 8)
					damage("byte "+strconv.Itoa(off)+" flipped", b)
					flips++
				}
				for _, n := range []int{len(orig) / 2, len(orig) - 1} {
					damage("cut at "+strconv.Itoa(n), orig[:n])
					cuts++
				}
				if err := os.WriteFile(p, orig, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			for _, name := range names {
				if name == "_metadata" || name == ChecksumsFile {
					continue
				}
				p := filepath.Join(dir, name)
				orig, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if ok, msg := damageNamed(t, dir, p); !ok {
					t.Errorf("%s removed: not reported as damage of the file: %s", name, msg)
				}
				if err := os.WriteFile(p, orig, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%s: %d files; verify reported all %d sampled single-byte flips and %d cuts as damage of the file", c.name, len(names), flips, cuts)
			if err := os.Remove(filepath.Join(dir, ChecksumsFile)); err != nil {
				t.Fatal(err)
			}
			if findings, err := verifyFlink(t, dir); err != nil || len(findings) > 0 {
				t.Errorf("without its manifest: %v %v, want it to verify as a Flink savepoint", err, findings)
			}
		})
	}
}

// A savepoint stateutil rewrites from one of its own gets a manifest of
// its own files, not the source's.
func TestRewrittenSavepointGetsFreshChecksums(t *testing.T) {
	first := filepath.Join(t.TempDir(), "first")
	writeSavepoint(t, "2.3.0/basic-hashmap-canonical", first, redistribute.Request{}, 0)
	second := filepath.Join(t.TempDir(), "second")
	if _, err := migrate.Run(context.Background(), testReg, migrate.Request{Source: first, Destination: second, Format: "flink",
		Change: redistribute.Request{Parallelism: 3}}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(second, ChecksumsFile))
	if err != nil {
		t.Fatal(err)
	}
	sums, err := sidecar.Decode(data, ChecksumsFile)
	if err != nil {
		t.Fatal(err)
	}
	listed := sums.Paths()
	want := slices.DeleteFunc(dirFiles(t, second), func(n string) bool { return n == ChecksumsFile })
	if !slices.Equal(listed, want) {
		t.Errorf("the rewritten savepoint's manifest lists %v, its files are %v", listed, want)
	}
	if findings, err := verifyFlink(t, second); err != nil || len(findings) > 0 {
		t.Errorf("the rewritten savepoint: %v %v", err, findings)
	}
}

// Two damaged state files are two findings, each naming its file.
func TestWrittenSavepointFindingPerDamagedFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sp")
	writeSavepoint(t, "2.3.0/basic-hashmap-canonical", dir, redistribute.Request{}, 0)
	var damaged []string
	for _, name := range dirFiles(t, dir) {
		if strings.HasSuffix(name, "-keyed") && len(damaged) < 2 {
			p := filepath.Join(dir, name)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0x10
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			damaged = append(damaged, p)
		}
	}
	if len(damaged) != 2 {
		t.Fatalf("damaged %v, want two keyed state files", damaged)
	}
	findings, err := verifyFlink(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range damaged {
		n := 0
		for _, f := range findings {
			if strings.Contains(f, p) && strings.Contains(f, "crc32c") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d checksum findings name %s, want 1: %q", n, p, findings)
		}
	}
}
