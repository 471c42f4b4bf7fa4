package redistribute

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

// spillChildEnv makes the test binary, re-executed, make a spill directory
// in the directory it names, print its path and wait on stdin, until the
// parent kills it.
const spillChildEnv = "STATEUTIL_TEST_SPILL_CHILD"

func TestMain(m *testing.M) {
	if tempDir := os.Getenv(spillChildEnv); tempDir != "" {
		dir, _, err := newSpillDir(context.Background(), tempDir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(dir)
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// spillChild starts a child that makes a spill directory in tempDir and
// returns it with the directory, once it exists.
func spillChild(t *testing.T, tempDir string) (*exec.Cmd, string) {
	t.Helper()
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), spillChildEnv+"="+tempDir)
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
		t.Fatalf("the child made no spill directory: %v", err)
	}
	return c, strings.TrimSpace(line)
}

// A spill directory left by a SIGKILLed process goes at the next run on
// that temporary directory, with its claim; one of a process that runs, or
// whose claim is held (a process of another PID namespace), stays.
func TestAbandonedSpillDirsAreRemoved(t *testing.T) {
	tempDir := t.TempDir()
	killed, abandoned := spillChild(t, tempDir)
	_, live := spillChild(t, tempDir)
	if !strings.HasPrefix(filepath.Base(abandoned), fmt.Sprintf("stateutil-rehash-%d-", killed.Process.Pid)) {
		t.Fatalf("spill directory %s is not named with its owner's PID %d", abandoned, killed.Process.Pid)
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
	held := fmt.Sprintf("%s/stateutil-rehash-%d-1", tempDir, killed.Process.Pid)
	claim, err := storage.Local().Claim(context.Background(), held)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Release()
	if err := os.Mkdir(held, 0o700); err != nil {
		t.Fatal(err)
	}

	own, ownClaim, err := newSpillDir(context.Background(), tempDir)
	if err != nil {
		t.Fatal(err)
	}
	defer ownClaim.Release()
	if _, err := os.Stat(abandoned); !os.IsNotExist(err) {
		t.Errorf("the killed process's %s is still there (%v)", abandoned, err)
	}
	for _, dir := range []string{live, held, own} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s was removed: %v", dir, err)
		}
	}
	entries, _ := os.ReadDir(tempDir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := 6 // live, held and own, each with its claim file
	if len(names) != want {
		t.Errorf("%s holds %v, want the three directories left and their claims", tempDir, names)
	}
}
