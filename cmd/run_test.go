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

// TestRunCommandIncremental runs what make demo runs with the rocksdb
// backend: the summary and the JSON show that the second checkpoint
// reused the first one's SST files instead of uploading them again.
func TestRunCommandIncremental(t *testing.T) {
	args := []string{"run", "wordcount", "--backend", "rocksdb", "-p", "2", "--records", "40000", "--checkpoint-every", "10000", "--retain", "2", "-q"}
	code, out, errOut := stateutilRun(t, append(args, "--checkpoint-dir", t.TempDir())...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Incremental:  last checkpoint uploaded ", " checkpoints\n", "chk-1 uploaded ", "; SST files: 2 uploaded (", "chk-2 uploaded "} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	r := runResult(t, append(args, "--checkpoint-dir", t.TempDir())...)
	if len(r.Incremental) != r.Checkpoints || len(r.Incremental) < 2 {
		t.Fatalf("%d incremental checkpoints listed, %d written; want them all, at least 2", len(r.Incremental), r.Checkpoints)
	}
	first, second := r.Incremental[0], r.Incremental[1]
	if first.ReusedFiles != 0 || first.UploadedBytes != first.Bytes || first.SharedFiles == 0 {
		t.Errorf("first checkpoint %+v: want every file uploaded, SSTs among them", first)
	}
	if second.ReusedFiles == 0 || second.ReusedBytes == 0 || second.UploadedBytes+second.ReusedBytes != second.Bytes {
		t.Errorf("second checkpoint %+v: want the first one's SSTs reused, uploaded + reused = all", second)
	}
	if second.ID != first.ID+1 || !strings.HasSuffix(second.Location, "chk-2") {
		t.Errorf("second checkpoint is %d at %s", second.ID, second.Location)
	}
	if files, bytes := r.UploadedTotal(); files == 0 || bytes <= first.UploadedBytes {
		t.Errorf("uploaded in total: %d files, %d bytes", files, bytes)
	}
	// Other backends write full snapshots: no incremental figures.
	if r := runResult(t, "run", "wordcount", "--records", "2000", "--checkpoint-dir", t.TempDir()); r.Incremental != nil {
		t.Errorf("memory backend lists incremental checkpoints: %+v", r.Incremental)
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
		{[]string{"run", "wordcount", "--backend", "nosuch"}, ExitUsage, "--backend must be memory, filesystem or rocksdb"},
		{[]string{"run", "wordcount", "--backend", "flink"}, ExitUsage, "--backend must be memory, filesystem or rocksdb"},
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
