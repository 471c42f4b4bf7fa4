package cmd

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestGoldenOperator(t *testing.T) {
	cases := map[string][]string{
		"operator-no-subcommand":   {"operator"},
		"operator-remove-unknown":  {"operator", "remove", example, "--operator", "nope", "--output", "x.dump"},
		"operator-rename-conflict": {"operator", "rename", example, "--operator", "rules", "--to", "sink", "--output", "x.dump"},
		"operator-rename-no-to":    {"operator", "rename", example, "--operator", "rules", "--output", "x.dump"},
		"operator-remove-no-dst":   {"operator", "remove", example, "--operator", "rules"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}

func TestOperatorRemoveAndRename(t *testing.T) {
	dir := t.TempDir()
	sum := hashTree(t, example)
	removed, renamed := filepath.Join(dir, "removed.dump"), filepath.Join(dir, "renamed.dump")
	mustRun(t, "operator", "remove", example, "--operator", "rules", "--output", removed)
	mustRun(t, "verify", removed)
	code, out, _ := run(t, "diff", example, removed, "--entries")
	if code != ExitUsage || !strings.Contains(out, "operator removed: rules") || strings.Count(out, "Operator ") != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	mustRun(t, "operator", "rename", example, "--operator", "word-counter", "--to", "counter-v2", "--output", renamed)
	mustRun(t, "verify", renamed)
	code, out, _ = run(t, "diff", example, renamed, "--entries")
	if code != ExitUsage || !strings.Contains(out, "operator removed: word-counter") || !strings.Contains(out, "operator added: counter-v2") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	back := filepath.Join(dir, "back.dump")
	mustRun(t, "operator", "rename", renamed, "--operator", "counter-v2", "--to", "word-counter", "--output", back)
	if code, out, _ := run(t, "diff", example, back, "--entries"); code != ExitOK {
		t.Fatalf("rename and back differs:\n%s", out)
	}
	if hashTree(t, example) != sum {
		t.Fatal("operator edits modified their source")
	}
}

// --operator takes an operator's name as the help says, also where the
// operator has a uid (Flink 2.x records both: uid "source", name "Source:
// source"), in every command that takes it.
func TestOperatorByName(t *testing.T) {
	snap := flinkSnapshot(t, "2.3.0", "basic-hashmap-canonical")
	for _, args := range [][]string{
		{"inspect", snap, "--operator-state", "--operator", "Source: source"},
		{"inspect", snap, "--key-groups", "--operator", "Source: source"},
		{"dump", snap, "--operator", "Source: source"},
		{"rescale", snap, "--operator", "Source: source=1", "--dry-run"},
	} {
		if code, _, errOut := run(t, args...); code != ExitOK {
			t.Errorf("stateutil %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
	}
	code, _, errOut := run(t, "get", snap, "--operator", "Source: source", "--state", "count", "--key", "a")
	if code != ExitNotFound || !strings.Contains(errOut, `operator "source" has no keyed state "count"`) {
		t.Errorf("get on the source by its name: exit %d: %s; want the source found, without keyed state", code, errOut)
	}
	dst := filepath.Join(t.TempDir(), "out")
	mustRun(t, "operator", "remove", snap, "--operator", "Source: source", "--output", dst)
	out := mustRun(t, "inspect", dst)
	if strings.Contains(out, "Source: source") || !strings.Contains(out, "rules-source") {
		t.Fatalf("removing \"Source: source\" left:\n%s", out)
	}
}
