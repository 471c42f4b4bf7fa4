package rocksdbformat

import (
	"context"
	"hash/crc32"
	"path"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/internal/chkdir"
	"github.com/stateutil/stateutil/internal/envelope"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// opStateName is the private file holding a subtask's operator state.
//
// Operator state is not in RocksDB (Flink keeps it out too). Until the
// filesystem backend's operator-state encoding can be shared, this backend
// writes its own small framed msgpack file.
const opStateName = "operator-state"

var opStateKind = envelope.Kind{Magic: [8]byte{'S', 'T', 'U', 'R', 'K', 'O', 'P', 'S'}, Version: 1, Name: "rocksdb operator state"}

// OpState is a subtask's operator list states and raw state.
type OpState struct {
	States []OpList          `msgpack:"states"`
	Raw    snapshot.RawState `msgpack:"raw"`
}

// OpList is one operator list state's elements.
type OpList struct {
	Name   string   `msgpack:"name"`
	Values [][]byte `msgpack:"values"`
}

func (o *OpState) empty() bool {
	return len(o.States) == 0 && len(o.Raw.Keyed) == 0 && len(o.Raw.Operator) == 0
}

func (o *OpState) list(name string) *OpList {
	for i := range o.States {
		if o.States[i].Name == name {
			return &o.States[i]
		}
	}
	o.States = append(o.States, OpList{Name: name})
	return &o.States[len(o.States)-1]
}

// stats are the operator-state figures of the model's Subtask.
func (o *OpState) stats() (snapshot.Stats, map[string]int64) {
	s := snapshot.Stats{Known: true}
	var per map[string]int64
	for _, l := range o.States {
		if per == nil {
			per = map[string]int64{}
		}
		per[l.Name] += int64(len(l.Values))
		s.Entries += int64(len(l.Values))
		for _, v := range l.Values {
			s.Bytes += int64(len(v))
		}
	}
	return s, per
}

// write stores the operator state at rel in d, returning its file entry
// (nil when there is nothing to store).
func (o *OpState) write(ctx context.Context, d chkdir.Dir, rel string) (*File, error) {
	if o.empty() {
		return nil, nil
	}
	body, err := msgpack.Marshal(o)
	if err != nil {
		return nil, err
	}
	data := opStateKind.Encode(body)
	if err := storage.WriteFile(ctx, d.Storage, path.Join(d.Path, rel), data); err != nil {
		return nil, err
	}
	return &File{Path: rel, Size: int64(len(data)), CRC32C: crc32.Checksum(data, envelope.Castagnoli)}, nil
}

// ReadOpState loads a subtask's operator state; a nil f is empty state.
func ReadOpState(ctx context.Context, d chkdir.Dir, f *File) (*OpState, error) {
	var o OpState
	if f == nil {
		return &o, nil
	}
	p, err := d.RefPath(f.Path)
	if err != nil {
		return nil, err
	}
	st := d.Storage
	body, err := opStateKind.Read(ctx, st, p, f.Size)
	if err != nil {
		if isNotFound(err) {
			return nil, wrapNotFound(st.URI(p), err)
		}
		return nil, err
	}
	if err := opStateKind.DecodeMsgpack(body, st.URI(p), &o); err != nil {
		return nil, err
	}
	return &o, nil
}
