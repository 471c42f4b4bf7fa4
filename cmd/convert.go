package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stateutil/stateutil/cmd/internal/render"
	"github.com/stateutil/stateutil/migrate"
)

type convertOptions struct {
	source   sourceFlags
	expiry   expiryFlags
	report   outputFlag
	to       string
	output   string
	force    bool
	stateCap sizeFlag
	verify   bool
	quiet    bool
	shard    shardFlags
}

// copySchemasHelp is what the help of the copies says of the schemas
// they take.
const copySchemasHelp = `A Flink changelog checkpoint taken before its state backend first materialized records no
key serializer for some operators (SQL operators, keyed by rows), and its copy would name
none: --key-serializers-from SNAPSHOT takes them from a savepoint of the same job, operator
by operator, where every key fits, and the copy records them (see docs/flink.md: "Checkpoints
that record no key serializer"). A heap snapshot (hashmap, native) does not delimit values
of classes Kryo writes field by field: --kryo-classes FILE gives their fields, so that the
copy can tell them apart (and --proto-descriptors FILE the Protobuf messages).`

// inFlightHelp is what convert's help says of an unaligned
// checkpoint's data in flight.
const inFlightHelp = `An unaligned checkpoint holds data in flight: records in its subtasks' input channels
and result subpartitions, which Flink hands back to the same channels on restore. --to
flink carries them into the savepoint as they are, channel by channel (buffers Flink kept
in _metadata stay there, those in files are copied into files of DST), wherever the job's
shape stays: the same operators, parallelism and max parallelism, within the Flink major
that took the checkpoint. What changes the shape cannot carry them: Flink redistributes
them on restore by comparing the checkpoint's parallelism with the job's and filtering
records by key group in the receiving subtasks, by the job's key selectors and topology,
which the checkpoint does not record. So a rescale that changes any operator's
parallelism, operator remove and rename, state edits of an operator whose channels hold
records, --skip-unreadable dropping its state, --flink-version of the other major and
any other format refuse a checkpoint whose channels hold records (exit 4), saying why;
channels whose buffers are all empty lose nothing and are left out of such copies.
Restore such a checkpoint in Flink, at any parallelism (Flink redistributes data in flight
itself), and take a savepoint (savepoints are aligned).`

// destinationHelp is what the help of every command that writes a
// snapshot says of DST.
const destinationHelp = `DST is claimed for this one writer, as the place it names once symbolic links and ".."
are resolved (on local disk, its device and inode too): a second writer of that place,
by any name, fails with "held by another writer" (exit 1). DST is looked at before
anything is written, and a write that is refused changes nothing. A snapshot there is
refused unless --force, which replaces it whole, whatever its format, and replaces only
a snapshot: a file that is not one (a text file, an empty file), a directory without one
that is not empty, a snapshot beside files it does not use, or a snapshot stateutil
cannot read are refused, --force or not, naming what is there. What a write makes is
recorded first in a journal beside DST (.stateutil-writing-NAME); what a killed write
left, and only that, is removed by the next write to DST that goes ahead.`

