package runtime

import (
	"fmt"
	"io"
	"time"

	"github.com/stateutil/stateutil/runtime/rocksstate"
	"github.com/stateutil/stateutil/snapshot"
)

// Options configure one run of a job.
type Options struct {
	// Parallelism of every operator without its own (default 1).
	Parallelism int
	// MaxParallelism is the number of key groups; 0 = the restored
	// snapshot's, else Flink's default for Parallelism.
	MaxParallelism int
	// Backend holds keyed state (default HeapStateBackend).
	Backend StateBackend
	// Registry knows the formats and storages checkpoints, savepoints and
	// restores use; required.
	Registry *snapshot.Registry
	// Format is the snapshot format name of checkpoints and savepoints
	// (default "memory"); Flink's names work too (Registry.Lookup).
	Format string
	// CheckpointDir is where checkpoints go, as <dir>/<job-id>/chk-N[.dump];
	// "" keeps none (output is still committed at the end).
	CheckpointDir string
	// CheckpointEvery triggers a checkpoint every N source records;
	// CheckpointInterval every T. Zero disables either.
	CheckpointEvery    int64
	CheckpointInterval time.Duration
	// Retain is how many completed checkpoints are kept (default 1).
	Retain int
	// Savepoint, when set, is where the job's final snapshot is written as
	// a savepoint (stop with savepoint).
	Savepoint string
	// Restore is a snapshot to start from (any format snapshot.Open reads).
	Restore string
	// AllowNonRestoredState lets a restore skip state of operators the job
	// does not have.
	AllowNonRestoredState bool
	// JobID names the job's checkpoint directory; default random. Reuse it
	// to continue a failed job in the same directory.
	JobID string
	// Clock is the processing-time clock of TTL (default SystemClock).
	Clock Clock
	// Committer receives the sinks' output (default a DigestCommitter).
	Committer Committer
	// Failure injects an error into one subtask (tests).
	Failure *Failure
	// Progress, when set, is called a few times a second.
	Progress func(Progress)
	// Log receives one line per failed checkpoint; nil discards them.
	Log io.Writer
	// BatchSize and ChannelCapacity size the channels between subtasks:
	// records per message (default 64) and messages per channel (default 8).
	BatchSize, ChannelCapacity int
}

// Failure makes subtask Subtask of operator Operator (a uid) fail with
// ErrInjectedFailure when it is about to handle its AtRecord-th record
// (counted from 1), or, with AfterCheckpoint N, at its first record or
// the end of its input after it passed checkpoint N's barrier and that
// checkpoint completed (or failed): a failure with a checkpoint behind it
// whatever the timing.
type Failure struct {
	Operator        string
	Subtask         int
	AtRecord        int64
	AfterCheckpoint int64
}

// Progress is a running job's figures so far.
type Progress struct {
	Records     int64
	Checkpoints int
	Elapsed     time.Duration
}

// ResultSchemaVersion is the version of the Result JSON document.
const ResultSchemaVersion = 1

// Result is what a run produced.
type Result struct {
	SchemaVersion      int             `json:"schema_version"`
	Job                string          `json:"job"`
	JobID              string          `json:"job_id"`
	Parallelism        int             `json:"parallelism"`
	MaxParallelism     int             `json:"max_parallelism"`
	Format             string          `json:"format"`
	RestoredFrom       string          `json:"restored_from,omitempty"`
	Records            int64           `json:"records"`
	Checkpoints        int             `json:"checkpoints"`
	FailedCheckpoints  int             `json:"failed_checkpoints"`
	LastCheckpoint     string          `json:"last_checkpoint,omitempty"`
	Savepoint          string          `json:"savepoint,omitempty"`
	CheckpointDuration []time.Duration `json:"checkpoint_durations_ns,omitempty"`
	StateEntries       int64           `json:"state_entries"`
	StateDigest        string          `json:"state_digest"`
	OutputLines        int64           `json:"output_lines"`
	OutputDigest       string          `json:"output_digest,omitempty"`
	Backend            string          `json:"backend"`
	Elapsed            time.Duration   `json:"elapsed_ns"`
	// Incremental lists the run's incremental checkpoints (the rocksdb
	// backend's), oldest first, those retention discarded since included.
	Incremental []IncrementalCheckpoint `json:"incremental_checkpoints,omitempty"`
}

// IncrementalCheckpoint is what one incremental checkpoint referenced,
// what it uploaded and what it reused from the checkpoints before it.
type IncrementalCheckpoint struct {
	ID int64 `json:"id"`
	rocksstate.UploadStats
}

// UploadedTotal sums what the run's incremental checkpoints uploaded.
func (r *Result) UploadedTotal() (files int, bytes int64) {
	for _, c := range r.Incremental {
		files += c.UploadedFiles
		bytes += c.UploadedBytes
	}
	return files, bytes
}

func (o *Options) normalize() error {
	if o.Registry == nil {
		return fmt.Errorf("%w: Options.Registry is required", ErrJob)
	}
	if o.Parallelism == 0 {
		o.Parallelism = 1
	}
	if o.Parallelism < 0 || o.MaxParallelism < 0 || o.Retain < 0 || o.CheckpointEvery < 0 || o.CheckpointInterval < 0 {
		return fmt.Errorf("%w: parallelism, max parallelism, retain and checkpoint frequency cannot be negative", ErrJob)
	}
	if o.Retain == 0 {
		o.Retain = 1
	}
	if o.Format == "" {
		o.Format = "memory"
	}
	if o.Backend == nil {
		o.Backend = HeapStateBackend{}
	}
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 64
	}
	if o.ChannelCapacity <= 0 {
		o.ChannelCapacity = 8
	}
	return nil
}
