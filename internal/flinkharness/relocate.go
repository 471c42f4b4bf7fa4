package flinkharness

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"
)

// RelocateCheckpoint writes into dir a copy of the _metadata of the
// checkpoint at snapshotDir whose absolute paths under old (where Flink
// wrote the checkpoint) lie under new (where its files are now), with a
// link to each other file of snapshotDir (which _metadata may name
// relative to itself), and returns dir: Flink restores the checkpoint
// from there. A checkpoint names its other state files by absolute path,
// each written as Java's writeUTF writes a string (a 2-byte length, then
// the text, "file:" first or not).
func RelocateCheckpoint(snapshotDir, dir, old, new string) (string, error) {
	b, err := os.ReadFile(filepath.Join(snapshotDir, "_metadata"))
	if err != nil {
		return "", err
	}
	out, n, err := relocatePaths(b, old, new)
	if err != nil {
		return "", fmt.Errorf("%s: %v", snapshotDir, err)
	}
	if n == 0 {
		return "", fmt.Errorf("%s: no path under %s in its _metadata", snapshotDir, old)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	files, err := os.ReadDir(snapshotDir)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(snapshotDir)
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if f.Name() != "_metadata" {
			if err := os.Symlink(filepath.Join(abs, f.Name()), filepath.Join(dir, f.Name())); err != nil {
				return "", err
			}
		}
	}
	return dir, os.WriteFile(filepath.Join(dir, "_metadata"), out, 0o644)
}

// relocatePaths rewrites every writeUTF string of b that is a path under
// old (or "file:" and one) to lie under new; n counts them.
func relocatePaths(b []byte, old, new string) (out []byte, n int, err error) {
	from := []byte(old)
	for i := 0; i < len(b); {
		j := bytes.Index(b[i:], from)
		if j < 0 {
			out = append(out, b[i:]...)
			break
		}
		at := i + j
		start := at
		if at-i >= len("file:") && string(b[at-len("file:"):at]) == "file:" {
			start = at - len("file:")
		}
		if start-i < 2 {
			return nil, n, fmt.Errorf("a path at offset %d has no length before it", at)
		}
		size := int(binary.BigEndian.Uint16(b[start-2 : start]))
		end := start + size
		rest := end - at - len(from)
		if end > len(b) || rest < 0 || !utf8.Valid(b[start:end]) || rest > 0 && b[at+len(from)] != '/' {
			return nil, n, fmt.Errorf("the path at offset %d is not a whole string of its own", at)
		}
		text := string(b[start:at]) + new + string(b[at+len(from):end])
		if len(text) > 0xffff {
			return nil, n, fmt.Errorf("the path at offset %d is too long once relocated", at)
		}
		out = append(out, b[i:start-2]...)
		out = binary.BigEndian.AppendUint16(out, uint16(len(text)))
		out = append(out, text...)
		n++
		i = end
	}
	return out, n, nil
}
