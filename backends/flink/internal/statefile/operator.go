package statefile

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/backends/flink/metadata"
)

// OperatorStateFile is a decoded operator state stream: the
// OperatorBackendSerializationProxy header and the elements at the offsets
// `_metadata` lists.
type OperatorStateFile struct {
	File        string `json:"file"`
	Base        int64  `json:"base"` // offset of the stream in File
	Version     int    `json:"version"`
	Compression bool   `json:"compression"`
	// States and BroadcastStates are the header's meta infos.
	States          []*StateMeta `json:"states"`
	BroadcastStates []*StateMeta `json:"broadcastStates"`
	HeaderSize      int64        `json:"headerSize"`
	// Partitions holds, per state name of the handle, its elements.
	Partitions []*OperatorPartition `json:"partitions"`
}

// OperatorPartition is the data of one named operator state in one stream.
type OperatorPartition struct {
	Name string                    `json:"name"`
	Mode metadata.DistributionMode `json:"mode"`
	Meta *StateMeta                `json:"meta,omitempty"`
	// Elements are the raw bytes of each list element (for broadcast
	// state: one element holding the whole map). Views into the stream.
	Elements [][]byte `json:"-"`
	// Offsets are the element offsets within the stream.
	Offsets []int64 `json:"offsets"`
}

// ReadOperatorState reads the stream of an operator state handle.
func (res *Resolver) ReadOperatorState(ctx context.Context, h *metadata.OperatorStateHandle) (*OperatorStateFile, error) {
	if h == nil || h.Delegate == nil {
		return nil, fmt.Errorf("operator state handle without a stream")
	}
	data, file, base, err := res.Bytes(ctx, h.Delegate)
	if err != nil {
		return nil, err
	}
	return ParseOperatorState(res.Serializers, data, file, base, h, res.Kryo5)
}

