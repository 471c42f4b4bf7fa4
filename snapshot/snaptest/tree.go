package snaptest

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// HashTree maps every file and directory under root (relative path) to its
// content's SHA-256 ("dir" for directories; symlinks by target).
func HashTree(root string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case d.IsDir():
			out[rel] = "dir"
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			out[rel] = "symlink " + target
		default:
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			out[rel] = hex.EncodeToString(h[:])
		}
		return nil
	})
	return out, err
}

// TreeDiff describes how two HashTree results differ ("" when equal).
func TreeDiff(a, b map[string]string) string {
	var diffs []string
	for k, v := range a {
		switch w, ok := b[k]; {
		case !ok:
			diffs = append(diffs, k+" removed")
		case w != v:
			diffs = append(diffs, k+" changed")
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diffs = append(diffs, k+" added")
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, ", ")
}
