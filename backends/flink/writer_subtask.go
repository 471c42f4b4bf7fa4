package flink

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/stateutil/stateutil/backends/flink/internal/carried"
	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/internal/envelope"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// stateFile is one state file being written, with its position and the
// CRC32C of what was written so far (for the checksum manifest).
type stateFile struct {
	p    storage.Pending
	bw   *bufio.Writer
	name string
	pos  int64
	crc  uint32
}

func newStateFile(p storage.Pending, name string) *stateFile {
	return &stateFile{p: p, bw: bufio.NewWriterSize(p, 64<<10), name: name}
}

func (f *stateFile) Write(b []byte) (int, error) {
	n, err := f.bw.Write(b)
	f.pos += int64(n)
	f.crc = crc32.Update(f.crc, envelope.Castagnoli, b[:n])
	return n, err
}

func (f *stateFile) write(b []byte) error {
	_, err := f.Write(b)
	return err
}

func (f *stateFile) commit() error {
	if err := f.bw.Flush(); err != nil {
		f.p.Abort()
		return err
	}
	return f.p.Commit()
}

// ref is the finished file as a subtask lists it.
func (f *stateFile) ref() snapshot.FileRef {
	return snapshot.FileRef{Path: f.name, Size: f.pos, CRC32C: f.crc}
}

// handle is the relative-file handle of the finished file.
func (f *stateFile) handle() *metadata.StreamHandle {
	return &metadata.StreamHandle{Type: metadata.HandleRelativeFile, Path: f.name, Size: f.pos}
}

// keyedLayout is one keyed state as the subtask writes it.
type keyedLayout struct {
	id int
	l  *statefile.Layout
}

// record is one key/value pair of the key group being written: offsets
// into the subtask's arena.
type record struct {
	state            int
	key, keyEnd, val int
	valEnd           int
	seq              int
}

// subtaskWriter writes one subtask: keyed entries a key group at a time
// (sorted by state and key, list elements merged, as Flink's full
// snapshot writes them), operator-state elements as they come.
type subtaskWriter struct {
	ctx    context.Context
	w      *writer
	op     *snapshot.Operator
	co     *carried.Operator
	index  int
	kgs    keygroup.Range
	seq    int
	prefix int
	err    error
	closed bool

	states map[string]keyedLayout
	// cached writes the keyed state file through the page cache, not
	// around it (storage.CreateOnce), which holds buffers per file.
	cached  bool
	keyed   *stateFile
	offsets []int64
	cur     int
	arena   []byte
	recs    []record

	oper      *stateFile
	operInfos []metadata.OperatorStateInfo
	operIdx   map[string]int
	// bcast holds each broadcast state's entries (elements, as read),
	// written as one map (entry count, then the entries) by finish.
	bcast map[string]*broadcastMap

	raw *snapshot.RawState
	// inputs and outputs are the channel state handles carried from the
	// source (writer_inflight.go); channels the file their buffers were
	// copied into, if any.
	inputs, outputs []*metadata.ChannelHandle
	channels        *stateFile

	keyedN snapshot.Stats
	operN  snapshot.Stats
	elems  snapshot.ElementCounts
}

func newSubtaskWriter(ctx context.Context, w *writer, op *snapshot.Operator, co *carried.Operator, seq, index int, kgs keygroup.Range) (*subtaskWriter, error) {
	sw := &subtaskWriter{ctx: ctx, w: w, op: op, co: co, index: index, kgs: kgs, seq: seq, prefix: 1, cur: -1,
		states: map[string]keyedLayout{}, keyedN: snapshot.Stats{Known: true}, operN: snapshot.Stats{Known: true}}
	if op.MaxParallelism > 128 {
		sw.prefix = 2
	}
	if len(op.KeyedStates) > 0 {
		keySer, err := carried.ParseSerializerSnapshot(serializers, co.KeySerializer)
		if err != nil {
			return nil, fmt.Errorf("operator %q key serializer: %w", op.Label(), err)
		}
		for i, ks := range op.KeyedStates {
			m, ok := carried.Renamed(co.Keyed, ks.CarriedName(), ks.Name)
			if !ok {
				return nil, fmt.Errorf("operator %q keyed state %q: %w (no serializer snapshots recorded)", op.Label(), ks.Name, ErrNotFromFlink)
			}
			sm, err := carried.StateMeta(serializers, m)
			if err != nil {
				return nil, fmt.Errorf("operator %q keyed state %q: cannot write it back: %w", op.Label(), ks.Name, err)
			}
			sw.states[ks.Name] = keyedLayout{id: i, l: statefile.NewLayout(sm, keySer)}
		}
	}
	return sw, nil
}

