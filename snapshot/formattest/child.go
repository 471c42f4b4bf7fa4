package formattest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// StartChild re-runs the test binary (running no test; the package's
// TestMain acts on env) as a child process, with TMPDIR in the test's own
// temporary directory since a killed child cannot clean up. It returns the
// child, its stdout as lines, and its stderr.
func StartChild(t testing.TB, env ...string) (*exec.Cmd, *bufio.Scanner, *bytes.Buffer) {
	t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(append(os.Environ(), env...), "TMPDIR="+t.TempDir())
	stderr := &bytes.Buffer{}
	c.Stderr = stderr
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewScanner(out), stderr
}

// WaitChild waits for a child StartChild started: being killed is what the
// tests do to it; any other failure fails the test.
func WaitChild(t testing.TB, c *exec.Cmd, stderr *bytes.Buffer) {
	t.Helper()
	if err := c.Wait(); err != nil && !strings.Contains(err.Error(), "killed") {
		t.Fatalf("child failed: %v: %s", err, stderr.String())
	}
}
