package rocksdb

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/stateutil/stateutil/internal/rocksdb"
	"github.com/stateutil/stateutil/internal/rocksdbformat"
	"github.com/stateutil/stateutil/internal/tempdir"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// sstTarget is the size past which a state's SST file is finished, at the
// next key-group boundary, and a new one begun. Files that hold whole key
// groups let a rescale link every file inside a new subtask's range and
// copy only those that straddle one of its ends: a key group of 4 MiB or
// more has files of its own and is never copied, and smaller ones cost at
// most about 4 MiB per state to copy at each end of a new range.
var sstTarget = 4 << 20

// sortBudget bounds the bytes of keys and values a subtask writer holds
// to sort one key group. A key group larger than that (summed over the
// states) sends its largest states to ordinary writes.
var sortBudget = 64 << 20

// subtaskWriter builds one subtask's RocksDB instance. Entries arrive in
// key-group order, and the key group is the first byte(s) of every RocksDB
// key, so sorting one key group at a time puts a state's keys in RocksDB
// order: each key group is buffered per state, sorted when the next one
// starts, and written straight into the state's external SST files (a
// new one past sstTarget), all ingested together on Close: the fastest
// way in, no memtable, no compaction. A state whose key group outgrows
// sortBudget is ingested as far as it got and switches to ordinary writes
// (compacted on Close).
type subtaskWriter struct {
	ctx     context.Context
	w       *writer
	in      *rocksdbformat.Instance
	tmp     *tempdir.Dir
	states  map[string]*sstState
	order   []*sstState // states in the order they were first seen
	last    *sstState   // the state of the entry before
	lastKG  int
	stats   snapshot.Stats
	kgStats []snapshot.KeyGroupStat
	key     []byte
	// buffered is the bytes held in the states' sort buffers.
	buffered int
	// syncs makes finished SST files durable while the next are written.
	syncs backgroundSyncs
	// unordered is set once a state fell back to ordinary writes.
	unordered bool
	closed    bool
}

// sstState is one state's external SST file and the current key group's
// records, not yet sorted.
type sstState struct {
	c        *rocksdbformat.Codec
	path     string             // its SST files' paths begin so
	sst      *rocksdb.SSTWriter // the SST file being written, opened by a flush
	files    int                // SST files begun
	finished []string           // SST files complete, not ingested yet
	lz4      bool
	buf      []byte // records' keys and values, each key followed by its value
	recs     []rocksdb.Record
	sorted   bool // recs arrived in strictly increasing key order
	fallback bool
}

func (s *sstState) keyOf(r rocksdb.Record) []byte { return s.buf[r.Off : r.Off+r.KeyLen] }
func (s *sstState) valOf(r rocksdb.Record) []byte {
	return s.buf[r.Off+r.KeyLen : r.Off+r.KeyLen+r.ValueLen]
}

func (sw *subtaskWriter) Entry(e *snapshot.Entry) error {
	if sw.closed {
		return rocksdbformat.ErrClosed
	}
	s, err := sw.stateOf(e)
	if err != nil {
		return err
	}
	c := s.c
	if e.KeyGroup < sw.lastKG {
		return fmt.Errorf("rocksdb: state %q: key group %d after %d; entries must come in key-group order", e.State, e.KeyGroup, sw.lastKG)
	}
	if e.KeyGroup != sw.lastKG {
		if err := sw.flushAll(); err != nil {
			return err
		}
	}
	if sw.key, err = c.EncodeKey(sw.key[:0], e); err != nil {
		return err
	}
	sw.count(e)
	if s.fallback {
		return sw.in.Put(e)
	}
	before := len(s.buf)
	if err := s.add(sw.key, e); err != nil {
		return err
	}
	sw.buffered += len(s.buf) - before
	if sw.buffered > sortBudget {
		return sw.overBudget()
	}
	return nil
}