func (sw *subtaskWriter) fail(err error) error {
	if sw.err == nil {
		sw.err = err
	}
	return err
}

func (sw *subtaskWriter) name(kind string) string {
	if sw.w.token != "" {
		return fmt.Sprintf("op%d-%d.%s-%s", sw.seq, sw.index, sw.w.token, kind)
	}
	return fmt.Sprintf("op%d-%d-%s", sw.seq, sw.index, kind)
}

// keyedHeaders lists the keyed states' meta infos in state-id order.
func (sw *subtaskWriter) keyedMetas() []carried.Meta {
	out := make([]carried.Meta, 0, len(sw.op.KeyedStates))
	for _, ks := range sw.op.KeyedStates {
		m, _ := carried.Renamed(sw.co.Keyed, ks.CarriedName(), ks.Name)
		out = append(out, m)
	}
	return out
}

func (sw *subtaskWriter) startKeyed() error {
	hdr, err := carried.EncodeKeyedHeader(sw.co.KeySerializer, sw.keyedMetas())
	if err != nil {
		return fmt.Errorf("operator %q: %w", sw.op.Label(), err)
	}
	f, err := sw.w.file(sw.ctx, sw.name("keyed"), !sw.cached)
	if err != nil {
		return err
	}
	sw.keyed = f
	sw.offsets = make([]int64, max(sw.kgs.Len(), 0))
	return f.write(hdr)
}

// Entry adds one keyed entry to the key group being gathered.
func (sw *subtaskWriter) Entry(e *snapshot.Entry) error {
	if sw.err != nil {
		return sw.err
	}
	if !sw.kgs.Contains(e.KeyGroup) {
		return sw.fail(fmt.Errorf("operator %q subtask %d: entry in key group %d outside the subtask's range %v", sw.op.Label(), sw.index, e.KeyGroup, sw.kgs))
	}
	if e.KeyGroup < sw.cur {
		return sw.fail(fmt.Errorf("operator %q subtask %d: entry in key group %d after key group %d", sw.op.Label(), sw.index, e.KeyGroup, sw.cur))
	}
	st, ok := sw.states[e.State]
	if !ok {
		return sw.fail(fmt.Errorf("operator %q: entry of keyed state %q, which it does not declare", sw.op.Label(), e.State))
	}
	if sw.keyed == nil {
		if err := sw.startKeyed(); err != nil {
			return sw.fail(err)
		}
	}
	if e.KeyGroup != sw.cur {
		if err := sw.flush(); err != nil {
			return sw.fail(err)
		}
		sw.cur = e.KeyGroup
	}
	l := st.l
	r := record{state: st.id, key: len(sw.arena), seq: len(sw.recs)}
	a := sw.arena
	if l.Kind == statefile.KindTimer {
		if len(e.Value) != 8 {
			return sw.fail(fmt.Errorf("operator %q timer state %q: timestamp of %d bytes", sw.op.Label(), e.State, len(e.Value)))
		}
		a = append(a, e.Value[0]^0x80)
		a = append(a, e.Value[1:]...)
		a = append(a, e.Key...)
		a = append(a, e.Namespace...)
	} else {
		a = append(a, e.Key...)
		if l.Ambiguous {
			a = appendLengthSuffix(a, len(e.Key))
		}
		a = append(a, e.Namespace...)
		if l.Ambiguous {
			a = appendLengthSuffix(a, len(e.Namespace))
		}
		if l.Kind == snapshot.Map {
			a = append(a, e.UserKey...)
		}
	}
	r.keyEnd, r.val = len(a), len(a)
	switch {
	case l.Kind == statefile.KindTimer:
	case l.Kind == snapshot.Map && e.Value == nil:
		a = append(a, 1)
	case l.Kind == snapshot.Map:
		a = append(a, 0)
		a = l.AppendTTL(a, e.Value, e.ExpiresAt)
	default:
		a = l.AppendTTL(a, e.Value, e.ExpiresAt)
	}
	r.valEnd = len(a)
	sw.arena = a
	sw.recs = append(sw.recs, r)
	sw.keyedN.Entries++
	sw.keyedN.Bytes += e.Size()
	return nil
}

// appendLengthSuffix appends the length Flink writes after a key or
// namespace when both are variable-length: low byte first, as many bytes
// as it needs.
func appendLengthSuffix(a []byte, n int) []byte {
	for {
		a = append(a, byte(n))
		n >>= 8
		if n == 0 {
			return a
		}
	}
}

