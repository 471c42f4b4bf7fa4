package runtime

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"sync"
)

// Committer is the external system a sink writes to. Commit must be
// idempotent per transaction id: committing a txn again does nothing.
// That is what lets a restored sink re-commit output it staged before a
// failure without writing it twice.
type Committer interface {
	Commit(txn string, lines []string) error
}

// MultisetDigest digests a multiset of lines, independent of their order:
// the wrapping sum of the first 8 bytes of each line's SHA-256, and the
// count.
type MultisetDigest struct {
	Sum   uint64
	Count int64
}

// Add adds one line.
func (d *MultisetDigest) Add(line string) {
	h := sha256.Sum256([]byte(line))
	d.Sum += binary.BigEndian.Uint64(h[:8])
	d.Count++
}

// String renders the digest as hex.
func (d MultisetDigest) String() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], d.Sum)
	binary.BigEndian.PutUint64(b[8:], uint64(d.Count))
	return hex.EncodeToString(b[:])
}

// DigestCommitter keeps only the count and digest of committed lines, and
// the txn ids that make Commit idempotent: output for runs too large to
// hold in memory.
type DigestCommitter struct {
	mu   sync.Mutex
	txns map[string]bool
	d    MultisetDigest
}

// NewDigestCommitter returns an empty committer.
func NewDigestCommitter() *DigestCommitter { return &DigestCommitter{txns: map[string]bool{}} }

// Commit implements Committer.
func (c *DigestCommitter) Commit(txn string, lines []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.txns[txn] {
		return nil
	}
	c.txns[txn] = true
	for _, l := range lines {
		c.d.Add(l)
	}
	return nil
}

// Count is the number of committed lines.
func (c *DigestCommitter) Count() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.d.Count
}

// Digest is the MultisetDigest of the committed lines.
func (c *DigestCommitter) Digest() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.d.String()
}

// txn is output a sink staged for one checkpoint, committed when that
// checkpoint (or a later one) completes.
type txn struct {
	ID         string   `msgpack:"id"`
	Checkpoint int64    `msgpack:"checkpoint"`
	Lines      []string `msgpack:"lines"`
}

// sinkTxns is one sink subtask's staged transactions, shared between the
// subtask (which stages) and the coordinator (which commits).
type sinkTxns struct {
	mu      sync.Mutex
	pending []txn
}

func (s *sinkTxns) stage(t txn) []txn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(t.Lines) > 0 {
		s.pending = append(s.pending, t)
	}
	return slices.Clone(s.pending)
}

// commit commits, in order, every staged txn of a checkpoint up to id.
func (s *sinkTxns) commit(c Committer, id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.pending {
		if t.Checkpoint > id {
			break
		}
		if err := c.Commit(t.ID, t.Lines); err != nil {
			s.pending = s.pending[n:]
			return err
		}
		n++
	}
	s.pending = s.pending[n:]
	return nil
}
