package tempdir

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stateutil/stateutil/storage"
)

// childEnv makes the test binary, re-executed, make a temporary directory
// in the directory it names, print its path and wait on stdin, until the
// parent kills it.
const childEnv = "STATEUTIL_TEST_TEMPDIR_CHILD"

// prefix is the prefix of the tests' directories; other is a prefix that
// starts with it, whose directories are not its.
const (
	prefix = "stateutil-test-"
	other  = "stateutil-test-other-"
)

func TestMain(m *testing.M) {
	if parent := os.Getenv(childEnv); parent != "" {
		dir, err := New(context.Background(), parent, prefix)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(dir.Path)
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child starts a child that makes a directory in tempDir and returns it
// with the directory, once it exists.
func child(t *testing.T, tempDir string) (*exec.Cmd, string) {
	t.Helper()
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), childEnv+"="+tempDir)
	c.Stderr = os.Stderr
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = c.Process.Kill()
		_ = c.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the child made no directory: %v", err)
	}
	return c, strings.TrimSpace(line)
}

// A directory left by a SIGKILLed process goes when the next one of its
// prefix is made there, with its claim; one of a process that runs, or
// whose claim is held (a process of another PID namespace), stays, and so
// do one of another prefix and one whose name holds no PID.
func TestAbandonedDirsAreRemoved(t *testing.T) {
	tempDir := t.TempDir()
	killed, abandoned := child(t, tempDir)
	_, live := child(t, tempDir)
	if !strings.HasPrefix(filepath.Base(abandoned), fmt.Sprintf("%s%d-", prefix, killed.Process.Pid)) {
		t.Fatalf("directory %s is not named with its owner's PID %d", abandoned, killed.Process.Pid)
	}
	if err := os.WriteFile(filepath.Join(abandoned, "run-1"), []byte("spilled"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := killed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := killed.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("child: %v, want killed", err)
	}
	// Another directory of the dead PID, whose claim is held.
	held := fmt.Sprintf("%s/%s%d-1", tempDir, prefix, killed.Process.Pid)
	claim, err := storage.Local().Claim(context.Background(), held)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Release()
	if err := os.Mkdir(held, 0o700); err != nil {
		t.Fatal(err)
	}

	// Another prefix's directory of the dead PID.
	others := fmt.Sprintf("%s/%s%d-1", tempDir, other, killed.Process.Pid)
	if err := os.Mkdir(others, 0o700); err != nil {
		t.Fatal(err)
	}
	// A directory os.MkdirTemp named with the prefix: digits, no PID.
	unnamed := fmt.Sprintf("%s/%s%d", tempDir, prefix, killed.Process.Pid)
	if err := os.Mkdir(unnamed, 0o700); err != nil {
		t.Fatal(err)
	}
	ownDir, err := New(context.Background(), tempDir, prefix)
	if err != nil {
		t.Fatal(err)
	}
	own := ownDir.Path
	if _, err := os.Stat(abandoned); !os.IsNotExist(err) {
		t.Errorf("the killed process's %s is still there (%v)", abandoned, err)
	}
	for _, dir := range []string{live, held, own, others, unnamed} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s was removed: %v", dir, err)
		}
	}
	entries, _ := os.ReadDir(tempDir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := 8 // live, held and own, each with its claim file, others and unnamed
	if len(names) != want {
		t.Errorf("%s holds %v, want the five directories left and the three claims", tempDir, names)
	}
	if err := ownDir.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Errorf("Remove left %s (%v)", own, err)
	}
}
