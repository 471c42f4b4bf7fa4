package cmd

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/snapshot/formattest"
)

// failingWriter is a stdout that refuses every write, as /dev/full does.
type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// stdoutCases is, for every command of the tree, a command line that prints
// to stdout; setup runs what it needs first (a snapshot to write from, a
// plan) in dir, with a working stdout.
var stdoutCases = map[string]func(t *testing.T, dir string) []string{
	"stateutil": func(*testing.T, string) []string { return nil },
	"inspect":   func(*testing.T, string) []string { return []string{"inspect", example} },
	"keygroup":  func(*testing.T, string) []string { return []string{"keygroup", "user-1"} },
	"ls": func(t *testing.T, dir string) []string {
		formattest.CopyTree(t, example, filepath.Join(dir, "checkpoints", "job", "chk-7.dump"))
		return []string{"ls", filepath.Join(dir, "checkpoints")}
	},
	"generate": func(_ *testing.T, dir string) []string {
		return []string{"generate", "--output", filepath.Join(dir, "gen.dump")}
	},
	"convert": func(_ *testing.T, dir string) []string {
		return []string{"convert", example, "--to", "filesystem", "--output", filepath.Join(dir, "fs")}
	},
	"rescale": func(*testing.T, string) []string {
		return []string{"rescale", example, "--parallelism", "3", "--dry-run"}
	},
	"verify":   func(*testing.T, string) []string { return []string{"verify", example} },
	"diff":     func(*testing.T, string) []string { return []string{"diff", example, example} },
	"operator": func(*testing.T, string) []string { return []string{"operator", "--help"} },
	"operator remove": func(_ *testing.T, dir string) []string {
		return []string{"operator", "remove", example, "--operator", "kafka-source", "--output", filepath.Join(dir, "removed.dump")}
	},
	"operator rename": func(_ *testing.T, dir string) []string {
		return []string{"operator", "rename", example, "--operator", "kafka-source", "--to", "src", "--output", filepath.Join(dir, "renamed.dump")}
	},
	"operator set-uid-hash": func(_ *testing.T, dir string) []string {
		return []string{"operator", "set-uid-hash", example, "--operator", "kafka-source", "--to", strings.Repeat("ab", 16), "--output", filepath.Join(dir, "hashed.dump")}
	},
	"state": func(*testing.T, string) []string { return []string{"state", "--help"} },
	"state drop": func(*testing.T, string) []string {
		return []string{"state", "drop", example, "--operator", "word-counter", "--state", "count", "--dry-run"}
	},
	"state rename": func(_ *testing.T, dir string) []string {
		return []string{"state", "rename", example, "--operator", "word-counter", "--state", "count", "--to", "n", "--output", filepath.Join(dir, "renamed-state.dump")}
	},
	"keys": func(*testing.T, string) []string { return []string{"keys", "--help"} },
	"keys delete": func(_ *testing.T, dir string) []string {
		return []string{"keys", "delete", example, "--operator", "word-counter", "--key", "word-10", "--output", filepath.Join(dir, "deleted.dump")}
	},
	"put": func(_ *testing.T, dir string) []string {
		return []string{"put", example, "--operator", "word-counter", "--state", "count", "--key", "word-10", "--value", "1", "--output", filepath.Join(dir, "put.dump")}
	},
	"load": func(t *testing.T, dir string) []string {
		from := filepath.Join(dir, "records.jsonl")
		if err := os.WriteFile(from, []byte(`{"operator":"word-counter","state":"count","key":"word-10","value":1}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{"load", example, "--from", from, "--output", filepath.Join(dir, "loaded.dump")}
	},
	"run": func(_ *testing.T, dir string) []string {
		return []string{"run", "wordcount", "--records", "100", "--checkpoint-dir", dir}
	},
	"version": func(*testing.T, string) []string { return []string{"version"} },
	// fetch-token needs a kerberized NameNode; its help still prints to stdout.
	"fetch-token": func(*testing.T, string) []string { return []string{"fetch-token", "--help"} },
	"serve": func(*testing.T, string) []string {
		return []string{"serve", example, "--listen", "127.0.0.1:0"}
	},
	"get": func(*testing.T, string) []string {
		return []string{"get", example, "--operator", "word-counter", "--state", "by-source", "--key", "word-10"}
	},
	"dump": func(*testing.T, string) []string { return []string{"dump", example, "--limit", "1"} },
	"sql":  func(*testing.T, string) []string { return []string{"sql", example, "-e", "SELECT 1"} },
	"upgrade": func(t *testing.T, _ string) []string {
		sp, err := filepath.Glob(filepath.Join("..", "testdata", "flink-upgrade", "1.20.5", "upgrade-hashmap-canonical", "snapshot", "savepoint-*"))
		if err != nil || len(sp) != 1 {
			t.Fatalf("the 1.20.5 upgrade savepoint: %v %v", sp, err)
		}
		return []string{"upgrade", "--check", sp[0], "--flink-version", "2.1"}
	},
	"shard": func(t *testing.T, dir string) []string {
		plan := writePlan(t, dir)
		return []string{"shard", plan, "--shard", "1/1"}
	},
	"commit": func(t *testing.T, dir string) []string {
		plan := writePlan(t, dir)
		mustRunQuiet(t, "shard", plan, "--shard", "1/1")
		return []string{"commit", plan}
	},
	"abort": func(t *testing.T, dir string) []string {
		return []string{"abort", writePlan(t, dir)}
	},
	"help":                  func(*testing.T, string) []string { return []string{"help", "inspect"} },
	"completion":            func(*testing.T, string) []string { return []string{"completion", "--help"} },
	"completion bash":       func(*testing.T, string) []string { return []string{"completion", "bash"} },
	"completion zsh":        func(*testing.T, string) []string { return []string{"completion", "zsh"} },
	"completion fish":       func(*testing.T, string) []string { return []string{"completion", "fish"} },
	"completion powershell": func(*testing.T, string) []string { return []string{"completion", "powershell"} },
}

// writePlan plans a one-shard rescale of example into dir.
func writePlan(t *testing.T, dir string) string {
	t.Helper()
	plan := filepath.Join(dir, "plan.json")
	mustRunQuiet(t, "rescale", example, "--parallelism", "3", "--output", filepath.Join(dir, "out"), "--plan-only", plan, "--shards", "1")
	return plan
}

// mustRunQuiet runs a setup step, whose stdout does not matter.
func mustRunQuiet(t *testing.T, args ...string) {
	t.Helper()
	if code, _, errOut := run(t, args...); code != ExitOK {
		t.Fatalf("stateutil %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
}

// commandPaths is every command of the tree, cobra's own help and
// completion commands included, named as stdoutCases names them.
func commandPaths() []string {
	root := NewRootCommand(nil, nil)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var paths []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		paths = append(paths, strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), "stateutil"), " "))
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	paths[0] = "stateutil"
	return paths
}

// Every command fails with exit 2 and one line naming the error when its
// output cannot be written, whether it prints a table, a summary, JSON or
// help; a reader that stopped reading (EPIPE) is still no failure.
func TestStdoutWriteErrorFailsEveryCommand(t *testing.T) {
	full := &fs.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.ENOSPC}
	for _, path := range commandPaths() {
		t.Run(path, func(t *testing.T) {
			setup, ok := stdoutCases[path]
			if !ok {
				t.Fatalf("command %q has no case in stdoutCases: add one that prints to stdout", path)
			}
			args := setup(t, t.TempDir())
			var stderr bytes.Buffer
			code := Run(context.Background(), args, failingWriter{full}, &stderr)
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			last := lines[len(lines)-1]
			if code != ExitCorrupt || !strings.HasPrefix(last, "stateutil: ") || !strings.Contains(last, full.Error()) {
				t.Fatalf("stateutil %s to a full stdout: exit %d, stderr %q; want exit 2 and a last line naming %q", strings.Join(args, " "), code, stderr.String(), full)
			}
			if n := strings.Count(stderr.String(), full.Error()); n != 1 {
				t.Errorf("the write error is printed %d times: %q", n, stderr.String())
			}
		})
	}
	closed := failingWriter{&fs.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}}
	differ := []string{"diff", example, "../testdata/memory/maxp4096.dump"}
	for _, c := range []struct {
		args []string
		out  failingWriter
		code int
		err  string
	}{
		{[]string{"inspect", example}, closed, ExitOK, ""},
		// diff's result is its exit code: a reader that stopped leaves it,
		// a failed write is an error.
		{differ, closed, ExitUsage, "stateutil: snapshots differ\n"},
		{differ, failingWriter{full}, ExitCorrupt, "stateutil: writing output: " + full.Error() + "\n"},
	} {
		var stderr bytes.Buffer
		if code := Run(context.Background(), c.args, c.out, &stderr); code != c.code || stderr.String() != c.err {
			t.Errorf("stateutil %s into %v: exit %d, stderr %q; want %d, %q", strings.Join(c.args, " "), c.out.err, code, stderr.String(), c.code, c.err)
		}
	}
}

// The real process, stdout on /dev/full: table, summary and version output
// fail with exit 2 and the kernel's error.
func TestStdoutDevFull(t *testing.T) {
	devFull, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("no /dev/full on this system")
	} else if err != nil {
		t.Fatal(err)
	}
	defer devFull.Close()
	for _, args := range [][]string{
		{"verify", example},
		{"inspect", example, "--key-groups"},
		{"diff", example, example},
		{"version"},
		{"rescale", example, "--parallelism", "3", "--dry-run"},
	} {
		t.Run(args[0], func(t *testing.T) {
			c := exec.Command(os.Args[0])
			c.Env = append(os.Environ(), mainEnv+"="+strings.Join(args, "\x1f"))
			c.Stdout = devFull
			var stderr strings.Builder
			c.Stderr = &stderr
			err := c.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != ExitCorrupt || !strings.Contains(stderr.String(), "no space left on device") {
				t.Fatalf("stateutil %s >/dev/full: %v, stderr %q; want exit 2 naming ENOSPC", strings.Join(args, " "), err, stderr.String())
			}
		})
	}
}
