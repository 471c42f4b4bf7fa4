package flink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/verify"
)

// The damage tests flip single bytes of, and truncate, every file of real
// Flink snapshots (testdata/flink) and read each damaged copy as `verify`
// does. Flink's files carry no checksums of their own (RocksDB's SST
// blocks and MANIFEST records do), so a flip inside a value's bytes or in
// metadata nothing reads back cannot be noticed; what may never happen is
// a damaged copy passing with its structure (the states, keys, namespaces
// and element counts) changed, a damage reported as anything but corrupt
// (exit 2) at the snapshot's own file and offset, or a panic.

// damageOutcome is how one damaged copy read.
type damageOutcome int

const (
	detected      damageOutcome = iota // refused or findings: exit 2
	harmless                           // read in full, every entry and value as before
	valueChanged                       // read in full, a value differs, the structure the same
	keyMoved                           // read in full, a String key became another of its key group
	mapKeyChanged                      // read in full, a map's user key differs, every map's size the same
	misreported                        // an error that is not corruption, or does not say where
	structure                          // read without a finding, the structure changed
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"detected", "undetected, nothing changed", "undetected, value bytes changed", "undetected, a key became another of its key group", "undetected, a map key's bytes changed", "MISREPORTED", "STRUCTURE CHANGED UNNOTICED"}

// damageCase is one real snapshot to damage.
type damageCase struct {
	entry flinkharness.Entry
	dir   string // the working copy of the entry's snapshot/ directory
	want  []flinkharness.Line
}

func newDamageCase(t *testing.T, name string) *damageCase {
	t.Helper()
	root := filepath.Join(flinkharness.RepoRoot(), "testdata", "flink")
	entries, err := flinkharness.ReadCorpus(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Manifest.FlinkVersion+"/"+e.Name != name {
			continue
		}
		c := &damageCase{entry: e, dir: filepath.Join(t.TempDir(), "snapshot")}
		if err := os.CopyFS(c.dir, os.DirFS(filepath.Join(e.Dir, "snapshot"))); err != nil {
			t.Fatal(err)
		}
		lines, res, err := c.read(t)
		if err != nil || !res.OK {
			t.Fatalf("%s undamaged: %v %v", name, err, res)
		}
		c.want = lines
		return c
	}
	t.Fatalf("no corpus entry %s under %s", name, root)
	return nil
}

// snapshotDir is the working copy's directory holding _metadata.
func (c *damageCase) snapshotDir() string {
	return filepath.Join(c.dir, filepath.FromSlash(c.entry.Manifest.SnapshotSubpath))
}

