package formattest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/report"
	"github.com/stateutil/stateutil/snapshot/verify"
)

// hostileAllocLimit bounds what ReadHostile lets a read allocate. Inputs of
// fuzz targets are at most a few MiB, so a reader that allocates more has
// sized something by a length it did not check.
const hostileAllocLimit = 256 << 20

// boundedTimeLimit is hundreds of times what any read a test bounds
// takes, on any machine.
const boundedTimeLimit = time.Minute

// ReadHostile reads everything the commands can read of the snapshot at
// location, as inspect (every view), inspect --values and verify would:
// metadata, every keyed entry of every subtask in every key group, every
// operator-state element and the raw state, each decoded through
// reg.Codecs. It fails t when reading takes longer than a minute or
// allocates more than 256 MiB in all, and when a read fails with an error
// that is not damage (snapshot.ErrCorrupt), absence (snapshot.ErrNotFound)
// or an unsupported version (snapshot.ErrUnsupportedVersion): those three
// are what the commands' exit codes promise. A panic fails the fuzz target
// it runs in like any other. It returns the first error met (nil when the
// snapshot reads cleanly), so that callers can say more.
func ReadHostile(t testing.TB, reg *snapshot.Registry, location string) error {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	tmp := t.TempDir()
	var errs []error
	Bounded(t, "reading "+location, func() { errs = readEverything(context.Background(), reg, location, tmp) })
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > hostileAllocLimit {
		t.Fatalf("reading %s allocated %d MiB, more than the %d MiB bound", location, n>>20, hostileAllocLimit>>20)
	}
	for _, err := range errs {
		if !errors.Is(err, snapshot.ErrCorrupt) && !errors.Is(err, snapshot.ErrNotFound) && !errors.Is(err, snapshot.ErrUnsupportedVersion) {
			t.Fatalf("reading %s: an error that is neither damage, absence nor an unsupported version: %v", location, err)
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// Bounded runs f and fails t, naming what f does, when f has not returned
// within a minute: a reader that waits on a FIFO, or loops, would never
// return, and the test must fail rather than hang. f runs on another
// goroutine, so it must not call t.FailNow.
func Bounded(t testing.TB, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(boundedTimeLimit):
		t.Fatalf("%s took longer than %v", what, boundedTimeLimit)
	}
}

// readEverything reads all of location, going on past errors where the
// commands would (another subtask, another view), and returns them all.
func readEverything(ctx context.Context, reg *snapshot.Registry, location, tempDir string) []error {
	r, err := reg.Open(ctx, location, snapshot.OpenOptions{TempDir: tempDir})
	if err != nil {
		return []error{err}
	}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	defer func() { add(r.Close()) }()
	s := r.Snapshot()
	_, err = report.Summarize(ctx, location, r, true)
	add(err)
	_, err = report.KeyGroupDistribution(ctx, location, r, "")
	add(err)
	_, err = report.OperatorStateUsages(ctx, location, r, reg.Codecs, "", true)
	add(err)
	for _, op := range s.Operators {
		for _, sub := range op.Subtasks {
			add(readSubtask(ctx, reg.Codecs, r, op, sub.Index))
		}
	}
	_, err = verify.Check(ctx, location, r, reg.Codecs)
	add(err)
	return errs
}

// readSubtask reads and decodes all of one subtask's state, stopping at
// its first error.
func readSubtask(ctx context.Context, codecs *snapshot.Codecs, r snapshot.Reader, op *snapshot.Operator, index int) error {
	all := keygroup.Range{Start: 0, End: keygroup.UpperBoundMaxParallelism - 1}
	for e, err := range r.Entries(ctx, op, index, all) {
		if err != nil {
			return err
		}
		st, ok := op.KeyedStateByName(e.State)
		if !ok {
			continue
		}
		codecs.Decode(st.KeyType, e.Key)
		codecs.Decode(st.NamespaceType, e.Namespace)
		codecs.Decode(st.UserKeyType, e.UserKey)
		codecs.Decode(st.ValueType, e.Value)
		codecs.KeyGroupOf(st.KeyType, e.Key, op.MaxParallelism)
	}
	for el, err := range r.Elements(ctx, op, index) {
		if err != nil {
			return err
		}
		if st, ok := op.OperatorStateByName(el.State); ok {
			codecs.Decode(st.ElementType, el.Value)
		}
	}
	if _, err := r.Raw(ctx, op, index); err != nil {
		return fmt.Errorf("raw state: %w", err)
	}
	return nil
}
