package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/runtime"
)

// stateutilRun runs the command tree in-process.
func stateutilRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func runResult(t *testing.T, args ...string) runtime.Result {
	t.Helper()
	code, out, errOut := stateutilRun(t, append(args, "-o", "json")...)
	if code != ExitOK {
		t.Fatalf("stateutil %v: exit %d: %s", args, code, errOut)
	}
	var r runtime.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("stateutil %v: %v\n%s", args, err, out)
	}
	return r
}

func TestRunCommandSummary(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := stateutilRun(t, "run", "wordcount", "--records", "5000", "-p", "2", "--checkpoint-dir", dir, "--checkpoint-every", "1000")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Job:          wordcount", "Records:      5000", "Checkpoints:", "State:", "digest", "Output:       5000 lines committed"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if errOut != "" {
		t.Errorf("stderr is not a terminal, yet it got %q", errOut)
	}
}

// TestRunCommandSavepointRestore stops wordcount with a savepoint at
// parallelism 2, restores it at 3 and at 1 for more input, and expects the
// state of one uninterrupted run over the same input.
func TestRunCommandSavepointRestore(t *testing.T) {
	for _, backend := range []string{"memory", "filesystem", "rocksdb"} {
		t.Run(backend, func(t *testing.T) {
			sp := filepath.Join(t.TempDir(), "sp")
			if backend == "memory" {
				sp += ".dump"
			}
			first := runResult(t, "run", "wordcount", "--records", "3000", "--partitions", "3", "-p", "2", "--backend", backend, "--savepoint", sp)
			if first.Savepoint != sp {
				t.Fatalf("savepoint %q, want %q", first.Savepoint, sp)
			}
			// The same partitions, longer: the restored run reads on from the offsets.
			want := runResult(t, "run", "wordcount", "--records", "6000", "--partitions", "3", "-p", "2")
			for _, p := range []string{"3", "1"} {
				got := runResult(t, "run", "wordcount", "--records", "6000", "--partitions", "3", "-p", p, "--backend", backend, "--restore", sp)
				if got.Records != 3000 {
					t.Errorf("p=%s: restored run read %d records, want 3000", p, got.Records)
				}
				if got.StateDigest != want.StateDigest {
					t.Errorf("p=%s: state digest %s, want %s", p, got.StateDigest, want.StateDigest)
				}
			}
		})
	}
}

func TestRunCommandErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"run", "nosuchjob"}, ExitUsage, "unknown job"},
		{[]string{"run", "wordcount", "--backend", "nosuch"}, ExitUsage, "unknown snapshot format"},
		{[]string{"run", "wordcount", "-p", "0"}, ExitUsage, "at least 1"},
		{[]string{"run", "wordcount", "--restore", "/nonexistent/sp.dump"}, ExitNotFound, "does not exist"},
		{[]string{"run", "sessions", "--input", "x.txt"}, ExitUsage, "generated input only"},
		{[]string{"run"}, ExitUsage, ""},
	} {
		code, _, errOut := stateutilRun(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d %q, want exit %d mentioning %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
}

func TestRunCommandHelp(t *testing.T) {
	code, out, _ := stateutilRun(t, "run", "--help")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"wordcount", "sessions", "sensors", "--checkpoint-dir", "--restore", "Examples:", "Exit codes:"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}
