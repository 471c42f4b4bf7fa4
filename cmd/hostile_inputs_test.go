package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink"
)

// TestVerifyWarnsOfALostManifest removes the checksum manifest of a
// savepoint stateutil wrote, without which a flipped byte in a state
// value goes unseen: verify must warn that it is gone (exit 0, exit 7
// with --strict), never say "OK". A savepoint Flink wrote, which never
// had one, gets no warning.
func TestVerifyWarnsOfALostManifest(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "sp")
	mustRun(t, "convert", flinkSavepoint, "--to", "flink", "--output", dst, "--quiet")
	if err := os.Remove(filepath.Join(dst, flink.ChecksumsFile)); err != nil {
		t.Fatal(err)
	}
	silent := 0
	code, out, errOut := run(t, "verify", dst)
	if code == ExitOK && (strings.Contains(out, "OK: no problems found") || !strings.Contains(out, flink.ChecksumsFile)) {
		silent++
		t.Errorf("verify of a savepoint without its manifest: exit %d, no warning:\n%s%s", code, out, errOut)
	}
	if code, _, errOut := run(t, "verify", "--strict", dst); code != ExitWarnings {
		silent++
		t.Errorf("verify --strict: exit %d, want %d: %s", code, ExitWarnings, errOut)
	}
	var res struct {
		OK       bool `json:"ok"`
		Warnings []struct {
			Check, Message string
		} `json:"warnings"`
	}
	_, out, _ = run(t, "verify", "-o", "json", dst)
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Warnings) != 1 || res.Warnings[0].Check != "unchecked" {
		silent++
		t.Errorf("verify -o json: %v: %s", err, out)
	}
	hostileCount(t, "lost-manifest-unreported", silent)

	code, out, errOut = run(t, "verify", "--strict", flinkSavepoint)
	if code != ExitOK || !strings.Contains(out, "OK: no problems found") {
		t.Errorf("verify --strict of a savepoint Flink wrote: exit %d:\n%s%s", code, out, errOut)
	}
}

// hostileRecords are load lines that JSON would take and change without a
// word; each must be refused naming its line.
var hostileRecords = map[string]string{
	"a field given twice":        `{"operator":"word-counter","state":"count","key":"word-10","key":"word-18","value":1}`,
	"a deletion with a value":    `{"operator":"word-counter","state":"count","key":"word-10","value":1,"delete":true}`,
	"a number for a text key":    `{"operator":"word-counter","state":"count","key":10,"value":1}`,
	"a lone surrogate in a key":  `{"operator":"word-counter","state":"count","key":"word-\ud800","value":1}`,
	"a map value given twice":    `{"operator":"word-counter","state":"by-source","key":"word-10","value":{"web":1,"web":2}}`,
	"bytes that are not UTF-8":   "{\"operator\":\"word-counter\",\"state\":\"count\",\"key\":\"word-\xff\",\"value\":1}",
	"a boolean for a text key":   `{"operator":"word-counter","state":"count","key":true,"value":1}`,
	"a reversed surrogate pair":  `{"operator":"word-counter","state":"count","key":"\udc00\ud800","value":1}`,
	"a lone low surrogate":       `{"operator":"word-counter","state":"count","key":"x\udfff","value":1}`,
	"a null value with a delete": `{"operator":"word-counter","state":"count","key":"word-10","value":null,"delete":true}`,
}

// TestHostileLoadAndPut gives load and put what they must refuse: exit 1
// naming the line (load) or the flag (put), and nothing written. A string
// holding a number for a numeric key stays fine.
func TestHostileLoadAndPut(t *testing.T) {
	dir := t.TempDir()
	good := `{"operator":"rules","state":"user-total","key":"13","value":5}`
	accepted := 0
	line := regexp.MustCompile(`line 2: `)
	for name, rec := range hostileRecords {
		from := filepath.Join(dir, "edits.jsonl")
		userFile(t, from, good+"\n"+rec+"\n")
		dst := filepath.Join(dir, "dst")
		code, _, errOut := run(t, "load", example, "--from", from, "--output", dst)
		if code != ExitUsage || !line.MatchString(errOut) || exists(dst) {
			accepted++
			t.Errorf("load of %s: exit %d, want %d naming line 2, nothing written: %s", name, code, ExitUsage, errOut)
		}
	}
	for name, args := range map[string][]string{
		"a field given twice":       {"--state", "by-source", "--key", "word-10", "--value", `{"web":1,"web":2}`},
		"a lone surrogate in a key": {"--state", "count", "--key", `"word-\ud800"`, "--value", "1"},
		"a value to delete":         {"--state", "count", "--key", "word-10", "--value", "1", "--delete"},
	} {
		dst := filepath.Join(dir, "dst")
		code, _, errOut := run(t, append([]string{"put", example, "--operator", "word-counter", "--output", dst}, args...)...)
		if code != ExitUsage || exists(dst) {
			accepted++
			t.Errorf("put of %s: exit %d, want %d, nothing written: %s", name, code, ExitUsage, errOut)
		}
	}
	hostileCount(t, "hostile-inputs-accepted", accepted)
	userFile(t, filepath.Join(dir, "good.jsonl"), good+"\n")
	mustRun(t, "load", example, "--from", filepath.Join(dir, "good.jsonl"), "--output", filepath.Join(dir, "good"), "--quiet")
}

// TestKilledReadLeavesNoTempDirs kills a copy from a rocksdb snapshot
// while it reads (its instances unpacked in TMPDIR): the next read there
// removes what the killed one left.
func TestKilledReadLeavesNoTempDirs(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	mustRun(t, "convert", example, "--to", "rocksdb", "--output", src, "--quiet")
	tmp := t.TempDir()
	reads := func() []string {
		m, _ := filepath.Glob(filepath.Join(tmp, "stateutil-rocksdb-read-*"))
		return m
	}
	// Subtasks are copied concurrently: the first reports may come from
	// ones with no keyed state, read before any instance is unpacked.
	for at := 1; len(reads()) == 0; at++ {
		if !killedAt(t, tmp, at, "convert", src, "--to", "memory", "--output", filepath.Join(dir, "dst")) {
			t.Fatalf("the copy finished before it could be killed reading: %v", emptyDir(t, tmp))
		}
	}
	if code, errOut := child(t, tmp, 0, "verify", src); code != ExitOK {
		t.Fatalf("verify: exit %d: %s", code, errOut)
	}
	left := reads()
	hostileCount(t, "reader-temp-dirs-left", len(left))
	if len(left) > 0 {
		t.Errorf("left after the next read: %v", left)
	}
}
