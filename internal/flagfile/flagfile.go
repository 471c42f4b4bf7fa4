// Package flagfile reads the small files that command-line flags name (a
// token, a class list, Protobuf descriptors): regular files only, bounded in
// size, with errors that name the flag and the file.
package flagfile

import (
	"fmt"
	"io"
	"os"
)

// Read returns the contents of the regular file name, which flag names, of
// at most limit bytes.
func Read(flag, name string, limit int) ([]byte, error) {
	// Looked at before it is opened: opening a FIFO would wait for a writer.
	if st, err := os.Stat(name); err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %q is not a regular file", flag, name)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	defer f.Close()
	// Looked at again: the name may have been swapped since.
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %q is not a regular file", flag, name)
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s %q holds more than %d bytes", flag, name, limit)
	}
	return b, nil
}
