package main

import (
	"os/exec"
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
