package flink

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/changelog"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// A changelog checkpoint that has not materialized records no key
// serializer: the changelog holds each state's meta info and serializers,
// the key serializer only the materialized part's header, and Flink
// restores such a checkpoint with the job's own. The user can name another
// snapshot of the same job that records it (snapshot.Schemas.
// KeySerializersFrom: a savepoint, or a checkpoint that did materialize);
// an operator whose key serializer the snapshot read does not record then
// takes the one that snapshot records for the operator of the same ID, if
// every key fits it (changelog.ChangelogState.GivenKey).

// keySource is the snapshot named for the key serializers: what it
// records of each operator.
type keySource struct {
	// location is the snapshot as the user named it, file its _metadata.
	location, file string
	// ops holds the operators it has, keys the key serializer it records
	// of each keyed one.
	ops  map[metadata.OperatorID]bool
	keys map[metadata.OperatorID]*typeser.SerializerSnapshot
}

// openKeySource reads the key serializers the snapshot at location
// records, opened as opts say (its path maps too) but for its own key
// serializers. Whatever keeps it from giving them is the user's mistake: a
// *snapshot.KeySerializersError.
func openKeySource(ctx context.Context, location string, opts snapshot.OpenOptions) (*keySource, error) {
	refuse := func(format string, args ...any) error {
		return &snapshot.KeySerializersError{Message: fmt.Sprintf("--key-serializers-from %q: ", location) + fmt.Sprintf(format, args...)}
	}
	reg := opts.Storage
	if reg == nil {
		reg = storage.NewRegistry()
	}
	st, p, err := reg.Resolve(ctx, location)
	if err != nil {
		return nil, refuse("%v", err)
	}
	switch ok, err := probe(ctx, st, p); {
	case errors.Is(err, snapshot.ErrNotFound):
		return nil, refuse("no such file or directory")
	case err != nil:
		return nil, refuse("%v", err)
	case !ok:
		return nil, refuse("not a Flink checkpoint or savepoint (no _metadata starting with Flink's magic number)")
	}
	own := *opts.Schemas
	own.KeySerializersFrom = ""
	opts.Schemas = &own
	sr, err := open(ctx, st, p, opts)
	if err != nil {
		return nil, refuse("%v", err)
	}
	r := sr.(*SnapshotReader)
	defer r.Close()
	ks := &keySource{location: location, file: r.res.MetadataFile, ops: map[metadata.OperatorID]bool{}, keys: map[metadata.OperatorID]*typeser.SerializerSnapshot{}}
	for _, op := range r.meta.Operators {
		ks.ops[op.ID] = true
		if k := r.recordedKey(ctx, op); k != nil {
			ks.keys[op.ID] = k
		}
	}
	return ks, nil
}

// recordedKey is the key serializer op's state records: a subtask's keyed
// header, or a changelog subtask's that its own state records (from its
// materialized part or a timer state), never one stateutil walked keys by
// or was given. nil: none (a subtask that cannot be read says nothing).
func (r *SnapshotReader) recordedKey(ctx context.Context, op *metadata.OperatorState) *typeser.SerializerSnapshot {
	for _, st := range op.Subtasks {
		if st.ManagedKeyedState == nil {
			continue
		}
		if changelog.PendingChanges(st.ManagedKeyedState) {
			if s, err := r.changelog(ctx, op, st); err == nil && s.KeyFrom.Recorded() {
				return s.Header.KeySerializer
			}
			continue
		}
		hs, err := r.subtaskHeaders(ctx, op, st, map[string]bool{})
		if err != nil {
			continue
		}
		for _, h := range hs {
			if h.KeySerializer != nil {
				return h.KeySerializer
			}
		}
	}
	return nil
}

// givenKey is the key serializer the key source records of op, for a
// snapshot (its _metadata file) that records none: refused, naming both
// snapshots' files, where the source has no such operator or records none.
func (ks *keySource) givenKey(file string, op *metadata.OperatorState, kryo5 bool) (*typeser.SerializerSnapshot, error) {
	k := ks.keys[op.ID]
	if k == nil {
		why := "has no operator of that ID: name a snapshot of the same job that has it"
		if ks.ops[op.ID] {
			why = "records none for it either"
		}
		return nil, &snapshot.KeySerializersError{Message: fmt.Sprintf("%q records no key serializer for it%s, and --key-serializers-from %q %s",
			file, operatorNames(op), ks.file, why)}
	}
	if kryo5 {
		// Flink 2 restores the checkpoint with the job's serializer,
		// which writes Kryo 5.
		typeser.MarkKryo5(k)
	}
	return k, nil
}

// misfit is the refusal of the key serializer the key source gave for
// op's keys, which do not fit it.
func (ks *keySource) misfit(file string, op *metadata.OperatorState, err *changelog.KeyMisfitError) error {
	return &snapshot.KeySerializersError{Message: fmt.Sprintf("%q records no key serializer for it%s, and the one --key-serializers-from %q records for it, %s, does not fit its keys: %v",
		file, operatorNames(op), ks.file, keyName(ks.keys[op.ID]), err)}
}

// keyName names a key serializer's type for a message, with the types of
// a row's fields.
func keyName(k *typeser.SerializerSnapshot) string {
	n := typeser.TypeOf(k).Name
	if len(k.LogicalTypes) > 0 {
		fields := make([]string, len(k.LogicalTypes))
		for i, t := range k.LogicalTypes {
			fields[i] = t.Short()
		}
		n += " of (" + strings.Join(fields, ", ") + ")"
	}
	return n
}

// operatorNames is " (uid, name)" of op where the snapshot records them,
// for a message that names op by its ID already.
func operatorNames(op *metadata.OperatorState) string {
	switch {
	case op.UID != "" && op.Name != "":
		return fmt.Sprintf(" (uid %q, %s)", op.UID, op.Name)
	case op.UID != "":
		return fmt.Sprintf(" (uid %q)", op.UID)
	case op.Name != "":
		return fmt.Sprintf(" (%s)", op.Name)
	}
	return ""
}

// KeysNotRecorded lists the operators whose keys are not decoded because
// the snapshot records no key serializer of theirs (snapshot.UnrecordedKeys).
func (r *SnapshotReader) KeysNotRecorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, op := range r.meta.Operators {
		if r.keysNotRecorded[op] {
			out = append(out, op.ID.String())
		}
	}
	return out
}
