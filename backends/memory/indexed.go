package memory

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sort"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/internal/envelope"
	"github.com/stateutil/stateutil/internal/safemsgpack"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// Version 2 of the format (what the writer writes) keeps each key group's
// entries apart, so that one key group is read and checked alone. Its
// body is
//
//	head length  4 bytes, big-endian
//	head         msgpack: the metadata and, per subtask, its operator and
//	             raw state and the index of its key groups
//	head CRC32C  4 bytes, of the file's first bytes up to here
//	key groups   per subtask in head order, per key group in ascending
//	             order: its entries as one msgpack array
//
// and the index gives each key group's offset (from the first key group),
// length and CRC32C. The key groups follow one another with no gap, so
// every byte of the body is under the head's or a key group's checksum,
// and the envelope's CRC32C covers the whole file (verify checks it).
const indexedVersion = 2

// indexedKind frames version 2.
var indexedKind = envelope.Kind{Magic: Kind.Magic, Version: indexedVersion, Name: Kind.Name}

type indexedHead = document[indexedSubtask]

type indexedSubtask struct {
	Groups []group `msgpack:"groups"`
	Parts
}

// group locates one key group's entries.
type group struct {
	_msgpack struct{} `msgpack:",as_array"` //lint:ignore U1000 msgpack reads the tag
	KeyGroup int
	Offset   int64
	Length   int64
	CRC32C   uint32
}

// encodeIndexed is the version 2 file of s, whose operators' subtasks
// hold states (entries in key-group order).
func encodeIndexed(s *snapshot.Snapshot, states [][]subtaskState) ([]byte, error) {
	head := indexedHead{Snapshot: s, State: make([]operatorState[indexedSubtask], len(states))}
	var groups bytes.Buffer
	enc := msgpack.NewEncoder(&groups)
	for i, subs := range states {
		head.State[i].Subtasks = make([]indexedSubtask, len(subs))
		for j, st := range subs {
			h := &head.State[i].Subtasks[j]
			h.Parts = st.Parts
			for es := st.Entries; len(es) > 0; {
				n := 1
				for n < len(es) && es[n].KeyGroup == es[0].KeyGroup {
					n++
				}
				start := groups.Len()
				if err := enc.Encode(es[:n]); err != nil {
					return nil, err
				}
				b := groups.Bytes()[start:]
				h.Groups = append(h.Groups, group{KeyGroup: es[0].KeyGroup, Offset: int64(start), Length: int64(len(b)), CRC32C: crc32.Checksum(b, envelope.Castagnoli)})
				es = es[n:]
			}
		}
	}
	var hb bytes.Buffer
	henc := msgpack.NewEncoder(&hb)
	henc.SetSortMapKeys(true) // the same snapshot always gives the same bytes
	if err := henc.Encode(&head); err != nil {
		return nil, err
	}
	if hb.Len() > math.MaxUint32 {
		return nil, fmt.Errorf("memory writer: metadata of %d bytes", hb.Len())
	}
	bodyLen := 4 + hb.Len() + 4 + groups.Len()
	out := make([]byte, 0, envelope.HeaderSize+bodyLen+envelope.TrailerSize)
	out = append(out, indexedKind.Header(uint64(bodyLen))...)
	out = binary.BigEndian.AppendUint32(out, uint32(hb.Len()))
	out = append(out, hb.Bytes()...)
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(out, envelope.Castagnoli))
	out = append(out, groups.Bytes()...)
	return binary.BigEndian.AppendUint32(out, crc32.Checksum(out, envelope.Castagnoli)), nil
}

// indexed is an open version 2 file.
type indexed struct {
	f     storage.File
	first int64 // where the first key group starts
	subs  [][]indexedSubtask
}

// openIndexed reads and checks the head of a version 2 file whose
// framing ReadHeader has checked.
func openIndexed(f storage.File, bodyLen uint64) (*snapshot.Snapshot, *indexed, error) {
	name := f.Name()
	var n [4]byte
	if _, err := f.ReadAt(n[:], envelope.HeaderSize); err != nil {
		return nil, nil, snapshot.Corrupt(name, envelope.HeaderSize, "truncated head length")
	}
	headLen := uint64(binary.BigEndian.Uint32(n[:]))
	if 8+headLen > bodyLen {
		return nil, nil, snapshot.Corrupt(name, envelope.HeaderSize, "head of %d bytes exceeds the %d-byte body", headLen, bodyLen)
	}
	buf := make([]byte, envelope.HeaderSize+4+headLen+4)
	if _, err := f.ReadAt(buf, 0); err != nil {
		return nil, nil, fmt.Errorf("%q: %w", name, err)
	}
	end := len(buf) - 4
	if got, want := crc32.Checksum(buf[:end], envelope.Castagnoli), binary.BigEndian.Uint32(buf[end:]); got != want {
		return nil, nil, snapshot.Corrupt(name, int64(end), "head checksum mismatch: stored crc32c %08x, computed %08x", want, got)
	}
	at := int64(envelope.HeaderSize + 4)
	var h indexedHead
	if err := decode(buf[at:end], name, at, &h); err != nil {
		return nil, nil, err
	}
	if err := snapshot.Validate(h.Snapshot, name); err != nil {
		return nil, nil, err
	}
	x := &indexed{f: f, first: int64(len(buf)), subs: make([][]indexedSubtask, len(h.State))}
	if err := x.validate(h, int64(bodyLen)-int64(len(buf)-envelope.HeaderSize)); err != nil {
		return nil, nil, snapshot.Corrupt(name, at, "%v", err)
	}
	return h.Snapshot, x, nil
}

