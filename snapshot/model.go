// Package snapshot is stateutil's backend-neutral model of a stream
// processor's checkpoint or savepoint: operators, their subtasks and
// key-group ranges, state descriptors, and streaming access to state
// content. Every format (memory, filesystem, rocksdb, flink) reads into and
// writes from this model, so N formats need N readers and N writers, not N²
// converters.
package snapshot

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/keygroup"
)

// Kind tells a checkpoint from a savepoint.
type Kind string

// Snapshot kinds.
const (
	Checkpoint Kind = "checkpoint"
	Savepoint  Kind = "savepoint"
)

// StateKind is the kind of a keyed state.
type StateKind string

// Keyed state kinds, as Flink names them.
const (
	Value       StateKind = "value"
	List        StateKind = "list"
	Map         StateKind = "map"
	Reducing    StateKind = "reducing"
	Aggregating StateKind = "aggregating"
	// Folding is Flink's FoldingState, deprecated and removed in Flink
	// 1.14; older snapshots still hold it.
	Folding StateKind = "folding"
	// Timer is a priority-queue state: timers ("_timer_state/..."), whose
	// entries hold a timer's key and namespace, and its timestamp as an
	// 8-byte big-endian long in Value.
	Timer StateKind = "timer"
)

// Mode is how operator list state is redistributed on rescale.
type Mode string

// Operator-state modes. Their order is Flink's ordinal.
const (
	Split     Mode = "split"     // SPLIT_DISTRIBUTE: elements dealt out in slices
	Union     Mode = "union"     // UNION: every subtask gets every element
	Broadcast Mode = "broadcast" // BROADCAST: new subtask i gets old i % oldP
)

// UpdateType is when a TTL'd entry's timestamp is refreshed.
type UpdateType string

// TTL update types.
const (
	OnCreateAndWrite UpdateType = "OnCreateAndWrite"
	OnReadAndWrite   UpdateType = "OnReadAndWrite"
)

// Visibility is whether an expired entry not yet cleaned up is returned.
type Visibility string

// TTL visibilities.
const (
	NeverReturnExpired          Visibility = "NeverReturnExpired"
	ReturnExpiredIfNotCleanedUp Visibility = "ReturnExpiredIfNotCleanedUp"
)

// Snapshot is one checkpoint or savepoint, at metadata level. State content
// is reached through a Reader, never held here.
type Snapshot struct {
	Format       string            `json:"format" msgpack:"format"`
	JobID        string            `json:"job_id" msgpack:"job_id"`
	CheckpointID int64             `json:"checkpoint_id" msgpack:"checkpoint_id"`
	Kind         Kind              `json:"kind" msgpack:"kind"`
	Created      time.Time         `json:"created" msgpack:"created"`
	Operators    []*Operator       `json:"operators" msgpack:"operators"`
	Properties   map[string]string `json:"properties,omitempty" msgpack:"properties,omitempty"`
	// Carried is what the snapshot's own format records beyond this model,
	// for a writer of that format to carry over unchanged (Flink: master
	// states, CheckpointProperties). Opaque to everything else; not shown.
	Carried []byte `json:"-" msgpack:"carried,omitempty"`
}

// PropJobCheckpoints is the property a reader sets when it resolved a job
// directory to its latest complete checkpoint: the complete checkpoints it
// found there. It describes where the snapshot was read from, not the
// snapshot, so it is not carried into snapshots written from it.
const PropJobCheckpoints = "job_checkpoints"

// Operator is one operator's state across its subtasks.
type Operator struct {
	// ID is the operator id in hex (Flink's 16-byte OperatorID).
	ID             string          `json:"id" msgpack:"id"`
	UID            string          `json:"uid" msgpack:"uid"`
	Name           string          `json:"name" msgpack:"name"`
	Parallelism    int             `json:"parallelism" msgpack:"parallelism"`
	MaxParallelism int             `json:"max_parallelism" msgpack:"max_parallelism"`
	KeyedStates    []KeyedState    `json:"keyed_states" msgpack:"keyed_states"`
	OperatorStates []OperatorState `json:"operator_states" msgpack:"operator_states"`
	Subtasks       []*Subtask      `json:"subtasks" msgpack:"subtasks"`
	// Carried is what the operator's format records beyond this model (Flink:
	// serializer snapshots, coordinator state), as Snapshot.Carried.
	Carried []byte `json:"-" msgpack:"carried,omitempty"`
}

// Label is how tools name an operator: its uid, else its name, else its id.
func (o *Operator) Label() string {
	switch {
	case o.UID != "":
		return o.UID
	case o.Name != "":
		return o.Name
	}
	return o.ID
}

