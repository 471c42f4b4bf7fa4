package rocksdbformat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/internal/rocksdb"
	"github.com/stateutil/stateutil/storage"
)

// Target says where a subtask's files go.
type Target struct {
	// Dir is the chk-N or savepoint directory.
	Dir chkdir.Dir
	// Priv names the subtask's private directory; "" means
	// SubtaskDirName.
	Priv string
	// Link hard-links private files into Dir (local disk) instead of
	// copying them, falling back to a copy where links fail.
	Link bool
	// Shared, when set, takes the SST files instead of the private
	// directory (an incremental checkpoint puts them in the job's shared
	// directory): given a file's name, local path and size, it returns the
	// file's entry and whether it uploaded the file (false: it references
	// an earlier upload again).
	Shared func(ctx context.Context, name, local string, size int64) (File, bool, error)
}

// UploadCounts are the transfer figures of one snapshot.
type UploadCounts struct {
	Files, UploadedFiles, ReusedFiles int
	Bytes, UploadedBytes              int64
}

// Add adds o's counts to u's.
func (u *UploadCounts) Add(o UploadCounts) {
	u.Files += o.Files
	u.UploadedFiles += o.UploadedFiles
	u.ReusedFiles += o.ReusedFiles
	u.Bytes += o.Bytes
	u.UploadedBytes += o.UploadedBytes
}

// RandomName is 16 random hex digits, for names that must not repeat.
func RandomName() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Upload flushes the instance, takes a RocksDB checkpoint (hard links)
// under tmp, and uploads it and the operator state to t.
func (in *Instance) Upload(ctx context.Context, t Target, tmp string) (*Handle, UploadCounts, error) {
	var us UploadCounts
	if in.db == nil {
		return nil, us, ErrClosed
	}
	if err := in.db.Flush(); err != nil {
		return nil, us, err
	}
	cp := filepath.Join(tmp, "cp-"+RandomName())
	if err := in.db.Checkpoint(cp); err != nil {
		return nil, us, err
	}
	defer os.RemoveAll(cp)
	ents, err := os.ReadDir(cp)
	if err != nil {
		return nil, us, err
	}
	priv := t.Priv
	if priv == "" {
		priv = SubtaskDirName(in.op.ID, in.index)
	}
	h := &Handle{Operator: in.op.ID, Subtask: in.index, KeyGroups: in.kgs, PrefixBytes: PrefixWidth(in.op.MaxParallelism)}
	st := t.Dir.Storage
	// Links on local disk are made around the storage: tell it of every
	// file at once, and of the directory with them.
	privDir := path.Join(t.Dir.Path, priv)
	made := []storage.Made{{Kind: storage.MadeDir, Path: privDir}, {Kind: storage.MadeFile, Path: path.Join(privDir, opStateName)}}
	for _, ent := range ents {
		if t.Shared == nil || !strings.HasSuffix(ent.Name(), ".sst") {
			made = append(made, storage.Made{Kind: storage.MadeFile, Path: path.Join(privDir, ent.Name())})
		}
	}
	if err := storage.Expect(ctx, st, made...); err != nil {
		return nil, us, err
	}
	if err := st.MkdirAll(ctx, privDir); err != nil {
		return nil, us, err
	}
	for _, ent := range ents {
		name := ent.Name()
		info, err := ent.Info()
		if err != nil {
			return nil, us, err
		}
		us.Files++
		us.Bytes += info.Size()
		if t.Shared != nil && strings.HasSuffix(name, ".sst") {
			f, uploaded, err := t.Shared(ctx, name, filepath.Join(cp, name), info.Size())
			if err != nil {
				return nil, us, err
			}
			h.Files = append(h.Files, f)
			if uploaded {
				us.UploadedFiles++
				us.UploadedBytes += f.Size
			} else {
				us.ReusedFiles++
			}
			continue
		}
		var n int64
		var crc uint32
		if t.Link {
			n, crc, err = linkLocal(ctx, filepath.Join(cp, name), path.Join(t.Dir.Path, priv, name), in.sums)
		} else {
			n, crc, err = UploadFile(ctx, st, filepath.Join(cp, name), path.Join(t.Dir.Path, priv, name))
		}
		if err != nil {
			return nil, us, err
		}
		h.Files = append(h.Files, File{Local: name, Path: priv + "/" + name, Size: n, CRC32C: crc})
		us.UploadedFiles++
		us.UploadedBytes += n
	}
	if t.Link {
		// The files' data was synced where RocksDB wrote it; the links
		// need their directory synced.
		if err := rocksdb.SyncPath(path.Join(t.Dir.Path, priv)); err != nil {
			return nil, us, err
		}
	}
	f, err := in.ops.write(ctx, t.Dir, priv+"/"+opStateName)
	if err != nil {
		return nil, us, err
	}
	if f != nil {
		h.OperatorState = f
		us.Files++
		us.UploadedFiles++
		us.Bytes += f.Size
		us.UploadedBytes += f.Size
	}
	return h, us, nil
}