// ParseOperatorState decodes an operator state stream. file and base name the
// stream's place in errors; kryo5 says its Kryo values are Kryo 5's.
func ParseOperatorState(t *typeser.Table, data []byte, file string, base int64, h *metadata.OperatorStateHandle, kryo5 bool) (*OperatorStateFile, error) {
	r := wire.NewReader(data, file, base)
	// The header ends where the first element starts.
	var all []int64
	for _, s := range h.States {
		all = append(all, s.Offsets...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	end := len(data)
	if len(all) > 0 {
		// Every element lies between the header and the end of the data,
		// so that each runs from its offset to the next one.
		if lo := all[0]; lo < 0 || lo > int64(len(data)) {
			return nil, &wire.CorruptError{File: file, Offset: base, Reason: fmt.Sprintf("element offset %d outside a stream of %d bytes", lo, len(data))}
		}
		if hi := all[len(all)-1]; hi > int64(len(data)) {
			return nil, &wire.CorruptError{File: file, Offset: base + hi, Reason: fmt.Sprintf("element offset %d outside a stream of %d bytes", hi, len(data))}
		}
		end = int(all[0])
	}
	of := &OperatorStateFile{File: file, Base: base}
	of.Version = int(r.I32("operator backend header version"))
	if r.Err != nil {
		return nil, r.Err
	}
	mr := &MetaReader{Sr: &typeser.SnapReader{R: r, Table: t}, End: end}
	switch {
	case of.Version == 1:
		mr.Layout = "op-v1"
	case of.Version == 2 || of.Version == 3:
		mr.Layout = "op-v2"
	case of.Version == 4:
		mr.Layout = "v5"
	case of.Version == 5 || of.Version == 6:
		mr.Layout = "current"
	default:
		return nil, wire.UnknownVersion(file, base, "operator backend header", of.Version)
	}
	if of.Version >= 6 {
		of.Compression = r.Bool("compression flag")
	}
	if of.Compression {
		// The elements are a Snappy framed stream: its identifier follows
		// the header, and each element starts a chunk of its own (Flink
		// flushes the stream to take each offset).
		if end < len(snappyStreamID) || !bytes.Equal(data[end-len(snappyStreamID):end], snappyStreamID) {
			return nil, &wire.CorruptError{File: file, Offset: base + int64(end), Reason: "compressed operator state: no Snappy stream identifier before the first element"}
		}
		end -= len(snappyStreamID)
		mr.End = end
	}
	var after typeser.ContFunc
	if of.Version >= 3 {
		after = func(q int) bool {
			if q+2 > len(data) {
				return false
			}
			n := int(int16(uint16(data[q])<<8 | uint16(data[q+1])))
			if n == 0 {
				return q+2 == end
			}
			return n > 0 && n*10 <= end-q && plausibleMetaAt(data, q+2, BroadcastMapState)
		}
	} else {
		// Flink 1.3 and 1.4 wrote the number of states after the header.
		after = func(q int) bool { return q+4 == end }
	}
	of.States = mr.metas("operator state", after, OperatorListState)
	if of.Version >= 3 {
		of.BroadcastStates = mr.metas("broadcast state", func(q int) bool { return q == end }, BroadcastMapState)
	} else {
		at := r.Pos()
		if n := r.I32("operator state count"); r.Err == nil && int(n) != len(of.States) {
			r.FailAt(at, "operator state count %d after a header of %d states", n, len(of.States))
		}
	}
	if r.Err != nil {
		return nil, r.Err
	}
	if r.Off != end {
		return nil, &wire.CorruptError{File: file, Offset: r.Pos(), Reason: fmt.Sprintf("operator state header ends at %d but the first element is at %d", r.Off, end)}
	}
	of.HeaderSize = int64(r.Off)
	MarkStatesKryo5(kryo5, nil, append(append([]*StateMeta{}, of.States...), of.BroadcastStates...)...)
	metas := map[string]*StateMeta{}
	for _, m := range append(append([]*StateMeta{}, of.States...), of.BroadcastStates...) {
		metas[m.Name] = m
	}
	next := func(off int64) int64 {
		i := sort.Search(len(all), func(i int) bool { return all[i] > off })
		if i < len(all) {
			return all[i]
		}
		return int64(len(data))
	}
	for _, s := range h.States {
		p := &OperatorPartition{Name: s.Name, Mode: s.Mode, Meta: metas[s.Name], Offsets: s.Offsets}
		for _, off := range s.Offsets {
			el := data[off:next(off)]
			if of.Compression {
				b, err := Unsnappy(append(append([]byte(nil), snappyStreamID...), el...), file, base+off)
				if err != nil {
					return nil, err
				}
				el = b
			}
			p.Elements = append(p.Elements, el)
		}
		of.Partitions = append(of.Partitions, p)
	}
	if of.Compression && len(all) > 0 {
		resplitCompressed(of, data[all[0]:], file, base+all[0])
	}
	return of, nil
}

// resplitCompressed splits compressed operator state by walking its
// elements in the decompressed stream, where their serializers allow.
// Flink 1.18.1 took element offsets without flushing the compressed stream
// (FLINK-34063): an offset then points at the chunk that holds its
// element, not at the element, and several elements share a chunk. Walked
// in offset order, the stream still gives every element exactly.
func resplitCompressed(of *OperatorStateFile, stream []byte, file string, base int64) {
	whole, err := Unsnappy(append(append([]byte(nil), snappyStreamID...), stream...), file, base)
	if err != nil {
		return // the elements decompressed one by one stand
	}
	type ref struct {
		p, i int
		off  int64
	}
	var refs []ref
	for pi, p := range of.Partitions {
		for i, off := range p.Offsets {
			refs = append(refs, ref{pi, i, off})
		}
	}
	sort.SliceStable(refs, func(a, b int) bool { return refs[a].off < refs[b].off })
	r := wire.NewReader(whole, file+" (decompressed operator state)", 0)
	split := make([][][]byte, len(of.Partitions))
	for pi, p := range of.Partitions {
		split[pi] = make([][]byte, len(p.Offsets))
	}
	for _, x := range refs {
		p := of.Partitions[x.p]
		start := r.Off
		if p.Mode == metadata.Broadcast {
			key, value, err := BroadcastKV(p.Meta)
			if err != nil {
				return
			}
			n := r.Count32(1, "broadcast state size")
			for j := 0; j < n && r.Err == nil; j++ {
				typeser.SkipValue(r, key, 0)
				typeser.SkipValue(r, value, 0)
			}
		} else if p.Meta == nil || !typeser.Sized(p.Meta.Value()) || !typeser.SkipValue(r, p.Meta.Value(), 0) {
			return
		}
		if r.Err != nil {
			return
		}
		split[x.p][x.i] = whole[start:r.Off:r.Off]
	}
	if r.Remaining() != 0 {
		return
	}
	for pi, p := range of.Partitions {
		p.Elements = split[pi]
	}
}

// BroadcastKV returns the key and value serializers of a broadcast state,
// or an error saying why its entries cannot be told apart.
func BroadcastKV(m *StateMeta) (key, value *typeser.SerializerSnapshot, err error) {
	if m == nil {
		return nil, nil, fmt.Errorf("broadcast state without meta info in the header: %w", wire.ErrUnsupportedVersion)
	}
	key, value = m.Serializers["KEY_SERIALIZER"], m.Value()
	for _, s := range []*typeser.SerializerSnapshot{key, value} {
		if !typeser.Sized(s) {
			return nil, nil, fmt.Errorf("broadcast state %q: the serializer %s writes no length and stateutil cannot walk its values, so its entries cannot be told apart: %w", m.Name, s.Name(), wire.ErrUnsupportedVersion)
		}
	}
	return key, value, nil
}

// BroadcastEntries splits the stored map of a broadcast state (an int
// count, then each key and value) into one element per entry.
func BroadcastEntries(p *OperatorPartition, file string) ([][]byte, error) {
	key, value, err := BroadcastKV(p.Meta)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for i, el := range p.Elements {
		r := wire.NewReader(el, file, p.Offsets[i])
		n := r.Count32(1, "broadcast state size")
		for j := 0; j < n && r.Err == nil; j++ {
			start := r.Off
			typeser.SkipValue(r, key, 0)
			typeser.SkipValue(r, value, 0)
			if r.Err == nil {
				out = append(out, el[start:r.Off:r.Off])
			}
		}
		if r.Err == nil && r.Remaining() > 0 {
			r.Fail("%d bytes after the %d entries of broadcast state %q", r.Remaining(), n, p.Name)
		}
		if r.Err != nil {
			return nil, r.Err
		}
	}
	return out, nil
}

// BroadcastSize reads the entry count of each stored broadcast map.
func BroadcastSize(p *OperatorPartition, file string) (int64, error) {
	var n int64
	for i, el := range p.Elements {
		r := wire.NewReader(el, file, p.Offsets[i])
		n += int64(r.Count32(1, "broadcast state size"))
		if r.Err != nil {
			return 0, r.Err
		}
	}
	return n, nil
}
