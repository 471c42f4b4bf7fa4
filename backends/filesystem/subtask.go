package filesystem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/stateutil/stateutil/internal/envelope"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// subtaskWriter streams one subtask's state into its blobs.
type subtaskWriter struct {
	ctx   context.Context
	w     *Writer
	op    *snapshot.Operator
	seq   int
	index int
	kgs   keygroup.Range
	done  bool
	err   error // first failure; later calls return it

	// keyed state
	keyed      *spill
	states     map[string]int
	stateNames []string
	lastState  string
	lastIdx    int
	cur        int // key group being written, relative to kgs.Start
	secStart   int // where the current section starts in keyed.buf
	secCRC     uint32
	offsets    []int64
	crcs       []uint32
	kgStats    []snapshot.KeyGroupStat
	keyedStats snapshot.Stats

	// operator state
	oper      *spill
	operIdx   map[string]int // state name -> index in operLayout
	operState []operatorStateLayout
	operStats snapshot.Stats
	operElems map[string]int64

	raw snapshot.RawState
}

func newSubtaskWriter(ctx context.Context, w *Writer, op *snapshot.Operator, seq, index int, kgs keygroup.Range) *subtaskWriter {
	return &subtaskWriter{ctx: ctx, w: w, op: op, seq: seq, index: index, kgs: kgs, lastIdx: -1,
		keyedStats: snapshot.Stats{Known: true}, operStats: snapshot.Stats{Known: true}}
}

func (sw *subtaskWriter) fail(err error) error {
	if sw.err == nil {
		sw.err = err
	}
	return err
}

// Entry appends a keyed entry to the current key group's section.
func (sw *subtaskWriter) Entry(e *snapshot.Entry) error {
	if sw.err != nil {
		return sw.err
	}
	if !sw.kgs.Contains(e.KeyGroup) {
		return fmt.Errorf("operator %q subtask %d: entry in key group %d outside the subtask's range %v", sw.op.Label(), sw.index, e.KeyGroup, sw.kgs)
	}
	if sw.keyed == nil {
		sw.startKeyed()
	}
	rel := e.KeyGroup - sw.kgs.Start
	if rel < sw.cur {
		return fmt.Errorf("operator %q subtask %d: entry in key group %d after key group %d (entries must come in key-group order)", sw.op.Label(), sw.index, e.KeyGroup, sw.kgs.Start+sw.cur)
	}
	for sw.cur < rel {
		sw.endSection()
	}
	idx := sw.lastIdx
	if e.State != sw.lastState || idx < 0 {
		i, ok := sw.states[e.State]
		if !ok {
			return fmt.Errorf("operator %q: entry of keyed state %q, which the operator does not declare", sw.op.Label(), e.State)
		}
		idx, sw.lastState, sw.lastIdx = i, e.State, i
	}
	k := sw.keyed
	k.buf = appendEntry(k.buf, idx, e.Key, e.Namespace, e.UserKey, e.Value, e.ExpiresAt)
	st := &sw.kgStats[sw.cur]
	st.Entries++
	st.Bytes += e.Size()
	if err := k.maybeFlush(); err != nil {
		return sw.fail(err)
	}
	return nil
}

func (sw *subtaskWriter) startKeyed() {
	sw.states = make(map[string]int, len(sw.op.KeyedStates))
	for i, ks := range sw.op.KeyedStates {
		sw.states[ks.Name] = i
		sw.stateNames = append(sw.stateNames, ks.Name)
	}
	n := sw.kgs.Len()
	sw.offsets = make([]int64, 1, n+1)
	sw.crcs = make([]uint32, 0, n)
	sw.kgStats = make([]snapshot.KeyGroupStat, n)
	for i := range sw.kgStats {
		sw.kgStats[i].KeyGroup = sw.kgs.Start + i
	}
	sw.keyed = sw.w.newSpill(sw.ctx, sw.w.fileName(sw.seq, sw.index, "keyed"))
	sw.keyed.beforeFlush = func() {
		sw.secCRC = crc32.Update(sw.secCRC, envelope.Castagnoli, sw.keyed.buf[sw.secStart:])
		sw.secStart = 0
	}
}

// endSection closes the current key group's section and moves to the next.
func (sw *subtaskWriter) endSection() {
	k := sw.keyed
	sw.secCRC = crc32.Update(sw.secCRC, envelope.Castagnoli, k.buf[sw.secStart:])
	sw.crcs = append(sw.crcs, sw.secCRC)
	sw.offsets = append(sw.offsets, k.written())
	st := sw.kgStats[sw.cur]
	sw.keyedStats.Entries += st.Entries
	sw.keyedStats.Bytes += st.Bytes
	sw.secCRC, sw.secStart = 0, len(k.buf)
	sw.cur++
}

