package memory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/generate"
	"github.com/stateutil/stateutil/storage"
)

// renamingWriter gives an operator a name as the snapshot is committed.
type renamingWriter struct {
	snapshot.Writer
	name string
}

func (w renamingWriter) Commit(ctx context.Context, s *snapshot.Snapshot) error {
	s.Operators[1].Name = w.name
	return w.Writer.Commit(ctx, s)
}

// An operator name far beyond what a snapshot's strings may hold is
// refused before it is decoded: reading it costs about the file's size,
// not the several times more a decoder spends on a long string (a 50 MB
// name made inspect use 965 MB).
func TestLongNameRefusedBeforeDecoding(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "long.dump")
	w, err := Create(ctx, storage.Local(), path, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := generate.Write(ctx, renamingWriter{w, strings.Repeat("n", 16<<20)}, generate.Default()); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = testReg.Open(ctx, path, snapshot.OpenOptions{})
	runtime.ReadMemStats(&after)
	var ce *snapshot.CorruptError
	if !errors.As(err, &ce) || ce.File != path || !strings.Contains(err.Error(), "msgpack string of 16777216 bytes") {
		t.Fatalf("err = %v, want a CorruptError of %s about the string", err, path)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 2*uint64(info.Size()) {
		t.Fatalf("refusing a %d-byte dump allocated %d bytes", info.Size(), n)
	}
}
