package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Every kind of bad input gets one clear line naming the file (and the
// offset where one applies) and its documented exit code.
func TestBadInputMessagesAndExitCodes(t *testing.T) {
	cases := []struct {
		file     string
		code     int
		contains []string
	}{
		{"empty.dump", ExitCorrupt, []string{"empty.dump", "offset 0", "empty file"}},
		{"truncated.dump", ExitCorrupt, []string{"truncated.dump", "offset 12", "exceeds", "truncated"}},
		{"short-header.dump", ExitCorrupt, []string{"short-header.dump", "offset 10", "truncated header"}},
		{"bad-magic.dump", ExitCorrupt, []string{"bad-magic.dump", "offset 0", "match no snapshot format"}},
		{"unknown-version.dump", ExitUnsupported, []string{"unknown-version.dump", "version 99"}},
		{"bad-checksum.dump", ExitCorrupt, []string{"bad-checksum.dump", "checksum mismatch"}},
		{"huge-length.dump", ExitCorrupt, []string{"huge-length.dump", "offset 12", "body length 4611686018427387904"}},
		{"trailing-garbage.dump", ExitCorrupt, []string{"trailing-garbage.dump", "unexpected bytes"}},
		{"directory.dump", ExitNotFound, []string{"directory.dump", "is a directory"}},
		{"missing.dump", ExitNotFound, []string{"missing.dump", "does not exist"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), []string{"inspect", "../testdata/memory/" + c.file}, &stdout, &stderr)
			if code != c.code {
				t.Errorf("exit code %d, want %d (stderr: %s)", code, c.code, stderr.String())
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "stateutil: ") {
				t.Errorf("want one line starting with \"stateutil: \", got %q", msg)
			}
			for _, s := range c.contains {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q does not mention %q", msg, s)
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("nothing belongs on stdout for a bad input, got %q", stdout.String())
			}
		})
	}
}