// add buffers e (with RocksDB key key). A key equal to the last one
// buffered is merged into it at once: a list gains an element, any other
// value is replaced.
func (s *sstState) add(key []byte, e *snapshot.Entry) error {
	c := s.c
	if n := len(s.recs); n > 0 {
		last := &s.recs[n-1]
		switch cmp := bytes.Compare(key, s.keyOf(*last)); {
		case cmp == 0:
			// The last record's value ends the buffer: change it in place.
			vstart := last.Off + last.KeyLen
			var err error
			if c.Kind == snapshot.List {
				s.buf, err = c.AppendElement(s.buf, last.ValueLen, e)
			} else {
				s.buf, err = c.EncodeValue(s.buf[:vstart], e)
			}
			if err != nil {
				return err
			}
			last.ValueLen = len(s.buf) - vstart
			return nil
		case cmp < 0:
			s.sorted = false
		}
	} else {
		s.sorted = true
	}
	off := len(s.buf)
	s.buf = append(s.buf, key...)
	var err error
	if c.Kind == snapshot.List {
		s.buf, err = c.AppendElement(s.buf, 0, e)
	} else {
		s.buf, err = c.EncodeValue(s.buf, e)
	}
	if err != nil {
		s.buf = s.buf[:off]
		return err
	}
	s.recs = append(s.recs, rocksdb.Record{Off: off, KeyLen: len(key), ValueLen: len(s.buf) - off - len(key)})
	return nil
}

// flush sorts the buffered key group and writes it to the SST file,
// merging equal keys as add does. It keeps the buffers for the next key
// group.
func (s *sstState) flush() error {
	if len(s.recs) == 0 {
		return nil
	}
	// Sorted records arrived in strictly increasing key order (add merged
	// equal neighbours): none repeats a key.
	if !s.sorted {
		slices.SortStableFunc(s.recs, func(a, b rocksdb.Record) int { return bytes.Compare(s.keyOf(a), s.keyOf(b)) })
		if err := s.mergeEqualKeys(); err != nil {
			return err
		}
	}
	if s.sst == nil {
		// The first key group is the sample the compression is chosen by.
		if s.files == 0 {
			s.lz4 = compressible(s.buf)
		}
		s.files++
		w, err := rocksdb.NewSSTWriter(s.path+"-"+strconv.Itoa(s.files)+".sst", s.lz4)
		if err != nil {
			return err
		}
		s.sst = w
	}
	if err := s.sst.AddRecords(s.buf, s.recs); err != nil {
		return err
	}
	s.buf, s.recs = s.buf[:0], s.recs[:0]
	return nil
}

// mergeEqualKeys makes one record of each run of sorted records with the
// same key: the last one, or for a list state a new record at the end of
// buf whose value joins the run's elements in arrival order.
func (s *sstState) mergeEqualKeys() error {
	out := s.recs[:0] // written behind the records still to be read
	for i := 0; i < len(s.recs); {
		j := i + 1
		for j < len(s.recs) && bytes.Equal(s.keyOf(s.recs[j]), s.keyOf(s.recs[i])) {
			j++
		}
		r := s.recs[j-1] // the last write wins
		if j > i+1 && s.c.Kind == snapshot.List {
			var err error
			if r, err = s.joinList(s.recs[i:j]); err != nil {
				return err
			}
		}
		out = append(out, r)
		i = j
	}
	s.recs = out
	return nil
}

// joinList appends to buf a record with run's key and its values joined
// as list elements.
func (s *sstState) joinList(run []rocksdb.Record) (rocksdb.Record, error) {
	off := len(s.buf)
	s.buf = append(s.buf, s.keyOf(run[0])...)
	for i, r := range run {
		if i > 0 {
			s.buf = append(s.buf, rocksdbformat.ListDelimiter)
		}
		s.buf = append(s.buf, s.valOf(r)...)
	}
	klen := run[0].KeyLen
	merged := rocksdb.Record{Off: off, KeyLen: klen, ValueLen: len(s.buf) - off - klen}
	return merged, s.checkMerged(s.keyOf(merged), merged.ValueLen)
}

// checkMerged refuses a list, merged from elements apart in the input,
// larger than MaxValueSize.
func (s *sstState) checkMerged(key []byte, n int) error {
	var e snapshot.Entry
	if err := s.c.DecodeKey(key, &e); err != nil {
		return err
	}
	return s.c.CheckSize(&e, int64(n))
}