// files lists the working copy's files, relative to c.dir.
func (c *damageCase) files(t *testing.T) []string {
	var out []string
	err := filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(c.dir, p)
			out = append(out, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// read opens the working copy and checks it as `verify` does, and reads
// it as `dump` does when verify finds nothing.
func (c *damageCase) read(t *testing.T) ([]flinkharness.Line, *verify.Result, error) {
	ctx := context.Background()
	opts := snapshot.OpenOptions{PathMap: map[string]string{c.entry.Manifest.OriginalDir: c.dir}, TempDir: t.TempDir()}
	r, err := testReg.Open(ctx, c.snapshotDir(), opts)
	if err != nil {
		return nil, nil, err
	}
	res, err := verify.Check(ctx, c.snapshotDir(), r, testReg.Codecs)
	r.Close()
	if err != nil || !res.OK {
		return nil, res, err
	}
	lines, parts, err := readAsDump(ctx, t, c.snapshotDir(), opts)
	if err == nil && len(parts) > 0 {
		err = fmt.Errorf("verify passed, yet dump finds unreadable state: %v", parts)
	}
	return lines, res, err
}

// classify reads the copy with file rel damaged and says how it went.
func (c *damageCase) classify(t *testing.T, rel string) (damageOutcome, string) {
	lines, res, err := c.read(t)
	switch {
	case err != nil:
		msg := err.Error()
		file := filepath.Join(c.dir, rel)
		if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(msg, "offset") ||
			!strings.Contains(msg, file) || strings.Contains(msg, "stateutil-flink-rocksdb") {
			return misreported, msg
		}
		return detected, ""
	case !res.OK:
		return detected, ""
	}
	if d := flinkharness.EqualDumps(c.want, lines); d == "" {
		return harmless, ""
	}
	if d := flinkharness.EqualDumps(withoutValues(t, c.want), withoutValues(t, lines)); d != "" {
		if c.onlyKeysMoved(t, lines) {
			return keyMoved, d
		}
		// A map's user keys are bytes no checksum covers, as its values
		// are: a flip there changes a key unnoticed, not the structure.
		if flinkharness.EqualDumps(mapSizes(t, c.want), mapSizes(t, lines)) == "" {
			return mapKeyChanged, d
		}
		return structure, d
	}
	return valueChanged, ""
}

// onlyKeysMoved reports whether lines differ from c.want in String keys
// only, each changed key hashing to the key group of the one it replaced:
// with no checksum over a key's bytes, no reader can tell.
func (c *damageCase) onlyKeysMoved(t *testing.T, lines []flinkharness.Line) bool {
	if c.entry.Manifest.MaxParallelism == nil {
		return false
	}
	maxP := *c.entry.Manifest.MaxParallelism
	byKeyGroup := func(ls []flinkharness.Line) ([]flinkharness.Line, bool) {
		out := withoutValues(t, ls)
		for i, l := range out {
			var m map[string]any
			if err := json.Unmarshal([]byte(l.Raw), &m); err != nil {
				t.Fatal(err)
			}
			if m["key"] == nil {
				continue
			}
			key, ok := m["key"].(string)
			if !ok {
				return nil, false
			}
			m["key"] = keygroup.OfHash(keygroup.HashString(key), maxP)
			nl, err := lineOf(m)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = nl
		}
		return out, true
	}
	a, okA := byKeyGroup(c.want)
	b, okB := byKeyGroup(lines)
	return okA && okB && flinkharness.EqualDumps(a, b) == ""
}

// withoutValues keeps what lines say about structure: state, key,
// namespace, subtask, kind, a map's keys and a list's length; not the
// values (nor a timer's timestamp, its value in a dump). A key's timers
// count once: a changelog adds the same timer again and again, and a
// changed timestamp in one of those adds is a timer more for the key.
func withoutValues(t *testing.T, ls []flinkharness.Line) []flinkharness.Line {
	out := make([]flinkharness.Line, 0, len(ls))
	timers := map[string]bool{}
	for _, l := range ls {
		var m map[string]any
		if err := json.Unmarshal([]byte(l.Raw), &m); err != nil {
			t.Fatal(err)
		}
		switch v := m["value"].(type) {
		case map[string]any:
			if l.Kind == "map" {
				for k := range v {
					v[k] = nil
				}
				break
			}
			m["value"] = nil
		case []any:
			for k := range v {
				v[k] = nil
			}
		default:
			m["value"] = nil
		}
		nl, err := lineOf(m)
		if err != nil {
			t.Fatal(err)
		}
		if l.Kind == "timer" {
			if timers[nl.Raw] {
				continue
			}
			timers[nl.Raw] = true
		}
		out = append(out, nl)
	}
	return out
}

// mapSizes keeps what withoutValues keeps, but of a map only its size.
func mapSizes(t *testing.T, ls []flinkharness.Line) []flinkharness.Line {
	out := withoutValues(t, ls)
	for i, l := range out {
		if l.Kind != "map" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l.Raw), &m); err != nil {
			t.Fatal(err)
		}
		if v, ok := m["value"].(map[string]any); ok {
			m["value"] = len(v)
		}
		nl, err := lineOf(m)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = nl
	}
	return out
}

// damageStep is the stride between damaged offsets: every byte with
// STATEUTIL_FLINK_DAMAGE_EVERY=1, else about limit offsets per file.
func damageStep(size, limit int) int {
	if s, err := strconv.Atoi(os.Getenv("STATEUTIL_FLINK_DAMAGE_EVERY")); err == nil && s > 0 {
		return s
	}
	if testing.Short() {
		limit /= 4
	}
	return max(1, size/limit)
}

// tally counts outcomes by file.
type tally map[string]*[numOutcomes]int

func (ty tally) add(file string, o damageOutcome) {
	if ty[file] == nil {
		ty[file] = new([numOutcomes]int)
	}
	ty[file][o]++
}

