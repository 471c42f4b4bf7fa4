package render

import (
	"fmt"
	"io"
	"time"

	"github.com/stateutil/stateutil/runtime"
)

func RunSummary(w io.Writer, r *runtime.Result) {
	fmt.Fprintf(w, "Job:          %s (job id %s)\n", r.Job, r.JobID)
	fmt.Fprintf(w, "Parallelism:  %d (max parallelism %d)\n", r.Parallelism, r.MaxParallelism)
	fmt.Fprintf(w, "Backend:      %s state, %s format\n", r.Backend, r.Format)
	if r.RestoredFrom != "" {
		fmt.Fprintf(w, "Restored:     %s\n", r.RestoredFrom)
	}
	rate := ""
	if s := r.Elapsed.Seconds(); s > 0 {
		rate = fmt.Sprintf(" (%.0f records/s)", float64(r.Records)/s)
	}
	fmt.Fprintf(w, "Records:      %d in %s%s\n", r.Records, r.Elapsed.Round(time.Millisecond), rate)
	fmt.Fprintf(w, "Checkpoints:  %d written, %d failed", r.Checkpoints, r.FailedCheckpoints)
	if r.LastCheckpoint != "" && r.Savepoint == "" {
		fmt.Fprintf(w, "; latest %s", r.LastCheckpoint)
	}
	fmt.Fprintln(w)
	incremental(w, r.Incremental)
	if r.Savepoint != "" {
		fmt.Fprintf(w, "Savepoint:    %s\n", r.Savepoint)
	}
	fmt.Fprintf(w, "State:        %d entries, digest %s\n", r.StateEntries, r.StateDigest)
	fmt.Fprintf(w, "Output:       %d lines committed, digest %s\n", r.OutputLines, r.OutputDigest)
}

// maxIncrementalLines bounds the per-checkpoint lines of the summary; the
// JSON output lists every checkpoint.
const maxIncrementalLines = 10

// incremental tells what the incremental checkpoints uploaded and
// what they reused from the checkpoints before them: the last one and the
// total, then one line per checkpoint (the newest maxIncrementalLines).
func incremental(w io.Writer, cs []runtime.IncrementalCheckpoint) {
	if len(cs) == 0 {
		return
	}
	last := cs[len(cs)-1]
	var total int64
	for _, c := range cs {
		total += c.UploadedBytes
	}
	fmt.Fprintf(w, "Incremental:  last checkpoint uploaded %s of %s (%s reused); %s uploaded by %s\n",
		Bytes(last.UploadedBytes), Bytes(last.Bytes), Plural(last.ReusedFiles, "file"), Bytes(total), Plural(len(cs), "checkpoint"))
	if len(cs) > maxIncrementalLines {
		fmt.Fprintf(w, "              (%s not shown)\n", Plural(len(cs)-maxIncrementalLines, "earlier checkpoint"))
		cs = cs[len(cs)-maxIncrementalLines:]
	}
	width := len(fmt.Sprint(cs[len(cs)-1].ID))
	for _, c := range cs {
		fmt.Fprintf(w, "              chk-%-*d uploaded %s of %s; SST files: %d uploaded (%s), %d reused (%s)\n",
			width, c.ID, Bytes(c.UploadedBytes), Bytes(c.Bytes),
			c.SharedFiles-c.ReusedFiles, Bytes(c.SharedBytes-c.ReusedBytes), c.ReusedFiles, Bytes(c.ReusedBytes))
	}
}
