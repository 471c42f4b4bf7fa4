package runtime

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// Record is one element flowing through a job.
type Record struct {
	// Key is the record's key once a keyBy gave it one.
	Key string
	// Value is the payload; records never leave the process, so any Go
	// value will do.
	Value any

	kg int // key group of Key, set by keyBy
}

// Collector receives the records an operator emits.
type Collector interface {
	Collect(r Record) error
}

// KeyedFunction is the user logic of a keyed operator. Open runs once per
// subtask before any record (register state there); Process runs per
// record with keyed state scoped to the record's key.
type KeyedFunction interface {
	Open(ctx *Context) error
	Process(ctx *Context, r Record, out Collector) error
}

// Job is a chain: a source, keyed stages each reached by a keyBy, a sink.
type Job struct {
	Name   string
	Source SourceSpec
	Stages []StageSpec
	Sink   SinkSpec
}

// SourceSpec is the job's partitioned, replayable source.
type SourceSpec struct {
	UID, Name string
	// Parallelism overrides the job parallelism when > 0.
	Parallelism int
	Source      Source
	// Mode is how the (partition, offset) list state is redistributed:
	// snapshot.Split (default) or snapshot.Union.
	Mode snapshot.Mode
	// FlatMap, when set, is a stateless step chained into the source: it
	// turns each read record into any number of records.
	FlatMap func(r Record, emit func(Record))
}

// StageSpec is one keyed operator.
type StageSpec struct {
	UID, Name string
	// Parallelism overrides the job parallelism when > 0.
	Parallelism int
	// KeyBy extracts the key the records are partitioned and scoped by.
	KeyBy func(r Record) string
	// New creates the function of one subtask.
	New func() KeyedFunction
}

// SinkSpec is the job's transactional sink. Format renders a record as a
// line of output; lines are committed to the run's Committer when the
// checkpoint after them completes.
type SinkSpec struct {
	UID, Name   string
	Parallelism int
	Format      func(r Record) string
}

// Names of the operator states the runtime keeps.
const (
	// OffsetsState is a source's (partition, offset) list.
	OffsetsState = "partition-offsets"
	// PendingCommitsState is a sink's staged, uncommitted output.
	PendingCommitsState = "pending-commits"
)

type opKind int

const (
	sourceOp opKind = iota
	stageOp
	sinkOp
)

// vertex is one operator of a running job.
type vertex struct {
	kind        opKind
	index       int // position in the chain
	uid, name   string
	id          string // hex operator id, derived from the uid
	parallelism int
	stage       *StageSpec
}

// operatorID derives a Flink-style 16-byte operator id from a uid.
func operatorID(uid string) string {
	sum := md5.Sum([]byte("stateutil-operator:" + uid))
	return hex.EncodeToString(sum[:])
}

// plan validates the job and lays out its vertices at parallelism p.
func (j *Job) plan(p, maxP int) ([]*vertex, error) {
	if j.Source.Source == nil || j.Source.UID == "" {
		return nil, fmt.Errorf("%w: job %q needs a source with a uid", ErrJob, j.Name)
	}
	if len(j.Stages) == 0 || j.Sink.UID == "" || j.Sink.Format == nil {
		return nil, fmt.Errorf("%w: job %q needs at least one keyed stage and a sink with a uid and a format", ErrJob, j.Name)
	}
	par := func(own int) int {
		if own > 0 {
			return own
		}
		return p
	}
	vs := []*vertex{{kind: sourceOp, uid: j.Source.UID, name: j.Source.Name, parallelism: par(j.Source.Parallelism)}}
	for i := range j.Stages {
		s := &j.Stages[i]
		if s.UID == "" || s.KeyBy == nil || s.New == nil {
			return nil, fmt.Errorf("%w: stage %d of job %q needs a uid, KeyBy and New", ErrJob, i, j.Name)
		}
		vs = append(vs, &vertex{kind: stageOp, uid: s.UID, name: s.Name, parallelism: par(s.Parallelism), stage: s})
	}
	vs = append(vs, &vertex{kind: sinkOp, uid: j.Sink.UID, name: j.Sink.Name, parallelism: par(j.Sink.Parallelism)})
	seen := map[string]bool{}
	for i, v := range vs {
		if seen[v.uid] {
			return nil, fmt.Errorf("%w: uid %q is used twice", ErrJob, v.uid)
		}
		seen[v.uid] = true
		v.index, v.id = i, operatorID(v.uid)
		if err := keygroup.Check(v.parallelism, maxP); err != nil {
			return nil, fmt.Errorf("operator %q: %w", v.uid, err)
		}
	}
	switch j.Source.Mode {
	case "", snapshot.Split, snapshot.Union:
	default:
		return nil, fmt.Errorf("%w: source mode must be split or union, not %q", ErrJob, j.Source.Mode)
	}
	return vs, nil
}