// flushAll writes every state's buffered key group.
func (sw *subtaskWriter) flushAll() error {
	if sw.buffered == 0 {
		return nil
	}
	for _, s := range sw.states {
		if err := s.flush(); err != nil {
			return err
		}
		if s.sst != nil && s.sst.Bytes() >= int64(sstTarget) {
			if err := sw.finishFile(s); err != nil {
				return err
			}
		}
	}
	sw.buffered = 0
	return nil
}

// overBudget sends the states with the largest buffers to ordinary writes
// until the buffers fit sortBudget again.
func (sw *subtaskWriter) overBudget() error {
	for sw.buffered > sortBudget {
		var big *sstState
		for _, s := range sw.states {
			if !s.fallback && (big == nil || len(s.buf) > len(big.buf)) {
				big = s
			}
		}
		if big == nil || len(big.buf) == 0 {
			return nil
		}
		sw.buffered -= len(big.buf)
		if err := sw.fallBack(big); err != nil {
			return err
		}
	}
	return nil
}

// fallBack ingests what s's SST file holds (the key groups before the
// buffered one), writes the buffered records the ordinary way and sends
// s's later entries there too.
func (sw *subtaskWriter) fallBack(s *sstState) error {
	s.fallback = true
	sw.unordered = true
	if err := sw.ingest(s); err != nil {
		return err
	}
	for _, r := range s.recs { // arrival order: later writes win, lists append
		key, val := s.keyOf(r), s.valOf(r)
		if s.c.Kind == snapshot.List {
			old, ok, err := sw.in.DB().Get(s.c.State, key)
			if err != nil {
				return fmt.Errorf("rocksdb: state %q: %w", s.c.State, err)
			}
			if ok && len(old) > 0 {
				if err := s.checkMerged(key, len(old)+1+len(val)); err != nil {
					return err
				}
				val = append(append(old, rocksdbformat.ListDelimiter), val...)
			}
		}
		if err := sw.in.DB().Put(s.c.State, key, val); err != nil {
			return err
		}
	}
	s.buf, s.recs = nil, nil
	return nil
}

func (sw *subtaskWriter) count(e *snapshot.Entry) {
	sw.lastKG = e.KeyGroup
	sw.stats.Entries++
	sw.stats.Bytes += e.Size()
	if n := len(sw.kgStats); n == 0 || sw.kgStats[n-1].KeyGroup != e.KeyGroup {
		sw.kgStats = append(sw.kgStats, snapshot.KeyGroupStat{KeyGroup: e.KeyGroup})
	}
	last := &sw.kgStats[len(sw.kgStats)-1]
	last.Entries++
	last.Bytes += e.Size()
}

// stateOf is e's state, e checked by the instance's codec unless the
// entry before was of the same state and key group.
func (sw *subtaskWriter) stateOf(e *snapshot.Entry) (*sstState, error) {
	if s := sw.last; s != nil && e.KeyGroup == sw.lastKG && s.c.State == e.State {
		return s, nil
	}
	if e.KeyGroup == sw.lastKG {
		// The key group was checked with an entry before; states
		// alternate within one, and a scan of the few is cheaper than
		// two map lookups.
		for _, s := range sw.order {
			if s.c.State == e.State {
				sw.last = s
				return s, nil
			}
		}
	}
	c, err := sw.in.Codec(e)
	if err != nil {
		return nil, err
	}
	s, ok := sw.states[c.State]
	if !ok {
		s = &sstState{c: c, path: filepath.Join(sw.tmp.Path, "ingest-"+strconv.Itoa(len(sw.states)))}
		sw.states[c.State] = s
		sw.order = append(sw.order, s)
	}
	sw.last = s
	return s, nil
}

