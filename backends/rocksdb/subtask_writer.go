package rocksdb

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// subtaskWriter builds one subtask's RocksDB instance. While a state's
// keys arrive in increasing RocksDB key order it writes them straight into
// an external SST file (ingested on Close: the fastest way in); the first
// key out of order ingests what it has and switches that state to
// ordinary writes.
type subtaskWriter struct {
	ctx     context.Context
	w       *writer
	in      *Instance
	tmp     string
	states  map[string]*sstState
	lastKG  int
	stats   snapshot.Stats
	kgStats []snapshot.KeyGroupStat
	key     []byte
	// unordered is set once a state fell back to ordinary writes.
	unordered bool
	closed    bool
}

// sstState is one state's external SST file and its pending key.
type sstState struct {
	sst      *sstWriter
	pendKey  []byte
	pendVal  []byte
	pending  bool
	fallback bool
}

func (sw *subtaskWriter) Entry(e *snapshot.Entry) error {
	if sw.closed {
		return errClosed
	}
	c, err := sw.in.codec(e)
	if err != nil {
		return err
	}
	if e.KeyGroup < sw.lastKG {
		return fmt.Errorf("rocksdb: state %q: key group %d after %d; entries must come in key-group order", e.State, e.KeyGroup, sw.lastKG)
	}
	sw.count(e)
	s, err := sw.state(c)
	if err != nil {
		return err
	}
	if s.fallback {
		return sw.in.Put(e)
	}
	if sw.key, err = c.encodeKey(sw.key[:0], e); err != nil {
		return err
	}
	if s.pending {
		switch cmp := bytes.Compare(sw.key, s.pendKey); {
		case cmp == 0 && c.kind == snapshot.List:
			s.pendVal, err = c.appendElement(s.pendVal, e)
			return err
		case cmp == 0:
			s.pendVal, err = c.encodeValue(s.pendVal[:0], e)
			return err
		case cmp < 0:
			if err := sw.fallBack(c, s); err != nil {
				return err
			}
			return sw.in.Put(e)
		}
		if err := s.sst.add(s.pendKey, s.pendVal); err != nil {
			return err
		}
	}
	s.pendKey = append(s.pendKey[:0], sw.key...)
	if c.kind == snapshot.List {
		s.pendVal, err = c.appendElement(s.pendVal[:0], e)
	} else {
		s.pendVal, err = c.encodeValue(s.pendVal[:0], e)
	}
	s.pending = err == nil
	return err
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

func (sw *subtaskWriter) state(c *codec) (*sstState, error) {
	if s, ok := sw.states[c.state]; ok {
		return s, nil
	}
	p := filepath.Join(sw.tmp, "ingest-"+strconv.Itoa(len(sw.states))+".sst")
	w, err := newSSTWriter(p)
	if err != nil {
		return nil, err
	}
	s := &sstState{sst: w}
	sw.states[c.state] = s
	return s, nil
}

// ingest finishes a state's SST file and ingests it.
func (sw *subtaskWriter) ingest(name string, s *sstState) error {
	if s.sst == nil {
		return nil
	}
	defer func() { s.sst.Close(); s.sst = nil }()
	if s.pending {
		s.pending = false
		if err := s.sst.add(s.pendKey, s.pendVal); err != nil {
			return err
		}
	}
	ok, err := s.sst.finish()
	if err != nil || !ok {
		os.Remove(s.sst.path)
		return err
	}
	h, err := sw.in.db.cf(name)
	if err != nil {
		return err
	}
	return sw.in.db.ingest(h, []string{s.sst.path})
}

func (sw *subtaskWriter) fallBack(c *codec, s *sstState) error {
	s.fallback = true
	sw.unordered = true
	return sw.ingest(c.state, s)
}

func (sw *subtaskWriter) Element(state string, value []byte) error {
	if sw.closed {
		return errClosed
	}
	sw.in.AddElement(state, value)
	return nil
}

func (sw *subtaskWriter) Raw(raw snapshot.RawState) error {
	if sw.closed {
		return errClosed
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

func (sw *subtaskWriter) finish() (*handle, *snapshot.Subtask, error) {
	for name, s := range sw.states {
		if err := sw.ingest(name, s); err != nil {
			return nil, nil, err
		}
	}
	if sw.unordered {
		sw.in.db.compact()
	}
	t := uploadTarget{dir: sw.w.d}
	h, _, err := sw.in.upload(sw.ctx, t, sw.tmp)
	if err != nil {
		return nil, nil, err
	}
	sub := sw.in.subtaskModel()
	sub.Keyed = sw.stats
	sub.KeyGroupStats = fullRange(sw.in.kgs, sw.kgStats)
	return h, sub, nil
}

// discard frees everything local.
func (sw *subtaskWriter) discard() {
	sw.closed = true
	for _, s := range sw.states {
		if s.sst != nil {
			s.sst.Close()
			s.sst = nil
		}
	}
	sw.in.destroy()
	os.RemoveAll(sw.tmp)
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