// KeyedStateByName finds a keyed state descriptor.
func (o *Operator) KeyedStateByName(name string) (*KeyedState, bool) {
	for i := range o.KeyedStates {
		if o.KeyedStates[i].Name == name {
			return &o.KeyedStates[i], true
		}
	}
	return nil, false
}

// OperatorStateByName finds an operator-state descriptor.
func (o *Operator) OperatorStateByName(name string) (*OperatorState, bool) {
	for i := range o.OperatorStates {
		if o.OperatorStates[i].Name == name {
			return &o.OperatorStates[i], true
		}
	}
	return nil, false
}

// KeyedState describes one keyed state.
type KeyedState struct {
	Name          string    `json:"name" msgpack:"name"`
	Kind          StateKind `json:"kind" msgpack:"kind"`
	KeyType       Type      `json:"key_type" msgpack:"key_type"`
	NamespaceType Type      `json:"namespace_type" msgpack:"namespace_type"`
	UserKeyType   Type      `json:"user_key_type,omitzero" msgpack:"user_key_type,omitempty"`
	ValueType     Type      `json:"value_type" msgpack:"value_type"`
	TTL           *TTL      `json:"ttl,omitempty" msgpack:"ttl,omitempty"`
	// SourceName is the state's name in the snapshot a copy reads, when
	// the copy renames it ("" when it keeps its name): a writer finds what
	// the source's format carried of the state by it. Never stored.
	SourceName string `json:"-" msgpack:"-"`
}

// CarriedName is the name the source's format recorded the state under.
func (k *KeyedState) CarriedName() string { return cmp.Or(k.SourceName, k.Name) }

// TTL is a keyed state's time-to-live configuration.
type TTL struct {
	TTLMillis  int64      `json:"ttl_ms" msgpack:"ttl_ms"`
	Update     UpdateType `json:"update" msgpack:"update"`
	Visibility Visibility `json:"visibility" msgpack:"visibility"`
	// Unknown says the snapshot records that the state has a TTL but not
	// its settings (Flink stores the TTL wrapper and each entry's
	// last-access time, never the duration). TTLMillis, Update and
	// Visibility are then unset, and an entry's ExpiresAt holds its
	// last-access time, not an expiry.
	Unknown bool `json:"unknown,omitempty" msgpack:"unknown,omitempty"`
}

// String describes the configuration: "ttl 1h0m0s, OnCreateAndWrite,
// NeverReturnExpired", or for Unknown what is known instead.
func (t *TTL) String() string {
	if t.Unknown {
		return "ttl, duration not recorded: entries carry their last-access time"
	}
	return fmt.Sprintf("ttl %s, %s, %s", time.Duration(t.TTLMillis)*time.Millisecond, t.Update, t.Visibility)
}

// OperatorState describes one operator list (or broadcast) state.
type OperatorState struct {
	Name        string `json:"name" msgpack:"name"`
	Mode        Mode   `json:"mode" msgpack:"mode"`
	ElementType Type   `json:"element_type" msgpack:"element_type"`
	// SourceName: see KeyedState.SourceName.
	SourceName string `json:"-" msgpack:"-"`
}

// CarriedName is the name the source's format recorded the state under.
func (o *OperatorState) CarriedName() string { return cmp.Or(o.SourceName, o.Name) }

// Subtask is one parallel instance's share of an operator's state.
type Subtask struct {
	Index     int            `json:"index" msgpack:"index"`
	KeyGroups keygroup.Range `json:"key_groups" msgpack:"key_groups"`
	// Keyed totals keyed state; Known is false when only a scan can tell.
	Keyed Stats `json:"keyed" msgpack:"keyed"`
	// KeyGroupStats has one row per key group of the range when the format
	// records them in its metadata; nil otherwise.
	KeyGroupStats []KeyGroupStat `json:"key_group_stats,omitempty" msgpack:"key_group_stats,omitempty"`
	// Operator totals operator state; Elements per state name.
	Operator         Stats         `json:"operator" msgpack:"operator"`
	OperatorElements ElementCounts `json:"operator_elements,omitempty" msgpack:"operator_elements,omitempty"`
	// RawKeyedBytes and RawOperatorBytes size the opaque raw state.
	RawKeyedBytes    int64 `json:"raw_keyed_bytes" msgpack:"raw_keyed_bytes"`
	RawOperatorBytes int64 `json:"raw_operator_bytes" msgpack:"raw_operator_bytes"`
	// Files are the files that hold this subtask's state.
	Files []FileRef `json:"files,omitempty" msgpack:"files,omitempty"`
	// Unreadable is state of this subtask the reader cannot read; its
	// figures do not count it.
	Unreadable []Unreadable `json:"unreadable,omitempty" msgpack:"unreadable,omitempty"`
	// InFlight is the data in flight an unaligned checkpoint holds for the
	// subtask, one entry a channel.
	InFlight []InFlight `json:"in_flight,omitempty" msgpack:"in_flight,omitempty"`
}

