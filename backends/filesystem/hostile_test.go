package filesystem

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// countingStorage records the byte ranges read through ReadAt and Read.
type countingStorage struct {
	storage.Storage
	mu    sync.Mutex
	reads []readRange
}

type readRange struct {
	file     string
	off, len int64
}

type countingFile struct {
	storage.File
	s *countingStorage
}

func (s *countingStorage) Open(ctx context.Context, p string) (storage.File, error) {
	f, err := s.Storage.Open(ctx, p)
	if err != nil {
		return nil, err
	}
	return countingFile{f, s}, nil
}

func (f countingFile) ReadAt(b []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(b, off)
	f.s.mu.Lock()
	f.s.reads = append(f.s.reads, readRange{filepath.Base(f.Name()), off, int64(n)})
	f.s.mu.Unlock()
	return n, err
}

func (f countingFile) Read(b []byte) (int, error) {
	panic("sequential Read of " + f.Name())
}

func TestSingleKeyGroupReadsOnlyItsSection(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f := newFixture(128, 2000)
	f.write(t, storage.Local(), dir, snapshot.WriteOptions{InlineThreshold: -1})
	m, err := readMetadata(ctx, chkdir.At(storage.Local(), dir))
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingStorage{Storage: storage.Local()}
	r, err := Open(ctx, cs, dir, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	op := r.Snapshot().Operators[0]
	sub := op.Subtasks[1]
	layout := m.Layouts[0][1].Keyed
	checked := 0
	for kg := sub.KeyGroups.Start; kg <= sub.KeyGroups.End; kg++ {
		i := kg - sub.KeyGroups.Start
		lo, hi := layout.Offsets[i], layout.Offsets[i+1]
		cs.reads = nil
		n := 0
		for _, err := range r.Entries(ctx, op, 1, keygroup.Range{Start: kg, End: kg}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if int64(n) != sub.KeyGroupStats[i].Entries {
			t.Fatalf("key group %d: %d entries, stats say %d", kg, n, sub.KeyGroupStats[i].Entries)
		}
		var total int64
		for _, rr := range cs.reads {
			if rr.file != layout.Data.File || rr.off < lo || rr.off+rr.len > hi {
				t.Fatalf("key group %d (bytes %d..%d of %s): read %d bytes at %d of %s", kg, lo, hi, layout.Data.File, rr.len, rr.off, rr.file)
			}
			total += rr.len
		}
		if total != hi-lo {
			t.Fatalf("key group %d: read %d bytes, section has %d", kg, total, hi-lo)
		}
		if hi > lo {
			checked++
		}
	}
	if checked < 10 {
		t.Fatalf("only %d non-empty key groups checked", checked)
	}
}

// TestEveryByteFlipIsCorrupt flips each byte of each file of a small
// snapshot in turn and expects reading everything to fail as corrupt,
// naming the file (and for keyed state, the key group).
func TestEveryByteFlipIsCorrupt(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(128, 12)
	f.write(t, storage.Local(), dir, snapshot.WriteOptions{InlineThreshold: 8})
	names, _ := os.ReadDir(dir)
	if len(names) < 4 {
		t.Fatalf("want _metadata and several state files, have %v", names)
	}
	flips := 0
	for _, de := range names {
		fh, err := os.OpenFile(filepath.Join(dir, de.Name()), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		orig, _ := io.ReadAll(fh)
		for off := range orig {
			fh.WriteAt([]byte{orig[off] ^ 0xff}, int64(off))
			err := readEverythingAt(dir)
			fh.WriteAt(orig[off:off+1], int64(off))
			flips++
			switch {
			case de.Name() == chkdir.MetadataFile && off >= 8 && off < 12 && errors.Is(err, snapshot.ErrUnsupportedVersion):
				// The envelope's version field is not under its checksum.
			case !errors.Is(err, snapshot.ErrCorrupt):
				t.Fatalf("%s byte %d flipped: err = %v, want ErrCorrupt", de.Name(), off, err)
			case !strings.Contains(err.Error(), de.Name()):
				t.Fatalf("%s byte %d flipped: error %q does not name the file", de.Name(), off, err)
			case strings.HasSuffix(de.Name(), ".keyed") && !strings.Contains(err.Error(), "key group"):
				t.Fatalf("%s byte %d flipped: error %q does not name the key group", de.Name(), off, err)
			}
		}
		fh.Close()
	}
	if err := readEverythingAt(dir); err != nil {
		t.Fatalf("restored snapshot: %v", err)
	}
	t.Logf("%d flips in %d files", flips, len(names))
}

func readEverythingAt(dir string) error {
	r, err := Open(context.Background(), storage.Local(), dir, snapshot.OpenOptions{})
	if err != nil {
		return err
	}
	return readEverything(r)
}

// rewriteMeta edits the _metadata of the snapshot at dir.
func rewriteMeta(t *testing.T, dir string, edit func(m *metadata)) {
	t.Helper()
	ctx := context.Background()
	d := chkdir.At(storage.Local(), dir)
	m, err := readMetadata(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	edit(m)
	data, err := encodeMetadata(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CommitMetadata(ctx, data); err != nil {
		t.Fatal(err)
	}
}

func TestHostileMetadata(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("secret"), 0o644)
	keyed := func(m *metadata) *keyedLayout { return m.Layouts[0][0].Keyed }
	oper := func(m *metadata) *operatorLayout { return m.Layouts[1][0].Operator }
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, dir string, m *metadata)
		want string // in the error
	}{
		{"dotdot", func(_ *testing.T, _ string, m *metadata) { keyed(m).Data.File = "../x" }, `"../x"`},
		{"absolute", func(_ *testing.T, _ string, m *metadata) { keyed(m).Data.File = "/etc/passwd" }, `"/etc/passwd"`},
		{"inner dotdot", func(_ *testing.T, _ string, m *metadata) { keyed(m).Data.File = "a/../../x" }, `"a/../../x"`},
		{"shared dotdot", func(_ *testing.T, _ string, m *metadata) { keyed(m).Data.File = "shared/../../x" }, `"shared/../../x"`},
		{"symlink out", func(t *testing.T, dir string, m *metadata) {
			if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			m.Layouts[2][0].RawKeyed.File = "link"
		}, `"link"`},
		{"offset past end", func(_ *testing.T, _ string, m *metadata) { k := keyed(m); k.Offsets[len(k.Offsets)-1] = 1 << 40 }, "keyed state"},
		{"offsets backwards", func(_ *testing.T, _ string, m *metadata) {
			k := keyed(m)
			for i := 1; i < len(k.Offsets)-1; i++ {
				if k.Offsets[i] > 0 {
					k.Offsets[i] = k.Offsets[len(k.Offsets)-1] + 5
					break
				}
			}
		}, "keyed state"},
		{"huge size", func(_ *testing.T, _ string, m *metadata) {
			k := keyed(m)
			k.Data.Size, k.Offsets[len(k.Offsets)-1] = 1<<50, 1<<50
		}, "bytes"},
		{"huge entry count", func(_ *testing.T, _ string, m *metadata) {
			s := m.Snapshot.Operators[0].Subtasks[0]
			s.KeyGroupStats[0].Entries += 1 << 40
			s.Keyed.Entries += 1 << 40
		}, "cannot fill"},
		{"offsets missing", func(_ *testing.T, _ string, m *metadata) { k := keyed(m); k.Offsets = k.Offsets[:3] }, "offsets"},
		{"element past end", func(_ *testing.T, _ string, m *metadata) { oper(m).States[0].Lengths[0] = 1 << 62 }, "outside"},
		{"negative element", func(_ *testing.T, _ string, m *metadata) { oper(m).States[0].Offsets[0] = -8 }, "outside"},
		{"overlapping elements", func(_ *testing.T, _ string, m *metadata) {
			o := oper(m)
			o.States[0].Offsets[1] = o.States[0].Offsets[0]
		}, "gap or overlap"},
		{"raw size", func(_ *testing.T, _ string, m *metadata) {
			m.Layouts[2][0].RawKeyed.Size = 1 << 45
			m.Snapshot.Operators[2].Subtasks[0].RawKeyedBytes = 1 << 45
		}, "bytes"},
		{"state index table", func(_ *testing.T, _ string, m *metadata) { keyed(m).States = nil }, "state"},
		{"range beyond maxP", func(_ *testing.T, _ string, m *metadata) { m.Snapshot.Operators[0].MaxParallelism = 64 }, "Flink assigns it [0,21] at parallelism 3 of 64"},
		{"layouts short", func(_ *testing.T, _ string, m *metadata) { m.Layouts = m.Layouts[:1] }, "layouts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			newFixture(128, 40).write(t, storage.Local(), dir, snapshot.WriteOptions{InlineThreshold: -1})
			rewriteMeta(t, dir, func(m *metadata) { tc.edit(t, dir, m) })
			err := readEverythingAt(dir)
			// The directory's name holds the test's: look past it.
			if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(strings.ReplaceAll(err.Error(), dir, ""), tc.want) {
				t.Fatalf("err = %v, want ErrCorrupt mentioning %s", err, tc.want)
			}
		})
	}
}

func TestHostileSectionLength(t *testing.T) {
	dir := t.TempDir()
	newFixture(128, 40).write(t, storage.Local(), dir, snapshot.WriteOptions{InlineThreshold: -1})
	// Rewrite the first non-empty section of a keyed file as one entry
	// whose value claims 2^60 bytes, with checksums that match.
	rewriteMeta(t, dir, func(m *metadata) {
		k := m.Layouts[0][0].Keyed
		p := filepath.Join(dir, k.Data.File)
		data, _ := os.ReadFile(p)
		for i := range k.CRCs {
			lo, hi := k.Offsets[i], k.Offsets[i+1]
			if hi-lo < 12 {
				continue
			}
			sec := data[lo:hi]
			bad := []byte{0, 1, 'k', 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10}
			for len(bad) < len(sec) {
				bad = append(bad, 0)
			}
			copy(sec, bad[:len(sec)])
			k.CRCs[i] = crc(sec)
			break
		}
		k.Data.CRC32C = crc(data)
		os.WriteFile(p, data, 0o644)
	})
	err := readEverythingAt(dir)
	if !errors.Is(err, snapshot.ErrCorrupt) || !strings.Contains(err.Error(), "runs past") {
		t.Fatalf("err = %v", err)
	}
}

func TestMissingFileIsNotFound(t *testing.T) {
	dir := t.TempDir()
	newFixture(128, 40).write(t, storage.Local(), dir, snapshot.WriteOptions{InlineThreshold: -1})
	files, _ := filepath.Glob(filepath.Join(dir, "*.keyed"))
	os.Remove(files[0])
	if err := readEverythingAt(dir); !errors.Is(err, snapshot.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if _, err := Open(context.Background(), storage.Local(), t.TempDir(), snapshot.OpenOptions{}); !errors.Is(err, snapshot.ErrNotFound) {
		t.Fatalf("empty dir: err = %v, want ErrNotFound", err)
	}
}