func (ty tally) String() string {
	var files []string
	for f := range ty {
		files = append(files, f)
	}
	sort.Strings(files)
	var sb strings.Builder
	for _, f := range files {
		n := 0
		for _, k := range ty[f] {
			n += k
		}
		fmt.Fprintf(&sb, "  %s: %d tried", f, n)
		for o, k := range ty[f] {
			if k > 0 {
				fmt.Fprintf(&sb, "; %s %d", outcomeNames[o], k)
			}
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// TestDamageDetection flips bytes of, and truncates, every file of a
// canonical heap savepoint, of native RocksDB snapshots (an incremental
// checkpoint and a native savepoint), of a changelog checkpoint and of a
// native heap savepoint with Kryo values, and of the value zoo's Kryo
// collections and Avro savepoints, and logs the detection table.
func TestDamageDetection(t *testing.T) {
	// Per snapshot, about how many flips and cuts each file gets. A damaged
	// heap key group with Kryo values takes longest: the tries to infer
	// where its values end run out before it is refused.
	for _, sw := range []struct {
		name        string
		flips, cuts int
	}{
		{"2.3.0/basic-hashmap-canonical", 160, 40},
		{"2.3.0/basic-rocksdb-checkpoint-incremental", 160, 40},
		{"1.20.5/basic-rocksdb-native", 160, 40},
		{"2.3.0/basic-hashmap-checkpoint-changelog", 160, 40},
		{"2.3.0/types-hashmap-native", 40, 10},
		{"1.20.5/collections-hashmap-canonical", 40, 10},
		{"2.3.0/avro-hashmap-canonical", 40, 10},
		{"2.3.0/rowtypes-hashmap-canonical", 40, 10},
	} {
		name := sw.name
		t.Run(name, func(t *testing.T) {
			// One working copy per worker: each damages its own.
			cases := make([]*damageCase, max(1, min(runtime.GOMAXPROCS(0), 4)))
			for i := range cases {
				cases[i] = newDamageCase(t, name)
			}
			flips, cuts := tally{}, tally{}
			for _, rel := range cases[0].files(t) {
				if only := os.Getenv("STATEUTIL_FLINK_DAMAGE_FILE"); only != "" && !strings.Contains(rel, only) {
					continue
				}
				orig, err := os.ReadFile(filepath.Join(cases[0].dir, rel))
				if err != nil {
					t.Fatal(err)
				}
				flip := func(off int) []byte {
					damaged := slices.Clone(orig)
					damaged[off] ^= 0xff
					return damaged
				}
				for off, r := range damageAll(t, cases, rel, orig, damageStep(len(orig), sw.flips), flip) {
					flips.add(rel, r.outcome)
					if r.outcome == misreported || r.outcome == structure {
						t.Errorf("%s: byte %d flipped: %s: %s", rel, off, outcomeNames[r.outcome], r.msg)
					}
				}
				cut := func(n int) []byte { return orig[:n] }
				for n, r := range damageAll(t, cases, rel, orig, damageStep(len(orig), sw.cuts), cut) {
					cuts.add(rel, r.outcome)
					if r.outcome != detected {
						t.Errorf("%s cut at %d of %d: %s %s", rel, n, len(orig), outcomeNames[r.outcome], r.msg)
					}
				}
			}
			t.Logf("%s: single-byte flips (xor 0xff):\n%struncations:\n%s", name, flips, cuts)
		})
	}
}

// damageResult is how one damaged copy read.
type damageResult struct {
	outcome damageOutcome
	msg     string
}

// damageAll writes damage(off) as file rel for every off in [0,
// len(orig)) at the stride, spread over the working copies, and
// classifies each; each copy's file is orig again afterwards. Results
// come by offset, in order.
func damageAll(t *testing.T, cases []*damageCase, rel string, orig []byte, step int, damage func(off int) []byte) iter.Seq2[int, damageResult] {
	offs := make(chan int)
	results := make([]damageResult, (len(orig)+step-1)/step)
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Go(func() {
			path := filepath.Join(c.dir, rel)
			defer func() {
				if err := os.WriteFile(path, orig, 0o600); err != nil {
					t.Error(err)
				}
			}()
			for off := range offs {
				if err := os.WriteFile(path, damage(off), 0o600); err != nil {
					t.Error(err)
					continue
				}
				o, msg := c.classify(t, rel)
				results[off/step] = damageResult{o, msg}
			}
		})
	}
	for off := 0; off < len(orig); off += step {
		offs <- off
	}
	close(offs)
	wg.Wait()
	return func(yield func(int, damageResult) bool) {
		for i, r := range results {
			if !yield(i*step, r) {
				return
			}
		}
	}
}
