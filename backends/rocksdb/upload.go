package rocksdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/internal/rocksdb"
)

// uploadTarget says where a subtask's files go.
type uploadTarget struct {
	// dir is the chk-N or savepoint directory.
	dir chkdir.Dir
	// incremental puts SSTs into the job's shared directory, referencing
	// ones already there when reuse approves; otherwise every file goes
	// into the subtask's private directory (self-contained).
	incremental bool
	reuse       func(sharedPath string) bool
	// newShared collects the storage paths of shared files uploaded, so a
	// failed checkpoint can remove them.
	newShared *[]string
	// priv names the subtask's private directory; "" means
	// subtaskDirName.
	priv string
	// link hard-links private files into dir (local disk) instead of
	// copying them, falling back to a copy where links fail.
	link bool
}

// uploadStats are the transfer figures of one snapshot.
type uploadStats struct {
	Files, UploadedFiles, ReusedFiles int
	Bytes, UploadedBytes              int64
}

func (u *uploadStats) add(o uploadStats) {
	u.Files += o.Files
	u.UploadedFiles += o.UploadedFiles
	u.ReusedFiles += o.ReusedFiles
	u.Bytes += o.Bytes
	u.UploadedBytes += o.UploadedBytes
}

func randomName() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// upload flushes the instance, takes a RocksDB checkpoint (hard links)
// under tmp, and uploads it and the operator state to t.
func (in *Instance) upload(ctx context.Context, t uploadTarget, tmp string) (*handle, uploadStats, error) {
	var us uploadStats
	if in.db == nil {
		return nil, us, errClosed
	}
	if err := in.db.Flush(); err != nil {
		return nil, us, err
	}
	cp := filepath.Join(tmp, "cp-"+randomName())
	if err := in.db.Checkpoint(cp); err != nil {
		return nil, us, err
	}
	defer os.RemoveAll(cp)
	ents, err := os.ReadDir(cp)
	if err != nil {
		return nil, us, err
	}
	priv := t.priv
	if priv == "" {
		priv = subtaskDirName(in.op.ID, in.index)
	}
	h := &handle{Operator: in.op.ID, Subtask: in.index, KeyGroups: in.kgs, PrefixBytes: prefixWidth(in.op.MaxParallelism)}
	st := t.dir.Storage
	sharedDir := path.Join(t.dir.JobDir, chkdir.SharedDir)
	if t.incremental && t.dir.JobDir == "" {
		return nil, us, fmt.Errorf("rocksdb: incremental checkpoint into %q, which is not a chk-<N> directory", t.dir.URI())
	}
	if err := st.MkdirAll(ctx, path.Join(t.dir.Path, priv)); err != nil {
		return nil, us, err
	}
	if t.incremental {
		if err := st.MkdirAll(ctx, sharedDir); err != nil {
			return nil, us, err
		}
	}
	for _, ent := range ents {
		name := ent.Name()
		info, err := ent.Info()
		if err != nil {
			return nil, us, err
		}
		us.Files++
		us.Bytes += info.Size()
		if t.incremental && strings.HasSuffix(name, ".sst") {
			if k, ok := in.known[name]; ok && k.Size == info.Size() && t.reuse(path.Join(sharedDir, path.Base(k.Path))) {
				h.Files = append(h.Files, k)
				us.ReusedFiles++
				continue
			}
			remote := path.Join(sharedDir, randomName()+"-"+name)
			n, crc, err := upload(ctx, st, filepath.Join(cp, name), remote)
			if err != nil {
				return nil, us, err
			}
			*t.newShared = append(*t.newShared, remote)
			f := file{Local: name, Path: sharedRef(path.Base(remote)), Size: n, CRC32C: crc, Shared: true}
			in.known[name] = f
			h.Files = append(h.Files, f)
			us.UploadedFiles++
			us.UploadedBytes += n
			continue
		}
		var n int64
		var crc uint32
		if t.link {
			n, crc, err = linkLocal(ctx, filepath.Join(cp, name), path.Join(t.dir.Path, priv, name), in.sums)
		} else {
			n, crc, err = upload(ctx, st, filepath.Join(cp, name), path.Join(t.dir.Path, priv, name))
		}
		if err != nil {
			return nil, us, err
		}
		h.Files = append(h.Files, file{Local: name, Path: priv + "/" + name, Size: n, CRC32C: crc})
		us.UploadedFiles++
		us.UploadedBytes += n
	}
	if t.link {
		// The files' data was synced where RocksDB wrote it; the links
		// need their directory synced.
		if err := rocksdb.SyncPath(path.Join(t.dir.Path, priv)); err != nil {
			return nil, us, err
		}
	}
	f, err := in.ops.write(ctx, t.dir, priv+"/"+opStateName)
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
