package snapshot

import (
	"context"

	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/storage"
)

// Reader gives streaming access to one snapshot's state.
// Entries, Elements and Raw may run concurrently for different subtasks:
// dump and the copy pipeline read subtasks in parallel.
type Reader interface {
	// Snapshot is the metadata, read when the Reader was opened.
	Snapshot() *Snapshot
	// Entries streams a subtask's keyed entries whose key group lies in
	// kgs, in ascending key-group order, reading only those key groups
	// where the format allows.
	Entries(ctx context.Context, op *Operator, subtask int, kgs keygroup.Range) Entries
	// Elements streams a subtask's operator-state elements, state by state
	// in descriptor order, each state's elements in list order.
	Elements(ctx context.Context, op *Operator, subtask int) Elements
	// Raw returns a subtask's raw (user-serialized) state.
	Raw(ctx context.Context, op *Operator, subtask int) (RawState, error)
	// Close releases files and temporary directories.
	Close() error
}

// FormatRecorder is implemented by a Reader whose metadata records the
// name of the format that wrote it. Snapshot().Format is the format the
// snapshot was opened as; RecordedFormat is what the metadata says ("" when
// it says nothing), for verify to compare.
type FormatRecorder interface {
	RecordedFormat() string
}

// WholeChecker is implemented by a Reader whose format checksums the
// whole snapshot beyond the parts reading its state checks. CheckWhole
// reads it all, for verify, which reports each error that an
// errors.Join of several holds as a finding of its own.
type WholeChecker interface {
	CheckWhole(ctx context.Context) error
}

// Warner is implemented by a Reader that knows something of its snapshot
// that verify must say though it is no damage found: what leaves damage
// free to go unseen, such as the checksum manifest of a snapshot whose
// writer leaves one, gone. Each warning is one sentence naming the file.
type Warner interface {
	Warnings() []string
}

// UnrecordedKeys is implemented by a Reader whose snapshot does not record
// how some operators' keys are written (a Flink changelog checkpoint that
// has not materialized records no key serializer), so that their keys are
// walked but not decoded, or not read at all. KeysNotRecorded lists those
// operators' IDs, in the snapshot's order; another snapshot of the job
// that records their key serializers can give them
// (Schemas.KeySerializersFrom).
type UnrecordedKeys interface {
	KeysNotRecorded() []string
}

// KeyGroupHolder is implemented by a Reader that can keep a key group's
// entries valid together: HeldEntries streams what Entries does, but an
// entry's bytes stay valid until the yield of the next key group's first
// entry returns, not just until the next entry, so that a caller holding
// a key group need not copy it. After its entries it yields one whose
// KeyGroup is -1, nothing else set, while the last key group is valid (a
// read that finds no entries may leave it out).
// A key group's bytes are then in memory.
type KeyGroupHolder interface {
	HeldEntries(ctx context.Context, op *Operator, subtask int, kgs keygroup.Range) Entries
}

// CompanionFiler is implemented by a Reader whose snapshot directory holds
// files besides its metadata and its subtasks' files (Subtask.Files), such
// as a checksum manifest. CompanionFiles names them, relative to the
// snapshot's location, so that clearing what a killed writer left keeps
// them.
type CompanionFiler interface {
	CompanionFiles() []string
}

// FileFollower is implemented by a Reader whose metadata lists each
// subtask's files (Subtask.Files) apart from the references the reader
// follows to read its state. FollowedFiles returns the files the reader
// reads for a subtask, for verify to compare with the listing.
type FileFollower interface {
	FollowedFiles(op *Operator, subtask int) ([]FileRef, error)
}

// Writer builds a snapshot. Nothing is visible at its location until
// Commit succeeds; Abort (or a crash) leaves nothing a Reader accepts.
//
// Subtask may be called from several goroutines at once, so that
// subtasks are written concurrently; each SubtaskWriter it returns is
// used by one goroutine at a time. Commit and Abort come after every
// SubtaskWriter's last call has returned. The snapshot committed does not
// depend on the order subtasks were started or closed in.
type Writer interface {
	// Subtask starts writing one subtask of op (op as it will appear in
	// the committed snapshot; its Subtasks need not be filled in).
	Subtask(ctx context.Context, op *Operator, index int, kgs keygroup.Range) (SubtaskWriter, error)
	// Commit writes the metadata last and atomically. Subtasks' figures
	// and files are filled in from what was written.
	Commit(ctx context.Context, s *Snapshot) error
	// Abort discards everything written.
	Abort(ctx context.Context) error
}