// finishFile completes the state's SST file being written, to be
// ingested with the others.
func (sw *subtaskWriter) finishFile(s *sstState) error {
	if s.sst == nil {
		return nil
	}
	defer func() { s.sst.Close(); s.sst = nil }()
	ok, err := s.sst.Finish()
	if err != nil || !ok {
		os.Remove(s.sst.Path())
		return err
	}
	if err := sw.in.RecordCRC32C(s.sst.Path(), s.sst.CRC32C()); err != nil {
		return err
	}
	s.finished = append(s.finished, s.sst.Path())
	sw.syncs.start(s.sst.Path())
	return nil
}

// ingest finishes a state's SST file and ingests the state's files, in
// one go: they hold disjoint key ranges.
func (sw *subtaskWriter) ingest(s *sstState) error {
	if err := sw.finishFile(s); err != nil || len(s.finished) == 0 {
		return err
	}
	if err := sw.syncs.wait(); err != nil {
		return err
	}
	files := s.finished
	s.finished = nil
	return sw.in.DB().Ingest(s.c.State, files)
}

func (sw *subtaskWriter) Element(state string, value []byte) error {
	if sw.closed {
		return rocksdbformat.ErrClosed
	}
	sw.in.AddElement(state, value)
	return nil
}

func (sw *subtaskWriter) Raw(raw snapshot.RawState) error {
	if sw.closed {
		return rocksdbformat.ErrClosed
	}
	sw.in.SetRaw(raw)
	return nil
}

// Close ingests the SST files, compacts if writes came out of order, and
// uploads the instance into the snapshot directory.
func (sw *subtaskWriter) Close() error {
	if sw.closed {
		return nil
	}
	h, sub, err := sw.finish()
	sw.discard()
	if err != nil {
		sw.w.finished(sw, nil, nil)
		return err
	}
	sw.w.finished(sw, h, sub)
	return nil
}

func (sw *subtaskWriter) finish() (*rocksdbformat.Handle, *snapshot.Subtask, error) {
	if err := sw.flushAll(); err != nil {
		return nil, nil, err
	}
	for _, s := range sw.states {
		if err := sw.ingest(s); err != nil {
			return nil, nil, err
		}
	}
	if sw.unordered {
		sw.in.DB().Compact()
	}
	h, _, err := sw.in.Upload(sw.ctx, sw.w.target(sw.in), sw.tmp.Path)
	if err != nil {
		return nil, nil, err
	}
	sub := sw.in.SubtaskModel()
	sub.Keyed = sw.stats
	sub.KeyGroupStats = fullRange(sw.in.KeyGroups(), sw.kgStats)
	return h, sub, nil
}

// discard frees everything local.
func (sw *subtaskWriter) discard() {
	sw.closed = true
	sw.syncs.wait() // no sync outlives the files
	for _, s := range sw.states {
		if s.sst != nil {
			s.sst.Close()
			s.sst = nil
		}
		s.buf, s.recs = nil, nil
	}
	sw.in.Destroy()
	sw.tmp.Remove()
}

// fullRange has one row per key group of r, zero where nothing was written.
func fullRange(r keygroup.Range, rows []snapshot.KeyGroupStat) []snapshot.KeyGroupStat {
	out := make([]snapshot.KeyGroupStat, r.Len())
	for i := range out {
		out[i].KeyGroup = r.Start + i
	}
	for _, row := range rows {
		out[row.KeyGroup-r.Start] = row
	}
	return out
}

// backgroundSyncs syncs files on goroutines of their own, a few at a
// time: a sync waits for the disk and for a commit of the file system's
// journal, and the writer has the next file to build meanwhile.
type backgroundSyncs struct {
	wg      sync.WaitGroup
	running chan struct{} // a slot per sync running; made with the writer
	mu      sync.Mutex
	err     error // the first sync that failed
}

func (b *backgroundSyncs) start(path string) {
	b.wg.Go(func() {
		b.running <- struct{}{}
		err := rocksdb.SyncPath(path)
		<-b.running
		if err != nil {
			b.mu.Lock()
			if b.err == nil {
				b.err = fmt.Errorf("sync %q: %w", path, err)
			}
			b.mu.Unlock()
		}
	})
}

// wait waits for the syncs started and reports the first failure.
func (b *backgroundSyncs) wait() error {
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