func newConvertCommand(e *env) *cobra.Command {
	o := &convertOptions{}
	c := &cobra.Command{
		Use:   "convert SRC --to FORMAT --output DST",
		Short: "Convert a snapshot to another format",
		Long: `Convert a snapshot from any format stateutil reads to any format it writes,
streaming one subtask at a time. SRC is never modified; DST appears only when the whole
snapshot is written (its metadata is committed last and atomically).

` + destinationHelp + `

--to flink writes a Flink savepoint of a Flink checkpoint or savepoint: canonical (every
Flink state backend restores it, from a native RocksDB or incremental checkpoint too),
self-contained (absolute paths of the source become files inside DST), with everything
stateutil does not change carried over (operator names and uids, master and coordinator
state, serializer snapshots, TTL, timers, broadcast and raw state).

` + inFlightHelp + `

` + copySchemasHelp + `

Converting to the memory format fails before writing anything when a subtask holds more
state than the format's per-subtask cap. With --verify the result is read back and
compared with SRC entry by entry. A progress bar is shown on stderr when it is a
terminal, unless --quiet.

` + shardHelp + `

` + expiryHelp + `
` + exitCodeHelp,
		Example: `  stateutil convert ./snapshot.dump --to filesystem --output ./snapshot-fs
  stateutil convert hdfs://nn:9000/checkpoints/job/chk-7 --to jobmanager --output ./chk-7.dump --verify
  stateutil convert ./flink-chk --path-map file:/data/flink=/mnt/copy --to rocksdb --output ./rocks -o json
  stateutil convert ./job/chk-42 --to flink --flink-version 1.20 --output ./savepoint-portable
  stateutil convert ./job/chk-3 --key-serializers-from ./savepoint-9f89f7 --to flink --output ./savepoint-chk-3
  stateutil convert ./savepoint-heap-native --kryo-classes ./acme.kryo-classes --to rocksdb --output ./rocks
  stateutil convert ./savepoint-native --to flink --drop-expired-ttl-at 2026-12-01T00:00:00Z --ttl sessions=30m --output ./sp
  stateutil convert hdfs://nn:8020/sp/job-7 --to rocksdb --output hdfs://nn:8020/sp/job-7-rocks --yarn http://rm:8088 --shards 20`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.validate(e); err != nil {
				return err
			}
			defer limitHeap()()
			return o.run(c, e, args[0])
		},
		ValidArgsFunction: completeFiles,
	}
	o.report.add(c)
	o.source.add(c)
	o.source.addSkip(c)
	o.source.addFlinkVersion(c)
	o.expiry.add(c)
	f := c.Flags()
	f.StringVar(&o.to, "to", "", "format to write: "+strings.Join(e.reg.WritableNames(), ", "))
	f.StringVar(&o.output, "output", "", "where to write the converted snapshot (path, file://, hdfs://, s3://, gs://, abfss:// or wasbs:// URI)")
	f.BoolVar(&o.force, "force", false, "replace the snapshot at --output, whatever its format (only a snapshot: anything else there is refused)")
	addStateSizeCap(f, &o.stateCap)
	f.BoolVar(&o.verify, "verify", false, "read the result back and compare it with SRC entry by entry")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress bar")
	o.shard.add(c)
	_ = c.RegisterFlagCompletionFunc("to", e.completeFormats)
	return c
}

func (o *convertOptions) validate(e *env) error {
	if err := o.report.validate(); err != nil {
		return err
	}
	if o.to == "" {
		return usageErrorf("--to is required (one of %s)", strings.Join(e.reg.WritableNames(), ", "))
	}
	if _, err := e.reg.Writable(o.to); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if o.output == "" {
		return usageErrorf("--output is required")
	}
	return o.shard.validate(false)
}

func (o *convertOptions) run(c *cobra.Command, e *env, src string) error {
	req, err := o.source.request(src, &o.expiry)
	if err != nil {
		return err
	}
	req.Destination, req.Format, req.Force, req.Verify, req.StateSizeCap = o.output, o.to, o.force, o.verify, o.stateCap.bytes
	if o.shard.active() {
		return o.shard.run(c, e, req, o.report, func(res *migrate.Result) error { return o.print(c, src, res) })
	}
	bar := e.newProgress(c.ErrOrStderr(), o.quiet, "converting")
	req.Start, req.Progress = bar.start, bar.add
	res, err := migrate.Run(c.Context(), e.reg, req)
	bar.finish()
	if err != nil {
		return err
	}
	return o.print(c, src, res)
}

func (o *convertOptions) print(c *cobra.Command, src string, res *migrate.Result) error {
	warnDropped(c.ErrOrStderr(), res.Dropped)
	if o.report.json() {
		return render.JSON(c.OutOrStdout(), render.ConvertReport(res))
	}
	t := res.Totals
	carried, verified := "", ""
	if res.Plan.InFlight != nil {
		carried = fmt.Sprintf(", data in flight of %d channels (%s) carried", t.InFlightChannels, render.Bytes(t.InFlightBytes))
	}
	if res.Verified {
		verified = ", verified"
	}
	fmt.Fprintf(c.OutOrStdout(), "converted %s (%s) to %s (%s): %d operators, %d subtasks, %d keyed entries, %d operator-state elements, %s%s%s\n",
		src, res.From, o.output, res.Plan.Format, t.Operators, t.Subtasks, t.Entries, t.Elements, render.Bytes(t.Bytes), carried, verified)
	return nil
}
