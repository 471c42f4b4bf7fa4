package vectorfile

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Read decodes every line of every vectors file in dir into a T, in file
// order, and hands each with its file's Flink version to versioned. maker
// is the script that writes the files, named when there are none.
func Read[T any](t testing.TB, dir, maker string, versioned func(v *T, version string)) []T {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) == 0 {
		t.Fatalf("no vectors in %s (%s makes them)", dir, maker)
	}
	var out []T
	for _, f := range files {
		version := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		file, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(file)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var v T
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			versioned(&v, version)
			out = append(out, v)
		}
		err = sc.Err()
		file.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return out
}

// Unhex is the bytes of a vector's hex text, "0x" prefix or not.
func Unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Vector is one serializer of a vectors file of the common shape: its
// snapshot as a keyed state's meta info stores it, and values Flink
// serialized, each with the JSON worked out on Flink's side from the Java
// value, or marked not decoded where the snapshot records too little.
type Vector struct {
	Name       string `json:"name"`
	Serializer string `json:"serializer"`
	Snapshot   string `json:"snapshot"`
	Values     []struct {
		Bytes      string          `json:"bytes"`
		JSON       json.RawMessage `json:"json"`
		NotDecoded bool            `json:"not_decoded"`
	} `json:"values"`
	// Version is the Flink version of the file the vector is in.
	Version string `json:"-"`
}

// Vectors reads every vector of the vectors files in dir (Read).
func Vectors(t testing.TB, dir, maker string) []Vector {
	t.Helper()
	return Read(t, dir, maker, func(v *Vector, version string) { v.Version = version })
}
