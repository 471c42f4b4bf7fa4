package flinkharness

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Manifest is a corpus entry's manifest.json (written by the harness's snapshot --manifest).
type Manifest struct {
	FlinkVersion string `json:"flink_version"`
	Job          string `json:"job"`
	Backend      string `json:"backend"`
	Kind         string `json:"kind"`
	Incremental  bool   `json:"incremental"`
	Compression  bool   `json:"compression"`
	Changelog    bool   `json:"changelog"`
	// Unaligned: an unaligned checkpoint, whose channel state may hold
	// records in flight (InFlightBytes says whether it does).
	Unaligned bool `json:"unaligned"`
	// Materialized (changelog only): whether the changelog handles have a
	// materialised part; nil when the snapshot has no changelog handle (a
	// canonical savepoint is written by the nested backend).
	Materialized   *bool  `json:"materialized,omitempty"`
	Parallelism    int    `json:"parallelism"`
	MaxParallelism *int   `json:"max_parallelism"`
	Records        int64  `json:"records"`
	Keys           int64  `json:"keys"`
	Payload        int    `json:"payload,omitempty"`
	CheckpointID   int64  `json:"checkpoint_id"`
	OriginalPath   string `json:"original_path"`
	OriginalDir    string `json:"original_dir"`
	// SnapshotSubpath is the snapshot (the directory holding _metadata)
	// relative to the directory Flink wrote into (the entry's snapshot/).
	SnapshotSubpath string   `json:"snapshot_subpath"`
	DumpLines       *int     `json:"dump_lines"`
	DumpSource      string   `json:"dump_source"`
	KeyedOperators  []string `json:"keyed_operators"`
}

// Entry is one snapshot of a corpus: <root>/<flink version>/<name>/.
type Entry struct {
	Dir      string // the entry's directory
	Name     string // e.g. basic-rocksdb-checkpoint-incremental
	Manifest Manifest
}

// SnapshotDir is where the entry's _metadata is.
func (e Entry) SnapshotDir() string {
	return filepath.Join(e.Dir, "snapshot", filepath.FromSlash(e.Manifest.SnapshotSubpath))
}

// PathMap is the OLD=NEW mapping for the absolute paths Flink recorded
// (checkpoints and changelog state): where snapshot/ was when Flink wrote it,
// and where it is now.
func (e Entry) PathMap() (old, new string) {
	return e.Manifest.OriginalDir, filepath.Join(e.Dir, "snapshot")
}

// AtOriginalDir makes the entry's snapshot/ reachable where Flink wrote it
// (Manifest.OriginalDir), through a symbolic link there, for Flink to
// restore a checkpoint, whose _metadata names its files by absolute path.
// It makes the directories above the link, and release removes the link
// and them. A lock (in the system's temporary directory) keeps other runs
// from that place until release; a link left there by a run that was
// killed is replaced. Anything else there is refused.
func (e Entry) AtOriginalDir() (release func(), err error) {
	old, now := e.PathMap()
	if old == "" {
		return func() {}, nil
	}
	if now, err = filepath.Abs(now); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(old))
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), fmt.Sprintf("stateutil-original-dir-%x.lock", sum[:8])), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return nil, fmt.Errorf("lock for %s: %w", old, err)
	}
	unlock := func() { lock.Close() }
	if fi, err := os.Lstat(old); err == nil {
		if fi.Mode()&os.ModeSymlink == 0 {
			unlock()
			return nil, fmt.Errorf("%s, where Flink wrote %s, holds what is not a link: move it away", old, e.Dir)
		}
		if err := os.Remove(old); err != nil {
			unlock()
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		unlock()
		return nil, err
	}
	var made []string // deepest first
	for d := filepath.Dir(old); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		made = append(made, d)
	}
	release = func() {
		os.Remove(old)
		for _, d := range made {
			os.Remove(d)
		}
		unlock()
	}
	if err := os.MkdirAll(filepath.Dir(old), 0o755); err != nil {
		release()
		return nil, err
	}
	if err := os.Symlink(now, old); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// File returns the path of a file of the entry (dump.jsonl, restore.jsonl, spa.jsonl, spa.err).
func (e Entry) File(name string) string { return filepath.Join(e.Dir, name) }

// ReadCorpus lists the entries under root (sorted by version, then name).
func ReadCorpus(root string) ([]Entry, error) {
	ms, err := filepath.Glob(filepath.Join(root, "*", "*", "manifest.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(ms)
	var out []Entry
	for _, m := range ms {
		data, err := os.ReadFile(m)
		if err != nil {
			return nil, err
		}
		e := Entry{Dir: filepath.Dir(m), Name: filepath.Base(filepath.Dir(m))}
		if err := json.Unmarshal(data, &e.Manifest); err != nil {
			return nil, fmt.Errorf("%s: %v", m, err)
		}
		if strings.HasPrefix(e.Name, ".") {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// RealMetadataFiles lists the `_metadata` files Flink wrote that the
// repository keeps (testdata/flink) and the shared fixtures next to it,
// when present.
func RealMetadataFiles() []string {
	root := RepoRoot()
	var out []string
	for _, pat := range []string{
		"testdata/flink/*/*/snapshot/*/_metadata",
		"testdata/flink/*/*/snapshot/*/chk-*/_metadata",
		"../shared/fixtures/flink/*/_metadata",
		"../shared/fixtures/flink/*/*/_metadata",
		"../shared/fixtures/flink/*/*/*/_metadata",
	} {
		m, _ := filepath.Glob(filepath.Join(root, pat))
		out = append(out, m...)
	}
	return out
}

// keySerializerSources names, for the witness jobs' changelog checkpoints
// that record no key serializer (taken before their backend first
// materialized, their SQL operators keyed by rows), the entry of the same
// job whose savepoint records them.
var keySerializerSources = map[string]string{
	"sqlops-hashmap-checkpoint-changelog":   "sqlops-hashmap-canonical",
	"sqlbatch-hashmap-checkpoint-changelog": "sqlbatch-hashmap-canonical",
}

// KeySerializersFrom is the snapshot a user of e's job gives
// --key-serializers-from, for an entry whose checkpoint records no key
// serializer: the savepoint of the same job and Flink version, found
// among corpora (entries of the corpora read, in order), else in the
// checked-in witness corpus; "" for an entry that needs none.
func (e Entry) KeySerializersFrom(corpora ...[]Entry) (string, error) {
	name, ok := keySerializerSources[e.Name]
	if !ok {
		return "", nil
	}
	for _, entries := range corpora {
		for _, o := range entries {
			if o.Name == name && o.Manifest.FlinkVersion == e.Manifest.FlinkVersion {
				return o.SnapshotDir(), nil
			}
		}
	}
	witness, err := ReadCorpus(filepath.Join(RepoRoot(), "testdata", "flink-witness"))
	if err != nil {
		return "", err
	}
	for _, o := range witness {
		if o.Name == name && o.Manifest.FlinkVersion == e.Manifest.FlinkVersion {
			return o.SnapshotDir(), nil
		}
	}
	return "", fmt.Errorf("%s/%s records no key serializer, and no corpus holds %s/%s to take them from", e.Manifest.FlinkVersion, e.Name, e.Manifest.FlinkVersion, name)
}