// flush writes the gathered key group: its offset, then per state its id
// and its pairs in key order (a list's elements joined by ','), the
// last pair before a state change or the end flagged on its key's first
// byte, then the end-of-key-group mark.
func (sw *subtaskWriter) flush() error {
	if sw.cur < 0 || len(sw.recs) == 0 {
		return nil
	}
	a := sw.arena
	key := func(r record) []byte { return a[r.key:r.keyEnd] }
	// The kind of each state, by id: looked up once, not per comparison.
	kinds := make([]snapshot.StateKind, len(sw.op.KeyedStates))
	for id := range kinds {
		kinds[id] = sw.stateLayout(id).Kind
	}
	// Pairs of a state in key order; timers by their key and namespace, in
	// the order they came (what order a restore reads them in does not
	// matter; this one keeps a copy's timers in the source's order).
	sortKey := func(r record) []byte {
		if kinds[r.state] == statefile.KindTimer {
			return a[r.key+8 : r.keyEnd]
		}
		return key(r)
	}
	slices.SortFunc(sw.recs, func(x, y record) int {
		if x.state != y.state {
			return x.state - y.state
		}
		if c := bytes.Compare(sortKey(x), sortKey(y)); c != 0 {
			return c
		}
		return x.seq - y.seq
	})
	f := sw.keyed
	sw.offsets[sw.cur-sw.kgs.Start] = f.pos
	var buf []byte
	var prefix [2]byte
	if sw.prefix == 1 {
		prefix[0] = byte(sw.cur)
	} else {
		binary.BigEndian.PutUint16(prefix[:], uint16(sw.cur))
	}
	pairs := 0
	for i := 0; i < len(sw.recs); {
		r := sw.recs[i]
		j := i + 1
		list := kinds[r.state] == snapshot.List
		vlen := r.valEnd - r.val
		if list {
			for j < len(sw.recs) && sw.recs[j].state == r.state && bytes.Equal(key(sw.recs[j]), key(r)) {
				vlen += 1 + sw.recs[j].valEnd - sw.recs[j].val
				j++
			}
		}
		if i == 0 || sw.recs[i-1].state != r.state {
			buf = binary.BigEndian.AppendUint16(buf, uint16(r.state))
		}
		last := j == len(sw.recs) || sw.recs[j].state != r.state
		buf = binary.BigEndian.AppendUint32(buf, uint32(sw.prefix+r.keyEnd-r.key))
		at := len(buf)
		buf = append(buf, prefix[:sw.prefix]...)
		if last {
			buf[at] |= 0x80
		}
		buf = append(buf, key(r)...)
		buf = binary.BigEndian.AppendUint32(buf, uint32(vlen))
		for k := i; k < j; k++ {
			if k > i {
				buf = append(buf, ',')
			}
			buf = append(buf, a[sw.recs[k].val:sw.recs[k].valEnd]...)
		}
		pairs++
		if len(buf) >= 1<<20 {
			if err := f.write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
		i = j
	}
	buf = binary.BigEndian.AppendUint16(buf, statefile.EndOfKeyGroupMark)
	sw.recs, sw.arena = sw.recs[:0], sw.arena[:0]
	return f.write(buf)
}

func (sw *subtaskWriter) stateLayout(id int) *statefile.Layout {
	return sw.states[sw.op.KeyedStates[id].Name].l
}

// Element appends one operator-state element.
func (sw *subtaskWriter) Element(state string, value []byte) error {
	if sw.err != nil {
		return sw.err
	}
	if sw.oper == nil {
		if err := sw.startOperator(); err != nil {
			return sw.fail(err)
		}
	}
	i, ok := sw.operIdx[state]
	if !ok {
		return sw.fail(fmt.Errorf("operator %q: element of operator state %q, which it does not declare", sw.op.Label(), state))
	}
	info := &sw.operInfos[i]
	sw.operN.Entries++
	sw.operN.Bytes += int64(len(value))
	sw.elems[state]++
	if info.Mode == metadata.Broadcast {
		if sw.bcast == nil {
			sw.bcast = map[string]*broadcastMap{}
		}
		m := sw.bcast[state]
		if m == nil {
			m = &broadcastMap{}
			sw.bcast[state] = m
		}
		m.n++
		m.b = append(m.b, value...)
		return nil
	}
	info.Offsets = append(info.Offsets, sw.oper.pos)
	return sw.fail2(sw.oper.write(value))
}

// broadcastMap is a broadcast state's entries in one subtask.
type broadcastMap struct {
	n int
	b []byte
}

// writeBroadcast writes every broadcast state as Flink does, one map per
// subtask, empty ones too.
func (sw *subtaskWriter) writeBroadcast() error {
	for i := range sw.operInfos {
		info := &sw.operInfos[i]
		if info.Mode != metadata.Broadcast {
			continue
		}
		m := sw.bcast[info.Name]
		if m == nil {
			m = &broadcastMap{}
		}
		info.Offsets = []int64{sw.oper.pos}
		if err := sw.oper.write(append(binary.BigEndian.AppendUint32(nil, uint32(m.n)), m.b...)); err != nil {
			return err
		}
	}
	return nil
}

func (sw *subtaskWriter) fail2(err error) error {
	if err != nil {
		return sw.fail(err)
	}
	return nil
}

// startOperator writes the operator state file's header: every operator
// state of the operator, list states first, then broadcast states.
func (sw *subtaskWriter) startOperator() error {
	var lists, bcasts []carried.Meta
	sw.operIdx = map[string]int{}
	sw.elems = snapshot.ElementCounts{}
	for _, os := range sw.op.OperatorStates {
		group := &lists
		cands := sw.co.Operator
		if os.Mode == snapshot.Broadcast {
			group, cands = &bcasts, sw.co.Broadcast
		}
		m, ok := carried.Renamed(cands, os.CarriedName(), os.Name)
		if !ok {
			return fmt.Errorf("operator %q operator state %q: %w (no serializer snapshots recorded)", sw.op.Label(), os.Name, ErrNotFromFlink)
		}
		*group = append(*group, m)
		sw.operIdx[os.Name] = len(sw.operInfos)
		sw.operInfos = append(sw.operInfos, metadata.OperatorStateInfo{Name: os.Name, Mode: distributionMode(os.Mode), Offsets: []int64{}})
		sw.elems[os.Name] = 0
	}
	hdr, err := carried.EncodeOperatorHeader(sw.w.operatorHeaderFor(sw.co), lists, bcasts)
	if err != nil {
		return fmt.Errorf("operator %q: %w", sw.op.Label(), err)
	}
	f, err := sw.w.file(sw.ctx, sw.name("operator"), false)
	if err != nil {
		return err
	}
	sw.oper = f
	return f.write(hdr)
}

func distributionMode(m snapshot.Mode) metadata.DistributionMode {
	switch m {
	case snapshot.Union:
		return metadata.Union
	case snapshot.Broadcast:
		return metadata.Broadcast
	}
	return metadata.SplitDistribute
}

// Raw sets the subtask's raw state: written back with the layout the
// source recorded, which holds only while nothing moves it: raw operator
// state while the parallelism stays, raw keyed state while the key groups
// do too.
func (sw *subtaskWriter) Raw(raw snapshot.RawState) error {
	if sw.err != nil {
		return sw.err
	}
	if len(raw.Keyed)+len(raw.Operator) == 0 {
		return nil
	}
	cr := sw.co.Raw[sw.index]
	if cr == nil || sw.op.Parallelism != sw.co.Parallelism || (len(raw.Keyed) > 0 && sw.op.MaxParallelism != sw.co.MaxParallelism) {
		return sw.fail(fmt.Errorf("operator %q subtask %d: raw (operator-written) state cannot be split or moved; keep parallelism %d (and max parallelism %d for raw keyed state): %w",
			sw.op.Label(), sw.index, sw.co.Parallelism, sw.co.MaxParallelism, snapshot.ErrUnsupportedVersion))
	}
	sw.raw = &raw
	return nil
}

// writeWhole writes data as a state file of its own, named for kind, and
// lists it among so's files.
func (sw *subtaskWriter) writeWhole(so *subtaskOut, kind string, data []byte) (*stateFile, error) {
	f, err := sw.w.file(sw.ctx, sw.name(kind), false)
	if err != nil {
		return nil, err
	}
	if err := f.write(data); err != nil {
		f.p.Abort()
		return nil, err
	}
	if err := f.commit(); err != nil {
		return nil, err
	}
	sw.w.written.Add(f.name)
	so.files = append(so.files, f.ref())
	return f, nil
}

func (sw *subtaskWriter) writeRaw() (*subtaskOut, error) {
	so := &subtaskOut{}
	if sw.raw == nil {
		return so, nil
	}
	cr := sw.co.Raw[sw.index]
	if cr.HasKeyed && sw.raw.Keyed != nil {
		f, err := sw.writeWhole(so, "raw-keyed", sw.raw.Keyed)
		if err != nil {
			return nil, err
		}
		so.rawKeyed = &metadata.KeyedHandle{Type: metadata.HandleKeyGroups, KeyGroups: &metadata.KeyGroupsHandle{
			Range: metadata.KeyGroupRange{Start: cr.KeyedStart, Count: int32(len(cr.KeyedOffsets))}, Offsets: rebase(cr.KeyedOffsets), Delegate: f.handle()}}
	}
	if cr.HasOperator && sw.raw.Operator != nil {
		f, err := sw.writeWhole(so, "raw-operator", sw.raw.Operator)
		if err != nil {
			return nil, err
		}
		so.rawOperator = &metadata.OperatorStateHandle{Type: metadata.HandleOperatorState, Delegate: f.handle()}
		for _, info := range cr.Operator {
			so.rawOperator.States = append(so.rawOperator.States, metadata.OperatorStateInfo{Name: info.Name, Mode: metadata.DistributionMode(info.Mode), Offsets: info.Offsets})
		}
	}
	return so, nil
}

// rebase makes raw key-group offsets relative to the stream that Raw
// returned: the key groups' bytes in stream order, from the first.
func rebase(offs []int64) []int64 {
	if len(offs) == 0 {
		return nil
	}
	lo := slices.Min(offs)
	out := make([]int64, len(offs))
	for i, o := range offs {
		out[i] = o - lo
	}
	return out
}

// Close finishes the subtask's files and records its handles.
func (sw *subtaskWriter) Close() error {
	if sw.closed {
		return sw.err
	}
	sw.closed = true
	if sw.err != nil {
		sw.abortFiles()
		return sw.err
	}
	if err := sw.finish(); err != nil {
		sw.abortFiles()
		return sw.fail(err)
	}
	return nil
}

func (sw *subtaskWriter) abortFiles() {
	for _, f := range []*stateFile{sw.keyed, sw.oper} {
		if f != nil {
			f.p.Abort()
		}
	}
}

func (sw *subtaskWriter) finish() error {
	if err := sw.ctx.Err(); err != nil {
		return err
	}
	if sw.keyed == nil && len(sw.op.KeyedStates) > 0 && sw.kgs.Len() > 0 {
		if err := sw.startKeyed(); err != nil {
			return err
		}
	}
	if sw.oper == nil && len(sw.op.OperatorStates) > 0 {
		if err := sw.startOperator(); err != nil {
			return err
		}
	}
	if sw.oper != nil {
		if err := sw.writeBroadcast(); err != nil {
			return err
		}
	}
	so, err := sw.writeRaw()
	if err != nil {
		return err
	}
	sub := &snapshot.Subtask{Index: sw.index, KeyGroups: sw.kgs, Keyed: sw.keyedN, Operator: sw.operN, OperatorElements: sw.elems}
	so.inputs, so.outputs = sw.inputs, sw.outputs
	sub.InFlight = statefile.InFlight(&metadata.SubtaskState{InputChannels: sw.inputs, ResultSubpartitions: sw.outputs})
	if sw.channels != nil {
		sub.Files = append(sub.Files, sw.channels.ref())
		so.files = append(so.files, sw.channels.ref())
	}
	if sw.keyed != nil {
		if err := sw.flush(); err != nil {
			return err
		}
		if err := sw.keyed.commit(); err != nil {
			return err
		}
		sw.w.written.Add(sw.keyed.name)
		so.keyed = &metadata.KeyedHandle{Type: metadata.HandleSavepointKeyGroups, KeyGroups: &metadata.KeyGroupsHandle{
			Range: metadata.KeyGroupRange{Start: int32(sw.kgs.Start), Count: int32(sw.kgs.Len())}, Offsets: sw.offsets, Delegate: sw.keyed.handle()}}
		sub.Files = append(sub.Files, sw.keyed.ref())
		so.files = append(so.files, sw.keyed.ref())
	}
	if sw.oper != nil {
		if err := sw.oper.commit(); err != nil {
			return err
		}
		sw.w.written.Add(sw.oper.name)
		so.operator = &metadata.OperatorStateHandle{Type: metadata.HandleOperatorState, States: sw.operInfos, Delegate: sw.oper.handle()}
		sub.Files = append(sub.Files, sw.oper.ref())
		so.files = append(so.files, sw.oper.ref())
	}
	sw.w.ledger.Finish(sw.op, sw.index, sub, so)
	return nil
}
