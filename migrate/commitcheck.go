package migrate

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"

	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// checkReaders is how many staged files a commit reads at once: enough
// to keep an object store's round trips overlapped, few enough that the
// buffers stay small.
const checkReaders = 4

// checkAsks is how many staged files' CRC32Cs a commit asks a
// storage.Checksummer for at once: each costs the datanodes a read of the
// checksums beside every block and a round trip per block, and moves
// no data, so many overlap (a 10 TB copy has some 75,000 blocks of
// 128 MiB).
const checkAsks = 32

// checkSums checks every file the records list, once, and refuses the
// commit at the first (in record order) whose size or CRC32C is not the
// one its shard recorded, naming the file and the shard to run again.
// A storage that tells a file's CRC32C (HDFS) is asked for it, checkAsks
// files at a time, so that on HDFS the commit moves no staged data; any
// other is read, checkReaders files at a time, each through one buffer.
func checkSums(ctx context.Context, st storage.Storage, staging string, records []*ShardRecord) error {
	type job struct {
		shard int
		path  string
		ref   snapshot.FileRef
	}
	var jobs []job
	for _, rec := range records {
		for _, s := range rec.Subtasks {
			for _, f := range s.Files {
				jobs = append(jobs, job{rec.Shard, path.Join(staging, f.Path), f})
			}
		}
	}
	errs := make([]error, len(jobs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var wg sync.WaitGroup
	workers := checkReaders
	if _, ok := st.(storage.Checksummer); ok {
		workers = checkAsks
	}
	for range min(workers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1<<20)
			for i := range next {
				j := jobs[i]
				if errs[i] = checkSum(ctx, st, j.path, j.ref, buf); errs[i] != nil && !errors.Is(errs[i], context.Canceled) {
					errs[i] = fmt.Errorf("%w: shard %d: %w; run shard %d again", ErrShardsIncomplete, j.shard, errs[i], j.shard)
					cancel()
				}
			}
		}()
	}
feed:
	for i := range jobs {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return context.Cause(ctx)
}

// checkSum reads the file at p through buf and compares its size and
// CRC32C with ref's.
func checkSum(ctx context.Context, st storage.Storage, p string, ref snapshot.FileRef, buf []byte) error {
	n, crc, err := storage.FileCRC32C(ctx, st, p, buf)
	switch {
	case err != nil:
		return err
	case n != ref.Size:
		return snapshot.Corrupt(st.URI(p), min(n, ref.Size), "%d bytes, recorded as %d", n, ref.Size)
	case crc != ref.CRC32C:
		return snapshot.Corrupt(st.URI(p), -1, "%d bytes with crc32c %08x, recorded as %08x (damaged since it was written)", n, crc, ref.CRC32C)
	}
	return nil
}

// fileSum is the size and CRC32C of the file at p: from the storage
// where it tells them without sending the bytes (HDFS), else read through.
func fileSum(ctx context.Context, st storage.Storage, p string) (int64, uint32, error) {
	return storage.FileCRC32C(ctx, st, p, make([]byte, 1<<20))
}

// checkCounts refuses records whose figures do not add up to what the
// plan makes exact: per operator written, the keyed entries of the source
// (a rescale or a max-parallelism change moves every entry; only
// dropping expired entries makes fewer, and an estimated plan of a source
// without figures knows no exact total), and per new subtask and
// operator state the elements its assignment gives it.
func checkCounts(src *snapshot.Snapshot, plan *Plan, sp *ShardPlan, records []*ShardRecord) error {
	type key struct{ op, sub int }
	written := map[key]*snapshot.Subtask{}
	for _, rec := range records {
		for _, s := range rec.Subtasks {
			if s.Subtask == nil {
				return fmt.Errorf("%w: shard %d recorded operator %q subtask %d without figures; run shard %d again", ErrShardsIncomplete, rec.Shard, s.Operator, s.Index, rec.Shard)
			}
			written[key{s.PlanOperator, s.Index}] = s.Subtask
		}
	}
	for i, op := range plan.Operators {
		if plan.output(i) == nil {
			continue
		}
		var got int64
		elements, perState := map[string]int64{}, true
		for j := range op.Subtasks {
			sub := written[key{i, j}]
			if sub == nil {
				return fmt.Errorf("%w: no shard recorded operator %q subtask %d", ErrPlanMismatch, op.Label(), j)
			}
			got += sub.Keyed.Entries
			if err := checkElements(op.Label(), j, sub, op.OperatorStates); err != nil {
				return err
			}
			for name, n := range sub.OperatorElements {
				elements[name] += n
			}
			perState = perState && (sub.OperatorElements != nil || sub.Operator.Known && sub.Operator.Entries == 0)
		}
		for _, st := range src.Operators[i].OperatorStates {
			if want, exact := sourceElements(src.Operators[i], st, op.New.Parallelism); perState && exact && elements[st.Name] != want {
				return fmt.Errorf("%w: operator %q: the shards wrote %d elements of operator state %q, the source's give %d", ErrPlanMismatch, op.Label(), elements[st.Name], st.Name, want)
			}
		}
		if want, exact := sourceEntries(src.Operators[i], &op, sp); exact && got != want {
			return fmt.Errorf("%w: operator %q: the shards wrote %d keyed entries, the source holds %d", ErrPlanMismatch, op.Label(), got, want)
		}
	}
	return nil
}

// sourceEntries is the number of keyed entries op's copy must hold, and
// whether it is exact.
func sourceEntries(op *snapshot.Operator, p *redistribute.OperatorPlan, sp *ShardPlan) (int64, bool) {
	if sp.DropExpired != nil {
		return 0, false
	}
	var n int64
	for _, sub := range op.Subtasks {
		if !sub.Keyed.Known {
			// Counted while planning, unless estimated.
			return p.KeyedEntries, !p.Estimated
		}
		n += sub.Keyed.Entries
	}
	return n, true
}

// sourceElements is the number of elements of operator state st that
// op's copy at parallelism newP stores, and whether the source's metadata
// makes it exact: split and union state keep every element once (union
// state is unioned again on restore), broadcast state gives new subtask j
// old subtask j%oldP's.
func sourceElements(op *snapshot.Operator, st snapshot.OperatorState, newP int) (int64, bool) {
	counts := make([]int64, len(op.Subtasks))
	for i, sub := range op.Subtasks {
		if sub.OperatorElements == nil && !(sub.Operator.Known && sub.Operator.Entries == 0) {
			return 0, false
		}
		counts[i] = sub.OperatorElements[st.Name]
	}
	var n int64
	switch {
	case len(counts) == 0:
	case st.Mode == snapshot.Broadcast:
		for j := range newP {
			n += counts[j%len(counts)]
		}
	default:
		for _, c := range counts {
			n += c
		}
	}
	return n, true
}

// checkElements refuses a written subtask j of an operator whose
// operator-state elements are not those its assignment gives it: per
// state where the writer counts them so, else in all.
func checkElements(label string, j int, sub *snapshot.Subtask, states []redistribute.OperatorStatePlan) error {
	var total int64
	for _, st := range states {
		var want int64
		for _, pc := range st.Assignment[j] {
			want += pc.Count
		}
		total += want
		if got := sub.OperatorElements[st.Name]; sub.OperatorElements != nil && got != want {
			return fmt.Errorf("%w: operator %q subtask %d: the shard wrote %d elements of operator state %q, its assignment gives it %d", ErrPlanMismatch, label, j, got, st.Name, want)
		}
	}
	if sub.Operator.Known && sub.Operator.Entries != total {
		return fmt.Errorf("%w: operator %q subtask %d: the shard wrote %d operator-state elements, its assignment gives it %d", ErrPlanMismatch, label, j, sub.Operator.Entries, total)
	}
	return nil
}

// writtenTotals sums what the shards' records say they wrote.
func writtenTotals(plan *Plan, records []*ShardRecord) Totals {
	var t Totals
	for i := range plan.Operators {
		if plan.output(i) != nil {
			t.Operators++
		}
	}
	for _, rec := range records {
		for _, s := range rec.Subtasks {
			sub := s.Subtask
			t.Subtasks++
			t.Entries += sub.Keyed.Entries
			t.Elements += sub.Operator.Entries
			t.Bytes += sub.Keyed.Bytes + sub.Operator.Bytes + sub.RawKeyedBytes + sub.RawOperatorBytes
		}
	}
	return t
}
