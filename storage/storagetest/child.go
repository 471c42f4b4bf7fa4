package storagetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stateutil/stateutil/storage"
)

const (
	childMode  = "STATEUTIL_STORAGE_CHILD"
	childLoc   = "STATEUTIL_STORAGE_CHILD_LOC"
	childBytes = "STATEUTIL_STORAGE_CHILD_BYTES"
)

// RunChild does the work of a child that StartChild or RoundTrip started,
// with r, and reports whether it was one; a package's TestMain calls it
// first. A child claims a location, or writes bytes to a file there
// without committing it, says so on stdout and waits to be killed; or
// writes a file there and reads it back, says how that went and exits.
func RunChild(r *storage.Registry) bool {
	mode := os.Getenv(childMode)
	if mode == "" {
		return false
	}
	fail := func(err error) {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	ctx := context.Background()
	st, p, err := r.Resolve(ctx, os.Getenv(childLoc))
	if err != nil {
		fail(err)
	}
	switch mode {
	case "claim":
		if _, err := st.Claim(ctx, p); err != nil {
			fail(err)
		}
		fmt.Println("claimed")
	case "upload":
		n, _ := strconv.Atoi(os.Getenv(childBytes))
		w, err := st.Create(ctx, p)
		if err == nil {
			_, err = w.Write(bytes.Repeat([]byte("k"), n))
		}
		if err != nil {
			fail(err)
		}
		fmt.Println("written")
	case "roundtrip":
		if err := storage.WriteFile(ctx, st, p, []byte(mode)); err != nil {
			fail(err)
		}
		b, err := storage.ReadAll(ctx, st, p, 100)
		if err != nil {
			fail(err)
		}
		fmt.Printf("read back %q\n", b)
		return true
	}
	time.Sleep(time.Hour)
	return true
}

// StartChild runs the test binary as a child claiming loc, or writing n
// bytes to it, and waits for its first line: claimed, or written.
func StartChild(t *testing.T, mode, loc string, n int, env ...string) *exec.Cmd {
	t.Helper()
	want := map[string]string{"claim": "claimed", "upload": "written"}[mode]
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(append(os.Environ(), childMode+"="+mode, childLoc+"="+loc, childBytes+"="+strconv.Itoa(n)), env...)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != want {
		t.Fatalf("child %s: %q, %v; want %q", mode, line, err, want)
	}
	return c
}

// RoundTrip runs the test binary as a child, with env added to this
// process's, that writes a file at loc and reads it back, and returns what
// it said: `read back "roundtrip"`, or "error: " and why not.
func RoundTrip(t *testing.T, loc string, env ...string) string {
	t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(append(os.Environ(), childMode+"=roundtrip", childLoc+"="+loc), env...)
	c.Stderr = os.Stderr
	out, _ := c.Output()
	line, _, _ := strings.Cut(string(out), "\n")
	return line
}

// Kill kills a child with SIGKILL: it cleans nothing up.
func Kill(t *testing.T, c *exec.Cmd) {
	t.Helper()
	if err := c.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.Wait()
}
