package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The house's one-way flow, cmd -> migrate | runtime | diff | statesql ->
// lookup -> redistribute -> snapshot <- backends -> storage: the imports no package of
// a layer may have (test files aside). Formats reach everything through the
// registry cmd.Main builds, so only cmd names a backend.
var forbidden = map[string][]string{
	"snapshot":     {"cmd", "migrate", "runtime", "diff", "lookup", "statesql", "redistribute", "backends"},
	"keygroup":     {""},
	"storage":      {"cmd", "migrate", "runtime", "diff", "lookup", "redistribute", "backends", "snapshot", "keygroup"},
	"redistribute": {"cmd", "migrate", "runtime", "diff", "lookup", "backends"},
	"backends":     {"cmd", "migrate", "runtime", "diff", "lookup", "redistribute"},
	"migrate":      {"cmd", "backends"},
	"runtime":      {"cmd", "migrate", "backends"},
	"diff":         {"cmd", "migrate", "runtime", "backends"},
	"lookup":       {"cmd", "migrate", "runtime", "diff", "statesql", "backends", "redistribute"},
	// statesql reads state as dump does, on DuckDB: cmd | serve -> statesql -> lookup.
	"statesql": {"cmd", "serve", "migrate", "runtime", "diff", "surgery", "yarn", "backends", "redistribute"},
	// surgery edits state as the copy reads it: cmd -> migrate -> surgery -> snapshot.
	"surgery": {"cmd", "migrate", "runtime", "diff", "lookup", "redistribute", "backends"},
	// catalog lists snapshots through the registry: cmd -> catalog -> snapshot.
	"catalog": {"cmd", "migrate", "runtime", "diff", "lookup", "redistribute", "backends", "surgery", "yarn"},
	// yarn runs migrate's shards on a cluster: cmd -> yarn -> migrate.
	"yarn": {"cmd", "runtime", "diff", "lookup", "backends"},
}

func TestLayering(t *testing.T) {
	const module = "github.com/stateutil/stateutil"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		layer, _, _ := strings.Cut(pkg, "/")
		banned, ok := forbidden[layer]
		if !ok {
			continue
		}
		checked++
		for _, imp := range fields[1:] {
			rel, ours := strings.CutPrefix(imp, module+"/")
			if !ours {
				continue
			}
			for _, b := range banned {
				if b == "" || rel == b || strings.HasPrefix(rel, b+"/") {
					t.Errorf("%s imports %s: against the flow cmd -> migrate | runtime -> redistribute -> snapshot <- backends -> storage", pkg, rel)
				}
			}
		}
	}
	if checked < len(forbidden) {
		t.Fatalf("go list named %d packages of the layers, want at least %d:\n%s", checked, len(forbidden), out)
	}
}

// The flink format's packages, from the bottom up: a package may import
// only packages of lower levels. The serializer families (the packages
// under internal/typeser/) stand beside each other on one level, and only
// the format itself, which assembles their table, imports them.
var flinkLevels = map[string]int{
	"backends/flink/internal/wire":       0,
	"backends/flink/internal/vectorfile": 0, // the codec tests' Flink byte vectors
	"backends/flink/internal/javaser":    1,
	"backends/flink/internal/sidecar":    1, // the checksum manifest of the savepoints stateutil writes
	"backends/flink/metadata":            2,
	"backends/flink/internal/typeser":    2,
	"backends/flink/internal/releases":   3, // what each Flink release line writes and reads
	"backends/flink/internal/statefile":  4,
	"backends/flink/internal/changelog":  5,
	"backends/flink/internal/upgrade":    5,
	"backends/flink/internal/carried":    5, // what a snapshot records beyond the model, and the headers written from it
	"backends/flink":                     6,
}

const familyLevel = 3

func flinkLevel(pkg string) (int, bool) {
	if l, ok := flinkLevels[pkg]; ok {
		return l, true
	}
	if strings.HasPrefix(pkg, "backends/flink/internal/typeser/") {
		return familyLevel, true
	}
	return 0, false
}

func TestFlinkLayering(t *testing.T) {
	const module = "github.com/stateutil/stateutil/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./backends/flink/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		level, ok := flinkLevel(pkg)
		if !ok {
			t.Errorf("%s has no level in flinkLevels: say where it stands", pkg)
			continue
		}
		seen[pkg] = true
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			dl, ok := flinkLevel(dep)
			switch {
			case !ok:
			case dl >= level:
				t.Errorf("%s (level %d) imports %s (level %d): only lower levels", pkg, level, dep, dl)
			case dl == familyLevel && pkg != "backends/flink":
				t.Errorf("%s imports the serializer family %s: only backends/flink assembles the families", pkg, dep)
			}
		}
	}
	for pkg := range flinkLevels {
		if !seen[pkg] {
			t.Errorf("go list named no package %s", pkg)
		}
	}
}

// maxPackageLines bounds a package's non-test Go: past it, a package holds
// more than one job.
const maxPackageLines = 5000

func TestPackageSize(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}} {{join .GoFiles \" \"}} {{join .CgoFiles \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		lines := 0
		for _, f := range fields[1:] {
			b, err := os.ReadFile(filepath.Join(fields[0], f))
			if err != nil {
				t.Fatal(err)
			}
			lines += bytes.Count(b, []byte("\n"))
		}
		if lines > maxPackageLines {
			t.Errorf("%s: %d lines of non-test Go, over %d: split it", fields[0], lines, maxPackageLines)
		}
	}
}