// SubtaskWriter receives one subtask's state.
type SubtaskWriter interface {
	// Entry adds a keyed entry. Entries come in non-decreasing key-group
	// order; each must lie in the subtask's key-group range.
	Entry(e *Entry) error
	// Element appends an element to an operator state's list.
	Element(state string, value []byte) error
	// Raw sets the subtask's raw state.
	Raw(raw RawState) error
	// Close finishes the subtask; its figures go into the snapshot on Commit.
	Close() error
}

// InFlightCarrier is implemented by a Writer that carries the data in
// flight of an unaligned checkpoint (Subtask.InFlight) of its own format
// into a copy, channel for channel, as its Format.CarriesInFlight says:
// a copy that keeps the job's shape calls CarryInFlight for each subtask
// of the source that lists channels, with op the operator of r's
// snapshot and sw the new subtask of the same index, before closing sw.
type InFlightCarrier interface {
	CarryInFlight(ctx context.Context, r Reader, op *Operator, sw SubtaskWriter) error
}

// Unwrapper is implemented by a Reader that shows another reader's
// snapshot changed (edited, without part of its state): Unwrap is that
// reader, for a writer that carries what no Reader method streams
// (InFlightCarrier).
type Unwrapper interface {
	Unwrap() Reader
}

// Unwrapped is the reader beneath all of r's wrappers.
func Unwrapped(r Reader) Reader {
	for {
		u, ok := r.(Unwrapper)
		if !ok {
			return r
		}
		r = u.Unwrap()
	}
}

// OpenOptions tune how a snapshot is opened.
type OpenOptions struct {
	// PathMap rewrites absolute file references: each OLD prefix -> NEW.
	PathMap map[string]string
	// TempDir is where formats that must unpack files put them.
	TempDir string
	// Storage resolves locations a snapshot refers to beyond its own
	// directory (absolute paths and URIs a Flink checkpoint records).
	// Registry.Open sets it.
	Storage *storage.Registry
	// ChecksumReads has a format that checks each block it reads against
	// the block's own checksum (rocksdb) read a local file without first
	// reading all of it to check it against the metadata's CRC32C. Damage
	// in what is read still fails the read, before any of it is yielded,
	// but damage in parts no read touches goes unseen: for reads that show
	// state (dump), not for verify or copies.
	ChecksumReads bool
	// Schemas are what the user says about classes the snapshot names but
	// does not describe, for formats that must decode values to find
	// where they end. Registry.Open gives its codecs' when nil.
	Schemas *Schemas
}

// WriteOptions tune how a snapshot is written.
type WriteOptions struct {
	// Force replaces an existing snapshot at the location.
	Force bool
	// StateSizeCap limits the state per subtask (memory format); 0 = default.
	StateSizeCap int64
	// InlineThreshold is the size below which state is kept inside the
	// metadata file (filesystem format); 0 = default, negative = never.
	InlineThreshold int64
	// ReaderVersion is the version of the readers to write for ("" = what
	// the source was written for): for the flink format, the Flink
	// version X.Y that must restore the result.
	ReaderVersion string
	// Staging writes subtasks for another writer to commit (see Stager):
	// the writer names its files so that other staging writers at the same
	// location never collide with them, and is ended by Staged.
	Staging bool
}

