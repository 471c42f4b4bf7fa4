package redistribute

import (
	"bufio"
	"context"
	"fmt"
	"os"

	"github.com/stateutil/stateutil/internal/tempdir"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// Options tune Open.
type Options struct {
	// TempDir holds the sorted runs a max-parallelism change spills;
	// "" is the system's temporary directory.
	TempDir string
	// MemoryLimit bounds the entries held in memory while re-hashing;
	// 0 is DefaultMemoryLimit.
	MemoryLimit int64
	// Codecs hash keys to their new key groups when max parallelism
	// changes.
	Codecs *snapshot.Codecs
	// SkipKeyed leaves keyed state to the caller (a writer's fast path):
	// nothing is re-hashed, and Entries must not be called.
	SkipKeyed bool
	// Only, when set, lists (ascending) the new subtasks that will be
	// asked for, one shard's part: a max-parallelism change then reads only
	// the old key groups that can feed them (see feeding) and keeps only
	// their entries. Entries of any other subtask yields nothing.
	Only []int
}

// Assignment is what each new subtask of one operator restores. The stream
// runtime restores from it directly; a rescale writes it to a snapshot.
// Entries and Elements may be called for any subtask, in any order, any
// number of times, until Close.
type Assignment struct {
	r      snapshot.Reader
	op     *snapshot.Operator
	target Target
	pieces [][][]Piece // [new subtask][state]
	// keepRaw: the parallelism stays, so each subtask keeps its raw state.
	keepRaw bool

	// Set when max parallelism changed: the re-hashed entries of each new
	// subtask, in memory (small state) or in files under tmp.
	rehashed [][]snapshot.Entry
	files    []string
	tmp      *tempdir.Dir
}

// Open prepares op (an operator of r's snapshot) to be restored at target,
// as Flink restores it: Elements gives each subtask its slice of split
// state, every element of union state, and its copy of broadcast state.
// For a plain restore at a new parallelism pass
// Target{Parallelism: p, MaxParallelism: op.MaxParallelism}. When max
// parallelism changes, Open reads and re-hashes every entry up front,
// spilling sorted runs to opts.TempDir so memory stays bounded.
//
// It refuses raw state unless nothing changes, key types without a known
// hash when max parallelism changes (both ErrNotRedistributable), and
// impossible targets (keygroup.ErrInvalidParallelism).
func Open(ctx context.Context, r snapshot.Reader, op *snapshot.Operator, target Target, opts Options) (*Assignment, error) {
	if err := keygroup.Check(target.Parallelism, target.MaxParallelism); err != nil {
		return nil, fmt.Errorf("operator %q: %w", op.Label(), err)
	}
	counts, _, err := elementCounts(ctx, r, op)
	if err != nil {
		return nil, fmt.Errorf("operator %q: %w", op.Label(), err)
	}
	return OpenPlanned(ctx, r, op, target, AssignOperatorState(op.OperatorStates, counts, op.Parallelism, target.Parallelism), opts)
}

// OpenPlanned is Open with the operator-state pieces of every new subtask
// given, as an OperatorPlan's assignments list them: a rescale writes
// what each new subtask stores (union state once), where a restore takes
// what each restores.
func OpenPlanned(ctx context.Context, r snapshot.Reader, op *snapshot.Operator, t Target, pieces [][][]Piece, opts Options) (*Assignment, error) {
	old := Target{Parallelism: op.Parallelism, MaxParallelism: op.MaxParallelism}
	a := &Assignment{r: r, op: op, target: t, pieces: pieces, keepRaw: old.Parallelism == t.Parallelism}
	probe := &OperatorPlan{Action: action(old, t), Subtasks: make([]SubtaskPlan, t.Parallelism)}
	if err := planRaw(probe, op); err != nil {
		return nil, fmt.Errorf("operator %q: %w", op.Label(), err)
	}
	if t.MaxParallelism != old.MaxParallelism && len(op.KeyedStates) > 0 && !opts.SkipKeyed {
		if err := a.rehash(ctx, opts); err != nil {
			a.Close()
			return nil, fmt.Errorf("operator %q: %w", op.Label(), err)
		}
	}
	return a, nil
}

// Parallelism is the number of new subtasks.
func (a *Assignment) Parallelism() int { return a.target.Parallelism }

// KeyGroups is new subtask i's key-group range.
func (a *Assignment) KeyGroups(i int) keygroup.Range {
	return keygroup.RangeOf(a.target.MaxParallelism, a.target.Parallelism, i)
}

// Entries streams new subtask i's keyed entries in non-decreasing
// key-group order, with key groups for the target max parallelism.
func (a *Assignment) Entries(ctx context.Context, i int) snapshot.Entries {
	switch {
	case a.rehashed != nil:
		return sliceEntries(a.rehashed[i])
	case a.files != nil:
		return fileEntries(a.files[i])
	}
	kgs := a.KeyGroups(i)
	return func(yield func(snapshot.Entry, error) bool) {
		for _, sub := range a.op.Subtasks {
			part := sub.KeyGroups.Intersect(kgs)
			if part.Len() == 0 || len(a.op.KeyedStates) == 0 {
				continue
			}
			for e, err := range a.r.Entries(ctx, a.op, sub.Index, part) {
				if err != nil {
					yield(snapshot.Entry{}, fmt.Errorf("operator %q subtask %d: %w", a.op.Label(), sub.Index, err))
					return
				}
				if !yield(e, nil) {
					return
				}
			}
		}
	}
}

// Elements streams new subtask i's operator-state elements, state by
// state in descriptor order; each Element's Subtask is i.
func (a *Assignment) Elements(ctx context.Context, i int) snapshot.Elements {
	return func(yield func(snapshot.Element, error) bool) {
		for s, st := range a.op.OperatorStates {
			for _, pc := range a.pieces[i][s] {
				var n int64
				for el, err := range a.r.Elements(ctx, a.op, pc.OldSubtask) {
					if err != nil {
						yield(snapshot.Element{}, fmt.Errorf("operator %q subtask %d: %w", a.op.Label(), pc.OldSubtask, err))
						return
					}
					if el.State != st.Name {
						continue
					}
					if n >= pc.Start && n < pc.Start+pc.Count {
						el.Subtask = i
						if !yield(el, nil) {
							return
						}
					}
					n++
					if n >= pc.Start+pc.Count {
						break
					}
				}
				if n < pc.Start+pc.Count {
					yield(snapshot.Element{}, snapshot.Corrupt(a.op.Label(), -1, "subtask %d has %d elements of operator state %q, metadata says at least %d",
						pc.OldSubtask, n, st.Name, pc.Start+pc.Count))
					return
				}
			}
		}
	}
}

// Raw is new subtask i's raw state: the old subtask's while the
// parallelism stays (Open refuses to move raw state), else none.
func (a *Assignment) Raw(ctx context.Context, i int) (snapshot.RawState, error) {
	if !a.keepRaw {
		return snapshot.RawState{}, nil
	}
	return a.r.Raw(ctx, a.op, i)
}

// Close removes temporary files.
func (a *Assignment) Close() error {
	err := a.tmp.Remove()
	a.tmp, a.files = nil, nil
	return err
}

// spillPrefix starts the name of a rehash's spill directory (tempdir).
const spillPrefix = "stateutil-rehash-"

// rehash hashes every entry to its new key group, sorts stably by it in
// bounded memory, and cuts the result into the new subtasks.
func (a *Assignment) rehash(ctx context.Context, opts Options) error {
	if err := checkHashable(a.op, opts.Codecs); err != nil {
		return err
	}
	tmp, err := tempdir.New(ctx, opts.TempDir, spillPrefix)
	if err != nil {
		return err
	}
	a.tmp = tmp
	s := &sorter{dir: tmp.Path, limit: cmpOr(opts.MemoryLimit, DefaultMemoryLimit)}
	add := s.add
	if opts.Only != nil {
		keep := make([]bool, a.target.Parallelism)
		for _, j := range opts.Only {
			keep[j] = true
		}
		add = func(e *snapshot.Entry) error {
			if !keep[keygroup.SubtaskOf(e.KeyGroup, a.target.MaxParallelism, a.target.Parallelism)] {
				return nil
			}
			return s.add(e)
		}
	}
	for _, sub := range a.op.Subtasks {
		runs := []keygroup.Range{sub.KeyGroups}
		if opts.Only != nil {
			runs = feeding(sub.KeyGroups, a.op.MaxParallelism, a.target, opts.Only)
		}
		for _, kgs := range runs {
			if err := rehashedIn(ctx, a.r, a.op, sub, kgs, a.target, opts.Codecs, add); err != nil {
				return err
			}
		}
	}
	if err := s.finish(); err != nil {
		return err
	}
	n := a.target.Parallelism
	subtaskOf := func(kg int) int { return keygroup.SubtaskOf(kg, a.target.MaxParallelism, n) }
	if s.inMemory() {
		a.rehashed = make([][]snapshot.Entry, n)
		start := 0
		for j := range n {
			end := start
			for end < len(s.buf) && subtaskOf(s.buf[end].KeyGroup) == j {
				end++
			}
			a.rehashed[j] = s.buf[start:end:end]
			start = end
		}
		return nil
	}
	return a.cut(s, subtaskOf)
}

// cut merges the sorter's runs into one file per new subtask.
func (a *Assignment) cut(s *sorter, subtaskOf func(int) int) error {
	a.files = make([]string, a.target.Parallelism)
	for j := range a.files {
		a.files[j] = fmt.Sprintf("%s/subtask-%d", a.tmp.Path, j)
	}
	var f *os.File
	var w *bufio.Writer
	cur := -1
	closeCur := func() error {
		if f == nil {
			return nil
		}
		err := w.Flush()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		f = nil
		return err
	}
	err := s.merge(func(e *snapshot.Entry) error {
		if j := subtaskOf(e.KeyGroup); j != cur {
			if err := closeCur(); err != nil {
				return err
			}
			var err error
			if f, err = os.Create(a.files[j]); err != nil {
				return err
			}
			w, cur = bufio.NewWriterSize(f, 1<<16), j
		}
		return writeEntry(w, e)
	})
	if cerr := closeCur(); err == nil {
		err = cerr
	}
	for _, name := range s.runs {
		os.Remove(name)
	}
	return err
}

func sliceEntries(es []snapshot.Entry) snapshot.Entries {
	return func(yield func(snapshot.Entry, error) bool) {
		for _, e := range es {
			if !yield(e, nil) {
				return
			}
		}
	}
}

func fileEntries(name string) snapshot.Entries {
	return func(yield func(snapshot.Entry, error) bool) {
		f, err := os.Open(name)
		if os.IsNotExist(err) {
			return // no entry landed in this subtask
		}
		if err != nil {
			yield(snapshot.Entry{}, err)
			return
		}
		defer f.Close()
		r := bufio.NewReaderSize(f, 1<<16)
		for {
			var e snapshot.Entry
			ok, err := (&run{r: r}).nextInto(&e)
			if err != nil {
				yield(snapshot.Entry{}, err)
				return
			}
			if !ok || !yield(e, nil) {
				return
			}
		}
	}
}

func cmpOr(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}
