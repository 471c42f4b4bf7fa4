package cmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot/formattest"
)

// A filesystem snapshot generated onto HDFS inspects exactly like the same
// snapshot generated onto local disk, in every view, apart from the lines
// that name the location.
func TestInspectHDFSMatchesLocal(t *testing.T) {
	remote := formattest.HDFSDir(t) + "/job/chk-7"
	local := filepath.Join(t.TempDir(), "job", "chk-7")
	for _, loc := range []string{local, remote} {
		mustRun(t, "generate", "--format", "filesystem", "--keys", "3000", "--output", loc)
	}
	for _, view := range [][]string{
		{},
		{"-o", "json"},
		{"--subtasks"},
		{"--key-groups", "--operator", "word-counter"},
		{"--key-groups", "-o", "json"},
		{"--operator-state", "--values"},
	} {
		name := "inspect " + strings.Join(view, " ")
		want := mustRun(t, append([]string{"inspect", local}, view...)...)
		got := mustRun(t, append([]string{"inspect", remote}, view...)...)
		wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
		if len(wl) != len(gl) {
			t.Errorf("%s: %d lines on HDFS, %d locally", name, len(gl), len(wl))
			continue
		}
		differ := 0
		for i := range wl {
			if wl[i] == gl[i] {
				continue
			}
			differ++
			if !strings.Contains(wl[i], local) || !strings.Contains(gl[i], remote) ||
				strings.Replace(wl[i], local, "LOC", 1) != strings.Replace(gl[i], remote, "LOC", 1) {
				t.Errorf("%s: line %d differs beyond the location:\n  local: %s\n  hdfs:  %s", name, i+1, wl[i], gl[i])
			}
		}
		if differ > 1 {
			t.Errorf("%s: %d lines differ, want only the location line", name, differ)
		}
		t.Logf("%s: %d lines, %d differing (the location)", name, len(wl), differ)
	}
}