// Format is one snapshot format. Its functions get the storage that holds
// the location and the path within it.
type Format struct {
	// Name is the canonical name; Aliases are also accepted (Flink's
	// backend config names, for example).
	Name    string
	Aliases []string
	// Summary is a one-line description for help texts.
	Summary string
	// Probe reports whether path holds a snapshot of this format. It
	// looks at magic bytes, never parses a whole file.
	Probe func(ctx context.Context, st storage.Storage, path string) (bool, error)
	// Open reads the snapshot at path.
	Open func(ctx context.Context, st storage.Storage, path string, opts OpenOptions) (Reader, error)
	// Describe reads only the metadata of the snapshot at path, never a
	// state file, and locates the files it references (opts.PathMap and
	// opts.Storage as for Open); its errors are Open's. Nil for a format
	// that cannot say what it holds without reading its state.
	Describe func(ctx context.Context, st storage.Storage, path string, opts OpenOptions) (*Description, error)
	// Create starts a new snapshot at path; nil for read-only formats.
	Create func(ctx context.Context, st storage.Storage, path string, opts WriteOptions) (Writer, error)
	// CheckWrite, if set, refuses before anything is written what the
	// format cannot write of s (the snapshot a copy would commit, without
	// subtasks) as opts ask; nil if it can.
	CheckWrite func(s *Snapshot, opts WriteOptions) error
	// CarriesInFlight, if set, says whether the format's writer carries
	// the data in flight of s, a snapshot of the format, into a copy that
	// keeps the job's shape, written as opts ask: "" if it does (its
	// Writer is an InFlightCarrier), else why not, a clause that follows
	// "which" (CheckNoInFlight). Nil for a format whose writer never does.
	CarriesInFlight func(s *Snapshot, opts WriteOptions) (whyNot string)
	// Upgrade, if set, carries a snapshot of the format to readers of
	// another major version (upgrade.go); nil if the format has none.
	Upgrade Upgrader
	// StateSizeCap is the default limit of state per subtask the format
	// accepts when writing; 0 for none.
	StateSizeCap int64
}

// KeyedCopier is implemented by a Writer that can build a new subtask's
// keyed state straight from an old snapshot's files, without decoding and
// re-encoding entries: the fast path of a rescale at unchanged max
// parallelism, where a new subtask's keyed state is whole key groups of
// the old subtasks, byte for byte.
type KeyedCopier interface {
	// SubtaskFrom starts subtask index of newOp with its keyed state
	// complete: every entry of op (an operator of r's snapshot) whose key
	// group lies in kgs. The caller adds operator and raw state and closes
	// it; Entry must not be called. ok is false, with nothing started,
	// when the writer cannot copy from r (another format, or descriptors
	// that change how entries are stored); the caller then goes entry by
	// entry.
	SubtaskFrom(ctx context.Context, r Reader, op, newOp *Operator, index int, kgs keygroup.Range) (sw SubtaskWriter, ok bool, err error)
}

// RehashingCopier is implemented by a Writer that can build new
// subtasks' keyed state at another max parallelism straight from an old
// snapshot's stored pairs, re-hashing each key without decoding values:
// the fast path of a max-parallelism change between snapshots of its own
// format. CanRehash says, before anything is planned to be read, whether
// it can for op of r (ok false: the caller goes entry by entry);
// SubtasksRehashed then starts the given subtasks of newOp (kgs[i] the
// key groups of subtasks[i]) with their keyed state complete, like
// KeyedCopier.SubtaskFrom, reading op's stored pairs once for all of
// them. counts[i] are the entries and bytes subtasks[i] got, as
// KeyGroupStats counts them.
type RehashingCopier interface {
	CanRehash(r Reader, op, newOp *Operator) bool
	SubtasksRehashed(ctx context.Context, r Reader, op, newOp *Operator, subtasks []int, kgs []keygroup.Range, codecs *Codecs) (sws []SubtaskWriter, counts []Stats, err error)
}

// RehashStater is implemented by a Reader that can tell, faster than
// entry by entry, how a subtask's entries fall into the key groups of
// another max parallelism (ok false: it cannot for this subtask).
type RehashStater interface {
	RehashedStats(ctx context.Context, op *Operator, subtask int, maxParallelism int, codecs *Codecs) (stats []KeyGroupStat, ok bool, err error)
}

// KeyGroupSizer is implemented by a Reader whose metadata records where
// each key group's stored bytes lie (Flink's key-group offsets):
// StoredKeyGroupBytes gives a subtask's stored bytes per non-empty key
// group without reading them, Entries left 0 (ok false: it does not know
// for this subtask, or the bytes are not pairs a RehashingCopier moves).
type KeyGroupSizer interface {
	StoredKeyGroupBytes(ctx context.Context, op *Operator, subtask int) (stats []KeyGroupStat, ok bool, err error)
}

// CoordinatorSizer is implemented by a Reader whose snapshots record an
// operator coordinator's state (Flink's): CoordinatorStateBytes is the
// size of op's, 0 when it has none; ok is false where the reader cannot
// tell.
type CoordinatorSizer interface {
	CoordinatorStateBytes(op *Operator) (n int64, ok bool)
}
