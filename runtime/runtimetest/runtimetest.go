// Package runtimetest has what tests of jobs on the runtime use: a clock
// they move by hand and a committer that keeps the output in memory.
package runtimetest

import (
	"slices"
	"sync"
	"time"
)

// ManualClock is a clock tests move by hand. It is safe for concurrent use.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock returns a clock standing at t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{now: t} }

// Now implements runtime.Clock.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// MemoryCommitter keeps committed output in memory. It is safe for
// concurrent use and survives job restarts when the caller keeps it.
type MemoryCommitter struct {
	mu    sync.Mutex
	txns  map[string]bool
	lines []string
}

// NewMemoryCommitter returns an empty committer.
func NewMemoryCommitter() *MemoryCommitter { return &MemoryCommitter{txns: map[string]bool{}} }

// Commit implements runtime.Committer.
func (m *MemoryCommitter) Commit(txn string, lines []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.txns[txn] {
		return nil
	}
	m.txns[txn] = true
	m.lines = append(m.lines, lines...)
	return nil
}

// Clone copies the committer: what it committed and which txns.
func (m *MemoryCommitter) Clone() *MemoryCommitter {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &MemoryCommitter{txns: make(map[string]bool, len(m.txns)), lines: slices.Clone(m.lines)}
	for k := range m.txns {
		c.txns[k] = true
	}
	return c
}

// Lines returns the committed lines, sorted (their order across subtasks
// is not deterministic).
func (m *MemoryCommitter) Lines() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.lines)
	slices.Sort(out)
	return out
}

// Count is the number of committed lines.
func (m *MemoryCommitter) Count() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(len(m.lines))
}
