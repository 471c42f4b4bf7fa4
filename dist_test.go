package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// nativeLibs are the shared libraries the dist binary must not need: RocksDB
// and the compression libraries it was built with.
var nativeLibs = regexp.MustCompile(`lib(rocksdb|snappy|lz4|zstd|bz2|z)\.so`)

// allowedNeeded is all the dist binary may ask the dynamic loader for:
// glibc, and the C++ runtime a cgo module may link dynamically.
var allowedNeeded = []string{"libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2", "libpthread.so.0", "libdl.so.2", "librt.so.1",
	"libstdc++.so.6", "libgcc_s.so.1"}

// TestDistBinary builds dist/ as `make dist` does (scripts/dist.sh) and
// checks what it promises: a checksum that matches, no dynamic dependency
// on RocksDB or a compression library (readelf's NEEDED, ldd), and a
// binary that reads and writes RocksDB where no librocksdb can be loaded:
// with LD_LIBRARY_PATH an empty directory, the loader's own trace naming
// none of them, and, where the test may make a mount namespace, with every
// such library on the machine hidden behind an empty file (a binary that
// links librocksdb.so, sst_dump, then fails to start). It runs inspect,
// verify and convert --to rocksdb there, on a memory dump and on a real
// Flink native RocksDB savepoint with compressed SSTs.
func TestDistBinary(t *testing.T) {
	out := t.TempDir()
	build := exec.Command("scripts/dist.sh", "--out", out)
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/dist.sh: %v\n%s", err, b)
	}
	bin := filepath.Join(out, "stateutil-linux-amd64")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if want := hex.EncodeToString(sum[:]) + "  stateutil-linux-amd64\n"; string(readOrFail(t, bin+".sha256")) != want {
		t.Errorf("%s.sha256 is %q, want %q", bin, readOrFail(t, bin+".sha256"), want)
	}
	t.Logf("dist binary: %d bytes, sha256 %x", len(data), sum)

	dyn, err := exec.Command("readelf", "-d", bin).Output()
	if err != nil {
		t.Fatalf("readelf -d: %v", err)
	}
	var needed []string
	for _, m := range regexp.MustCompile(`\(NEEDED\)\s+Shared library: \[([^\]]+)\]`).FindAllStringSubmatch(string(dyn), -1) {
		needed = append(needed, m[1])
		if !slices.Contains(allowedNeeded, m[1]) {
			t.Errorf("the dist binary needs %s: only glibc and the C++ runtime are allowed", m[1])
		}
	}
	if !slices.Contains(needed, "libc.so.6") {
		t.Errorf("readelf found no NEEDED entries (%v): not the binary this test checks", needed)
	}
	ldd, err := exec.Command("ldd", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("ldd: %v\n%s", err, ldd)
	}
	if nativeLibs.Match(ldd) {
		t.Errorf("ldd lists a RocksDB or compression library:\n%s", ldd)
	}

	// A Flink native RocksDB savepoint with compressed SST files, copied
	// so that the checked-in one is never written near.
	src := "testdata/flink/2.3.0/basic-rocksdb-native/snapshot"
	entries, _ := filepath.Glob(filepath.Join(src, "savepoint-*"))
	if len(entries) != 1 {
		t.Fatalf("no savepoint under %s", src)
	}
	work := t.TempDir()
	empty := t.TempDir()
	env := append(os.Environ(), "LD_LIBRARY_PATH="+empty)
	run := func(wrap []string, args ...string) string {
		t.Helper()
		c := exec.Command(wrap[0], append(append(wrap[1:], bin), args...)...)
		c.Env, c.Dir = env, work
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		if err := c.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s%s", bin, strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String() + stderr.String()
	}
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	flink, example := abs(entries[0]), abs("testdata/memory/example.dump")
	for i, wrap := range wrappers(t) {
		dir := fmt.Sprintf("run-%d", i)
		run(wrap, "inspect", example)
		run(wrap, "convert", example, "--to", "rocksdb", "--output", filepath.Join(dir, "example-rocksdb"), "--verify", "--quiet")
		run(wrap, "verify", filepath.Join(dir, "example-rocksdb"))
		run(wrap, "inspect", flink)
		run(wrap, "convert", flink, "--to", "rocksdb", "--output", filepath.Join(dir, "flink-rocksdb"), "--verify", "--quiet")
		run(wrap, "verify", filepath.Join(dir, "flink-rocksdb"))
		var v struct {
			Version, Commit, Built, RocksDB string
			Linked                          string `json:"rocksdb_linked"`
		}
		if err := json.Unmarshal([]byte(run(wrap, "version", "-o", "json")), &v); err != nil {
			t.Fatal(err)
		}
		if v.Linked != "static" || v.RocksDB == "" || len(v.Commit) != 40 || v.Built == "" || v.Version == "" {
			t.Errorf("version of the dist binary: %+v", v)
		}
	}
	// The loader's trace: every library it looked for, none of them ours.
	c := exec.Command(bin, "inspect", example)
	c.Env = append(env, "LD_DEBUG=libs")
	trace, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("LD_DEBUG=libs %s inspect: %v\n%s", bin, err, trace)
	}
	if !strings.Contains(string(trace), "calling init: ") || nativeLibs.Match(trace) {
		t.Errorf("the loader's trace shows no libraries loaded, or a RocksDB or compression library:\n%s", trace)
	}
}

// wrappers are the environments the dist binary runs in: as it is (with
// LD_LIBRARY_PATH empty), and, where unshare may make a mount namespace,
// one in which every RocksDB and compression shared library of the machine
// is an empty file. That namespace is checked first: sst_dump, which links
// librocksdb.so, must fail to start in it.
func wrappers(t *testing.T) [][]string {
	t.Helper()
	plain := [][]string{{"env"}}
	libs, _ := filepath.Glob("/usr/lib/x86_64-linux-gnu/lib*.so*")
	var hide []string
	for _, l := range libs {
		if real, err := filepath.EvalSymlinks(l); err == nil && nativeLibs.MatchString(filepath.Base(l)) && !slices.Contains(hide, real) {
			hide = append(hide, real)
		}
	}
	if len(hide) == 0 {
		t.Logf("no RocksDB or compression library installed: nothing to hide")
		return plain
	}
	script := `set -e; for l in "$@"; do case "$l" in --) break;; esac; mount --bind /dev/null "$l"; done; while [ "$1" != -- ]; do shift; done; shift; exec "$@"`
	ns := append(append([]string{"unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh"}, hide...), "--")
	probe := exec.Command(ns[0], append(ns[1:], "true")...)
	if b, err := probe.CombinedOutput(); err != nil {
		t.Logf("cannot hide the libraries in a mount namespace (%v: %s); the dist binary runs with LD_LIBRARY_PATH empty, and the loader's trace is checked", err, b)
		return plain
	}
	if sst, err := exec.LookPath("sst_dump"); err == nil {
		if b, err := exec.Command(sst, "--help").CombinedOutput(); err != nil {
			t.Fatalf("sst_dump --help: %v\n%s", err, b)
		}
		if b, err := exec.Command(ns[0], append(ns[1:], sst, "--help")...).CombinedOutput(); err == nil || !nativeLibs.Match(b) {
			t.Fatalf("sst_dump, which links librocksdb.so, started where it is hidden (%v): the namespace hides nothing\n%s", err, b)
		}
	}
	t.Logf("also in a mount namespace where these are empty files: %s", strings.Join(hide, " "))
	return append(plain, ns)
}

func readOrFail(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