// Directions of InFlight data.
const (
	InputChannel       = "input"
	ResultSubpartition = "output"
)

// InFlight is what an unaligned checkpoint holds for one channel of a
// subtask: buffers of records that had reached one of its input channels
// and were not processed yet, or that it had put into one of its result
// subpartitions and not sent yet. Flink hands them back to the channel on
// restore; nothing else holds them.
type InFlight struct {
	// Direction is InputChannel or ResultSubpartition.
	Direction string `json:"direction" msgpack:"direction"`
	// Gate and Channel are the input gate and channel (input), or the
	// result partition and subpartition (output).
	Gate    int `json:"gate" msgpack:"gate"`
	Channel int `json:"channel" msgpack:"channel"`
	// Buffers is the number of buffers, Bytes the bytes in them.
	Buffers int   `json:"buffers" msgpack:"buffers"`
	Bytes   int64 `json:"bytes" msgpack:"bytes"`
	// File holds them ("" when the metadata file does).
	File string `json:"file,omitempty" msgpack:"file,omitempty"`
}

// Stats counts entries (or elements) and their bytes.
type Stats struct {
	Known   bool  `json:"known" msgpack:"known"`
	Entries int64 `json:"entries" msgpack:"entries"`
	Bytes   int64 `json:"bytes" msgpack:"bytes"`
}

// Add accumulates o into s; the sum is known only if both are.
func (s *Stats) Add(o Stats) {
	s.Known = s.Known && o.Known
	s.Entries += o.Entries
	s.Bytes += o.Bytes
}

// ElementCounts is the number of elements per operator-state name.
type ElementCounts map[string]int64

// EncodeMsgpack writes the counts in name order, so that equal snapshots
// encode to equal bytes.
func (c ElementCounts) EncodeMsgpack(enc *msgpack.Encoder) error {
	if err := enc.EncodeMapLen(len(c)); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(c)) {
		if err := enc.EncodeString(name); err != nil {
			return err
		}
		if err := enc.EncodeInt(c[name]); err != nil {
			return err
		}
	}
	return nil
}

// DecodeMsgpack reads what EncodeMsgpack wrote.
func (c *ElementCounts) DecodeMsgpack(dec *msgpack.Decoder) error {
	m := map[string]int64{}
	if err := dec.Decode(&m); err != nil {
		return err
	}
	*c = m
	return nil
}

// KeyGroupStat is the size of one key group.
type KeyGroupStat struct {
	KeyGroup int   `json:"key_group" msgpack:"kg"`
	Entries  int64 `json:"entries" msgpack:"n"`
	Bytes    int64 `json:"bytes" msgpack:"b"`
}

// FileRef names a file holding state. Path is as the format records it:
// relative to the snapshot, or absolute (Flink checkpoints).
type FileRef struct {
	Path     string `json:"path" msgpack:"path"`
	Size     int64  `json:"size" msgpack:"size"`
	Shared   bool   `json:"shared,omitempty" msgpack:"shared,omitempty"`
	Absolute bool   `json:"absolute,omitempty" msgpack:"absolute,omitempty"`
	CRC32C   uint32 `json:"crc32c,omitempty" msgpack:"crc32c,omitempty"`
}

// RawState is the opaque bytes a user operator wrote itself.
type RawState struct {
	Keyed    []byte
	Operator []byte
}

// Operator finds the operator a person names: as OperatorOfUID does, else
// by name, if only one operator has it (Flink's names need not be unique).
func (s *Snapshot) Operator(label string) (*Operator, bool) {
	if o, ok := s.OperatorOfUID(label); ok {
		return o, true
	}
	var named *Operator
	for _, o := range s.Operators {
		if o.Name == label {
			if named != nil {
				return nil, false
			}
			named = o
		}
	}
	return named, named != nil
}

// OperatorOfUID finds the operator that a job's operator with this uid
// restores from, as Flink pairs them, never by a name: by uid or id (or the
// name of an operator recorded without a uid); else, for snapshots that
// record only ids (Flink's `_metadata` before version 5), by the id Flink
// derives from the uid.
func (s *Snapshot) OperatorOfUID(uid string) (*Operator, bool) {
	for _, o := range s.Operators {
		if o.UID == uid || o.ID == uid || (o.UID == "" && o.Name == uid) {
			return o, true
		}
	}
	id := keygroup.OperatorIDOfUID(uid)
	for _, o := range s.Operators {
		if o.UID == "" && o.ID == id {
			return o, true
		}
	}
	return nil, false
}
