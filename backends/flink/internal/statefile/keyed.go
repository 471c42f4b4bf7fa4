package statefile

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sort"

	"github.com/golang/snappy"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/backends/flink/metadata"
)

// KeyedHeader is a decoded KeyedBackendSerializationProxy: the header of keyed
// state streams (full snapshots, savepoints, and the meta-data file of native
// RocksDB snapshots).
type KeyedHeader struct {
	Version int `json:"version"`
	// Compression says each key group is Snappy-compressed.
	Compression   bool                        `json:"compression"`
	KeySerializer *typeser.SerializerSnapshot `json:"keySerializer"`
	States        []*StateMeta                `json:"states"`
	Size          int64                       `json:"size"`
}

// ParseKeyedHeader decodes a keyed backend header at the start of data. end is
// where the header must end (the first key-group offset), or -1 when the
// header may be followed by anything.
func ParseKeyedHeader(t *typeser.Table, data []byte, file string, base int64, end int) (*KeyedHeader, error) {
	r := wire.NewReader(data, file, base)
	h := &KeyedHeader{Version: int(r.I32("keyed backend header version"))}
	if r.Err != nil {
		return nil, r.Err
	}
	mr := &MetaReader{Sr: &typeser.SnapReader{R: r, Table: t}, End: end}
	switch {
	case h.Version == 3 || h.Version == 4:
		mr.Layout = "keyed-v3"
	case h.Version == 5:
		mr.Layout = "v5"
	case h.Version >= 6 && h.Version <= 8:
		mr.Layout = "current"
	default:
		return nil, wire.UnknownVersion(file, base, "keyed backend header", h.Version)
	}
	if h.Version >= 4 {
		h.Compression = r.Bool("compression flag")
	}
	if h.Version >= 6 {
		h.KeySerializer = mr.Sr.SnapshotProxy(func(q int) bool {
			if q+2 > len(data) {
				return false
			}
			n := int(int16(binary.BigEndian.Uint16(data[q:])))
			if n == 0 {
				return end < 0 || q+2 == end
			}
			return n > 0 && n*10 <= len(data)-q && plausibleMetaAt(data, q+2, KeyValueState, PriorityQueueState)
		})
	} else if ks := mr.Sr.LegacySerializers("key serializer"); len(ks) > 0 {
		h.KeySerializer = ks[0]
	}
	h.States = mr.metas("keyed state", func(q int) bool { return end < 0 || q == end }, KeyValueState, PriorityQueueState)
	if r.Err != nil {
		return nil, r.Err
	}
	if end >= 0 && r.Off != end {
		return nil, &wire.CorruptError{File: file, Offset: r.Pos(), Reason: fmt.Sprintf("keyed header ends at %d but the first key group is at %d", r.Off, end)}
	}
	h.Size = int64(r.Off)
	return h, nil
}

// KeyGroupFormat names the layout of key-group data.
type KeyGroupFormat string

// Key-group layouts.
const (
	// CanonicalFormat: per state a short state id, then length-prefixed
	// key/value pairs; Flink's RocksDB full snapshots and (since 1.13)
	// canonical savepoints of every backend.
	CanonicalFormat KeyGroupFormat = "canonical"
	// HeapFormat: an int key-group index, then per state a short state id
	// and the state table written by the value serializers.
	HeapFormat KeyGroupFormat = "heap"
	// RawFormat: raw keyed state, bytes as the operator wrote them.
	RawFormat KeyGroupFormat = "raw"
)

// KeyedEntry is one key/value pair of canonical key-group data. Key holds the
// key-group prefix, the serialized key and namespace (and map user key).
type KeyedEntry struct {
	State string `json:"state"`
	Key   []byte `json:"-"`
	Value []byte `json:"-"`
}

// KeyGroupData is the data of one key group.
type KeyGroupData struct {
	KeyGroup int32 `json:"keyGroup"`
	Offset   int64 `json:"offset"`
	// Length is the stored (possibly compressed) length.
	Length int64 `json:"length"`
	// Entries holds the pairs of canonical data.
	Entries []KeyedEntry `json:"entries,omitempty"`
	// Raw holds the (decompressed) heap data after the key-group index.
	Raw []byte `json:"-"`
}

// KeyedStateFile is a decoded keyed state stream.
type KeyedStateFile struct {
	File      string          `json:"file"`
	Header    *KeyedHeader    `json:"header"`
	Format    KeyGroupFormat  `json:"format"`
	KeyGroups []*KeyGroupData `json:"keyGroups"`
}

// maxDecompressed caps the decompressed size of one key group.
const maxDecompressed = 1 << 30

// ReadKeyGroups reads the stream of a managed key-groups handle (types 3, 7
// and 12): a keyed backend header, then the key groups.
func (res *Resolver) ReadKeyGroups(ctx context.Context, h *metadata.KeyedHandle) (*KeyedStateFile, error) {
	if h == nil || h.KeyGroups == nil || h.KeyGroups.Delegate == nil {
		return nil, fmt.Errorf("not a key-groups handle with a stream")
	}
	data, file, base, err := res.Bytes(ctx, h.KeyGroups.Delegate)
	if err != nil {
		return nil, err
	}
	f, err := ParseKeyGroups(res.Serializers, data, file, base, h.KeyGroups)
	if err == nil {
		MarkStatesKryo5(res.Kryo5, f.Header.KeySerializer, f.Header.States...)
	}
	return f, err
}

