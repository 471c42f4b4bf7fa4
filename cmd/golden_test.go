package cmd

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata/golden from the current output")

// goldenDir holds one file per golden case: the command line, the exit
// code, stdout and stderr.
const goldenDir = "../testdata/golden"

// runGolden runs stateutil in-process with args and compares everything it
// printed, and its exit code, with testdata/golden/NAME.txt.
func runGolden(t *testing.T, name string, args ...string) {
	t.Helper()
	runGoldenAs(t, name, strings.Join(args, " "), args...)
}

// runGoldenAs is runGolden recording the command line as shown: the same
// golden file then serves arguments that differ (temporary paths).
func runGoldenAs(t *testing.T, name, shown string, args ...string) {
	t.Helper()
	var r func(string) string
	if shown != strings.Join(args, " ") && len(args) > 1 {
		// The snapshot's path is not shown: it is not in the output either.
		r = strings.NewReplacer(args[1], "SNAP").Replace
	}
	runGoldenReplacing(t, name, r, args...)
}

// runGoldenReplacing is runGolden with r applied to the command line and
// everything printed (temporary paths, random ids), if r is not nil.
func runGoldenReplacing(t *testing.T, name string, r func(string) string, args ...string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), args, &stdout, &stderr)
	shown, out, errOut := strings.Join(args, " "), stdout.String(), stderr.String()
	if r != nil {
		shown, out, errOut = r(shown), r(out), r(errOut)
	}
	goldenText(t, name, fmt.Sprintf("$ stateutil %s\nexit: %d\n--- stdout\n%s--- stderr\n%s", shown, code, out, errOut))
}

// goldenText compares text with testdata/golden/NAME.txt; -rewrite
// writes it there instead.
func goldenText(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(goldenDir, name+".txt")
	if *rewrite {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test ./cmd -rewrite` to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (rerun with -rewrite if the change is intended)\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

const example = "../testdata/memory/example.dump"

func TestGoldenInspect(t *testing.T) {
	cases := map[string][]string{
		"inspect-summary":          {"inspect", example},
		"inspect-summary-json":     {"inspect", example, "-o", "json"},
		"inspect-subtasks":         {"inspect", example, "--subtasks"},
		"inspect-subtasks-json":    {"inspect", example, "--subtasks", "-o", "json"},
		"inspect-key-groups":       {"inspect", example, "--key-groups", "--operator", "word-counter"},
		"inspect-key-groups-json":  {"inspect", example, "--key-groups", "-o", "json"},
		"inspect-operator-state":   {"inspect", example, "--operator-state"},
		"inspect-operator-values":  {"inspect", example, "--operator-state", "--values", "--operator", "kafka-source"},
		"inspect-operator-json":    {"inspect", example, "--operator-state", "--values", "-o", "json"},
		"inspect-maxp4096":         {"inspect", "../testdata/memory/maxp4096.dump", "--subtasks"},
		"inspect-unknown-operator": {"inspect", example, "--key-groups", "--operator", "nope"},
		"inspect-two-views":        {"inspect", example, "--key-groups", "--subtasks"},
		"inspect-bad-output":       {"inspect", example, "-o", "yaml"},
		"inspect-no-args":          {"inspect"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}

func TestGoldenKeygroup(t *testing.T) {
	cases := map[string][]string{
		"keygroup-string":       {"keygroup", "user-1", "--key-type", "string", "--max-parallelism", "128", "--parallelism", "3"},
		"keygroup-int-json":     {"keygroup", "42", "--key-type", "int", "--max-parallelism", "4096", "-o", "json"},
		"keygroup-bad-maxp":     {"keygroup", "x", "--max-parallelism", "40000"},
		"keygroup-p-above-maxp": {"keygroup", "x", "--max-parallelism", "4", "--parallelism", "5"},
		"keygroup-bad-type":     {"keygroup", "x", "--key-type", "pojo"},
		"keygroup-bad-int":      {"keygroup", "abc", "--key-type", "int"},
		"unknown-flag":          {"inspect", example, "--frobnicate"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}
