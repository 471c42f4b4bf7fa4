package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/cmd/internal/render"
)

// A memory dump's key groups are checked one at a time: get reads the key
// group of its key, so damage there is corrupt (exit 2) and damage
// elsewhere does not stop it; verify checks every key group and the
// checksum of the whole file.
func TestMemoryKeyGroupDamage(t *testing.T) {
	const damaged = "../testdata/memory/bad-key-group.dump" // a byte of the last key group flipped
	// The last key group written is the last of rules' last subtask.
	code, out, errOut := run(t, "dump", example, "--operator", "rules", "--state", "user-total", "-o", "jsonl")
	if code != ExitOK {
		t.Fatalf("dump: exit %d: %s", code, errOut)
	}
	type rec struct {
		Key      any `json:"key"`
		KeyGroup int `json:"key_group"`
	}
	var first, last rec
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i, l := range []string{lines[0], lines[len(lines)-1]} {
		if err := json.Unmarshal([]byte(l), []*rec{&first, &last}[i]); err != nil {
			t.Fatal(err)
		}
	}
	if first.KeyGroup == last.KeyGroup {
		t.Fatalf("want keys in two key groups, got %d and %d", first.KeyGroup, last.KeyGroup)
	}
	get := func(file string, key any) (int, string) {
		code, _, errOut := run(t, "get", file, "--operator", "rules", "--state", "user-total", "--key", render.JSONText(key))
		return code, errOut
	}
	if code, errOut := get(damaged, last.Key); code != ExitCorrupt || !strings.Contains(errOut, "bad-key-group.dump") || !strings.Contains(errOut, "checksum mismatch") {
		t.Errorf("get in the damaged key group: exit %d, %q; want exit %d naming the file and the checksum", code, errOut, ExitCorrupt)
	}
	for _, file := range []string{example, damaged} {
		if code, errOut := get(file, first.Key); code != ExitOK {
			t.Errorf("get %s in an intact key group: exit %d: %s", file, code, errOut)
		}
	}
	if code, _, errOut := run(t, "inspect", damaged); code != ExitOK {
		t.Errorf("inspect reads no key group, but exit %d: %s", code, errOut)
	}

	// Only the file's own checksum damaged: every key group reads, verify
	// still finds it.
	b, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0x01
	trailer := filepath.Join(t.TempDir(), "trailer.dump")
	if err := os.WriteFile(trailer, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, errOut := get(trailer, last.Key); code != ExitOK {
		t.Errorf("get with only the file checksum damaged: exit %d: %s", code, errOut)
	}
	if code, out, _ := run(t, "verify", trailer); code != ExitCorrupt || !strings.Contains(out, "checksum mismatch") {
		t.Errorf("verify with the file checksum damaged: exit %d, %q; want exit %d and the mismatch", code, out, ExitCorrupt)
	}
}

// A version 1 dump (all state under one checksum) still reads, and
// holds what the version 2 dump of the same snapshot holds.
func TestMemoryVersion1StillReads(t *testing.T) {
	dump := func(file string) string {
		code, out, errOut := run(t, "dump", file, "--now", "0", "-o", "jsonl")
		if code != ExitOK {
			t.Fatalf("dump %s: exit %d: %s", file, code, errOut)
		}
		return out
	}
	v1, v2 := dump("../testdata/memory-v1/example.dump"), dump(example)
	if v1 != v2 || strings.Count(v1, "\n") < 100 {
		t.Errorf("version 1 dump: %d lines, version 2: %d lines, or they differ", strings.Count(v1, "\n"), strings.Count(v2, "\n"))
	}
	if code, out, errOut := run(t, "verify", "../testdata/memory-v1/example.dump"); code != ExitOK {
		t.Errorf("verify version 1: exit %d: %s%s", code, out, errOut)
	}
}
