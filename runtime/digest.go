package runtime

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"

	"github.com/stateutil/stateutil/snapshot"
)

// digestEntry is one keyed entry of the final state, for the digest.
type digestEntry struct {
	op  string
	seq int // position within its subtask's snapshot, keeps list order
	e   snapshot.Entry
}

// collector is a SubtaskWriter that keeps entries.
type collector struct {
	op      string
	entries []digestEntry
}

func (c *collector) Entry(e *snapshot.Entry) error {
	c.entries = append(c.entries, digestEntry{op: c.op, seq: len(c.entries), e: e.Clone()})
	return nil
}
func (c *collector) Element(string, []byte) error { return nil }
func (c *collector) Raw(snapshot.RawState) error  { return nil }
func (c *collector) Close() error                 { return nil }

// collectDigest adds a keyed subtask's final state to the digest.
func (ex *execution) collectDigest(ctx context.Context, v *vertex, be KeyedBackend) error {
	c := &collector{op: v.uid}
	if err := be.Snapshot(ctx, c, ex.clock.Now().UnixMilli()); err != nil {
		return err
	}
	ex.digestMu.Lock()
	ex.digest = append(ex.digest, c.entries...)
	ex.digestMu.Unlock()
	return nil
}

// stateDigest hashes the final keyed state independently of parallelism:
// entries ordered by operator, state, key and user key, list elements in
// list order, each field length-prefixed. TTL expiry times are left out:
// they follow the processing-time clock, not the input.
func (ex *execution) stateDigest() (int64, string) {
	ex.digestMu.Lock()
	defer ex.digestMu.Unlock()
	es := ex.digest
	slices.SortStableFunc(es, func(a, b digestEntry) int {
		return cmp.Or(cmp.Compare(a.op, b.op), cmp.Compare(a.e.State, b.e.State),
			bytes.Compare(a.e.Key, b.e.Key), bytes.Compare(a.e.UserKey, b.e.UserKey))
	})
	h := sha256.New()
	var n [8]byte
	field := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, d := range es {
		field([]byte(d.op))
		field([]byte(d.e.State))
		field(d.e.Key)
		field(d.e.UserKey)
		field(d.e.Value)
	}
	return int64(len(es)), hex.EncodeToString(h.Sum(nil))
}