// ReadRawKeyGroups reads the stream of a raw keyed state handle. Raw keyed
// state is written by operators themselves (timers before Flink 1.10, user
// code): there is no header, and each key group's bytes are returned as Raw.
func (res *Resolver) ReadRawKeyGroups(ctx context.Context, h *metadata.KeyedHandle) (*KeyedStateFile, error) {
	if h == nil || h.KeyGroups == nil || h.KeyGroups.Delegate == nil {
		return nil, fmt.Errorf("not a key-groups handle with a stream")
	}
	data, file, base, err := res.Bytes(ctx, h.KeyGroups.Delegate)
	if err != nil {
		return nil, err
	}
	kg := h.KeyGroups
	out := &KeyedStateFile{File: file, Format: RawFormat}
	offs := append([]int64(nil), kg.Offsets...)
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	for i, o := range kg.Offsets {
		if o < 0 || o > int64(len(data)) {
			return nil, &wire.CorruptError{File: file, Offset: base, Reason: fmt.Sprintf("key-group offset %d outside a stream of %d bytes", o, len(data))}
		}
		e := NextOffset(offs, o, len(data))
		out.KeyGroups = append(out.KeyGroups, &KeyGroupData{KeyGroup: kg.Range.Start + int32(i), Offset: o, Length: e - o, Raw: data[o:e]})
	}
	return out, nil
}

// ParseKeyGroups decodes a keyed state stream given its handle's offsets.
func ParseKeyGroups(t *typeser.Table, data []byte, file string, base int64, kg *metadata.KeyGroupsHandle) (*KeyedStateFile, error) {
	var offs []int64
	for _, o := range kg.Offsets {
		if o < 0 || o > int64(len(data)) {
			return nil, &wire.CorruptError{File: file, Offset: base, Reason: fmt.Sprintf("key-group offset %d outside a stream of %d bytes", o, len(data))}
		}
		if o > 0 {
			offs = append(offs, o)
		}
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	end := len(data)
	if len(offs) > 0 {
		end = int(offs[0])
	}
	hdr, err := ParseKeyedHeader(t, data, file, base, end)
	if err != nil {
		return nil, err
	}
	out := &KeyedStateFile{File: file, Header: hdr, Format: CanonicalFormat}
	// Heap snapshots start every key group with its index as an int.
	heap, nonEmpty := true, 0
	for i, o := range kg.Offsets {
		if o == 0 || int(o)+4 > len(data) || NextOffset(offs, o, len(data)) == o {
			continue
		}
		nonEmpty++
		if int32(binary.BigEndian.Uint32(data[o:])) != kg.Range.Start+int32(i) {
			heap = false
		}
	}
	if heap && nonEmpty > 0 && !allCanonical(data, file, base, kg, offs, hdr) {
		// Canonical data can start with bytes that read as the key-group
		// index too (state id 0 and a short key in key group 0); only data
		// that does not parse as canonical is heap data.
		out.Format = HeapFormat
	}
	for i, o := range kg.Offsets {
		g := &KeyGroupData{KeyGroup: kg.Range.Start + int32(i), Offset: o}
		e := NextOffset(offs, o, len(data))
		if o == 0 || e == o {
			out.KeyGroups = append(out.KeyGroups, g)
			continue
		}
		g.Length = e - o
		body := data[o:e]
		bodyBase := base + o
		if out.Format == HeapFormat {
			body, bodyBase = body[4:], bodyBase+4
		}
		if hdr.Compression {
			body, err = Unsnappy(body, file, bodyBase)
			if err != nil {
				return nil, err
			}
		}
		if out.Format == HeapFormat {
			g.Raw = body
		} else if g.Entries, err = canonicalEntries(body, file, bodyBase, hdr, hdr.Compression); err != nil {
			return nil, err
		}
		out.KeyGroups = append(out.KeyGroups, g)
	}
	return out, nil
}

// allCanonical reports whether every non-empty key group parses as
// canonical key-group data.
func allCanonical(data []byte, file string, base int64, kg *metadata.KeyGroupsHandle, offs []int64, hdr *KeyedHeader) bool {
	for _, o := range kg.Offsets {
		e := NextOffset(offs, o, len(data))
		if o == 0 || e == o {
			continue
		}
		body := data[o:e]
		if hdr.Compression {
			var err error
			if body, err = Unsnappy(body, file, base+o); err != nil {
				return false
			}
		}
		if _, err := canonicalEntries(body, file, base+o, hdr, hdr.Compression); err != nil {
			return false
		}
	}
	return true
}

func NextOffset(sorted []int64, o int64, n int) int64 {
	i := sort.Search(len(sorted), func(i int) bool { return sorted[i] > o })
	if i < len(sorted) {
		return sorted[i]
	}
	return int64(n)
}

// Unsnappy decodes the Snappy framing format (stream identifier chunk, then
// compressed or uncompressed chunks with masked CRC-32C), which is what
// xerial snappy-java's framed streams write.
func Unsnappy(b []byte, file string, base int64) ([]byte, error) {
	var out bytes.Buffer
	n, err := io.Copy(&out, io.LimitReader(snappy.NewReader(bytes.NewReader(b)), maxDecompressed+1))
	if err != nil {
		return nil, &wire.CorruptError{File: file, Offset: base, Reason: "snappy framed stream: " + err.Error()}
	}
	if n > maxDecompressed {
		return nil, &wire.CorruptError{File: file, Offset: base, Reason: "snappy key group decompresses to more than 1 GiB"}
	}
	return out.Bytes(), nil
}

// snappyStreamID is the chunk that starts a Snappy framed stream.
var snappyStreamID = []byte{0xff, 0x06, 0x00, 0x00, 's', 'N', 'a', 'P', 'p', 'Y'}

const EndOfKeyGroupMark = 0xFFFF