// decode decodes msgpack b, found at offset at of file name, into v.
func decode(b []byte, name string, at int64, v any) error {
	if off, err := safemsgpack.Check(b, snapshot.MaxStringBytes); err != nil {
		return snapshot.Corrupt(name, at+off, "%s: %v", Kind.Name, err)
	}
	if err := msgpack.Unmarshal(b, v); err != nil {
		return snapshot.Corrupt(name, at, "undecodable %s: %v", Kind.Name, err)
	}
	return nil
}

// validate checks the index against the metadata: every subtask's key
// groups ascend within its range and follow one another, filling the
// groups bytes after the head exactly.
func (x *indexed) validate(h indexedHead, groups int64) error {
	ops := h.Snapshot.Operators
	if len(h.State) != len(ops) {
		return fmt.Errorf("%d operators but state for %d", len(ops), len(h.State))
	}
	var next int64
	for i, op := range ops {
		subs := h.State[i].Subtasks
		if len(subs) != len(op.Subtasks) {
			return fmt.Errorf("operator %q has %d subtasks but state for %d", op.Label(), len(op.Subtasks), len(subs))
		}
		for j, sub := range subs {
			prev := -1
			for _, g := range sub.Groups {
				if !op.Subtasks[j].KeyGroups.Contains(g.KeyGroup) || g.KeyGroup <= prev {
					return fmt.Errorf("operator %q subtask %d: key group %d outside %v or out of order", op.Label(), j, g.KeyGroup, op.Subtasks[j].KeyGroups)
				}
				if g.Offset != next || g.Length <= 0 || g.Length > groups-next {
					return fmt.Errorf("operator %q subtask %d: key group %d at %d (%d bytes), expected at %d within %d bytes", op.Label(), j, g.KeyGroup, g.Offset, g.Length, next, groups)
				}
				prev, next = g.KeyGroup, next+g.Length
			}
		}
		x.subs[i] = subs
	}
	if next != groups {
		return fmt.Errorf("key groups end at %d, the body at %d", next, groups)
	}
	return nil
}

// entries streams the key groups kgs of a subtask, each checked against
// its checksum before it is decoded.
func (x *indexed) entries(op *snapshot.Operator, sub *indexedSubtask, kgs keygroup.Range) snapshot.Entries {
	return func(yield func(snapshot.Entry, error) bool) {
		gs := sub.Groups
		var es []entry
		for i := sort.Search(len(gs), func(i int) bool { return gs[i].KeyGroup >= kgs.Start }); i < len(gs) && gs[i].KeyGroup <= kgs.End; i++ {
			g := &gs[i]
			if err := x.read(g, &es, len(op.KeyedStates)); err != nil {
				yield(snapshot.Entry{}, err)
				return
			}
			for k := range es {
				if !yield(es[k].of(op), nil) {
					return
				}
			}
		}
	}
}

// read reads key group g into *es. Each key group has a buffer of its
// own, which its entries' bytes are slices of, so that they stay valid
// after the next key group is read.
func (x *indexed) read(g *group, es *[]entry, states int) error {
	name, at := x.f.Name(), x.first+g.Offset
	b := make([]byte, g.Length)
	if _, err := x.f.ReadAt(b, at); err != nil && err != io.EOF {
		return fmt.Errorf("%q: %w", name, err)
	}
	if got := crc32.Checksum(b, envelope.Castagnoli); got != g.CRC32C {
		return snapshot.Corrupt(name, at, "key group %d: checksum mismatch: the index records crc32c %08x, computed %08x", g.KeyGroup, g.CRC32C, got)
	}
	*es = (*es)[:0]
	if off, err := decodeEntries(b, es); err != nil {
		return snapshot.Corrupt(name, at+off, "key group %d: %v", g.KeyGroup, err)
	}
	for _, e := range *es {
		if e.KeyGroup != g.KeyGroup || e.State < 0 || e.State >= states {
			return snapshot.Corrupt(name, at, "key group %d holds an entry of key group %d, state #%d of %d", g.KeyGroup, e.KeyGroup, e.State, states)
		}
	}
	return nil
}