// Element appends an element to an operator state's list.
func (sw *subtaskWriter) Element(state string, value []byte) error {
	if sw.err != nil {
		return sw.err
	}
	i, ok := sw.operIdx[state]
	if !ok {
		if _, declared := sw.op.OperatorStateByName(state); !declared {
			return fmt.Errorf("operator %q: element of operator state %q, which the operator does not declare", sw.op.Label(), state)
		}
		if sw.oper == nil {
			sw.oper = sw.w.newSpill(sw.ctx, sw.w.fileName(sw.seq, sw.index, "oper"))
			sw.operIdx = map[string]int{}
			sw.operElems = map[string]int64{}
		}
		i = len(sw.operState)
		sw.operIdx[state] = i
		sw.operState = append(sw.operState, operatorStateLayout{Name: state})
	}
	o := sw.oper
	ls := &sw.operState[i]
	ls.Offsets = append(ls.Offsets, o.written())
	ls.Lengths = append(ls.Lengths, int64(len(value)))
	o.buf = append(o.buf, value...)
	sw.operStats.Entries++
	sw.operStats.Bytes += int64(len(value))
	sw.operElems[state]++
	if err := o.maybeFlush(); err != nil {
		return sw.fail(err)
	}
	return nil
}

// Raw sets the subtask's raw state; it is written on Close.
func (sw *subtaskWriter) Raw(raw snapshot.RawState) error {
	sw.raw = snapshot.RawState{Keyed: bytes.Clone(raw.Keyed), Operator: bytes.Clone(raw.Operator)}
	return sw.err
}

// Close writes what is still buffered and records the subtask's figures.
func (sw *subtaskWriter) Close() error {
	if sw.done {
		return errors.New("subtask writer closed twice")
	}
	if sw.err != nil {
		sw.abort()
		return sw.err
	}
	sub := &snapshot.Subtask{
		Index:            sw.index,
		KeyGroups:        sw.kgs,
		Keyed:            snapshot.Stats{Known: true},
		Operator:         sw.operStats,
		OperatorElements: sw.operElems,
		RawKeyedBytes:    int64(len(sw.raw.Keyed)),
		RawOperatorBytes: int64(len(sw.raw.Operator)),
	}
	var l subtaskLayout
	if sw.keyed != nil {
		for sw.cur < sw.kgs.Len() {
			sw.endSection()
		}
		b, err := sw.keyed.finish()
		if err != nil {
			return sw.fail(err)
		}
		l.Keyed = &keyedLayout{Data: b, States: sw.stateNames, Offsets: sw.offsets, CRCs: sw.crcs}
		sub.Keyed, sub.KeyGroupStats = sw.keyedStats, sw.kgStats
	} else if len(sw.op.KeyedStates) > 0 {
		sub.KeyGroupStats = make([]snapshot.KeyGroupStat, sw.kgs.Len())
		for i := range sub.KeyGroupStats {
			sub.KeyGroupStats[i].KeyGroup = sw.kgs.Start + i
		}
	}
	if sw.oper != nil {
		// Layout states in descriptor order: the order Elements yields them.
		slices.SortStableFunc(sw.operState, func(a, b operatorStateLayout) int {
			return sw.descriptorIndex(a.Name) - sw.descriptorIndex(b.Name)
		})
		b, err := sw.oper.finish()
		if err != nil {
			return sw.fail(err)
		}
		l.Operator = &operatorLayout{Data: b, States: sw.operState}
	}
	var err error
	if l.RawKeyed, err = sw.writeRaw(sw.raw.Keyed, "rawk"); err != nil {
		return sw.fail(err)
	}
	if l.RawOperator, err = sw.writeRaw(sw.raw.Operator, "rawo"); err != nil {
		return sw.fail(err)
	}
	sub.Files = l.files()
	sw.done = true
	sw.w.ledger.Finish(sw.op, sw.index, sub, l)
	return nil
}

func (sw *subtaskWriter) descriptorIndex(name string) int {
	for i := range sw.op.OperatorStates {
		if sw.op.OperatorStates[i].Name == name {
			return i
		}
	}
	return len(sw.op.OperatorStates)
}

func (sw *subtaskWriter) writeRaw(b []byte, ext string) (*blob, error) {
	if len(b) == 0 {
		return nil, nil
	}
	s := sw.w.newSpill(sw.ctx, sw.w.fileName(sw.seq, sw.index, ext))
	s.buf = b
	bl, err := s.finish()
	if err != nil {
		return nil, err
	}
	return &bl, nil
}

// abort drops the subtask's open blobs after a failure.
func (sw *subtaskWriter) abort() {
	for _, s := range []*spill{sw.keyed, sw.oper} {
		if s != nil {
			s.abort()
			sw.w.untrack(s)
		}
	}
}
