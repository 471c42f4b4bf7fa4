package flink

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// witnessEntries are the checked-in witness entries of Flink 2.3.0, by
// name.
func witnessEntries(t *testing.T) map[string]flinkharness.Entry {
	t.Helper()
	entries, err := flinkharness.ReadCorpus(filepath.Join(flinkharness.RepoRoot(), "testdata", "flink-witness"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]flinkharness.Entry{}
	for _, e := range entries {
		if e.Manifest.FlinkVersion == "2.3.0" {
			out[e.Name] = e
		}
	}
	return out
}

// openWitness opens the entry e, with the key serializers of the snapshot
// at from where it is not "".
func openWitness(t *testing.T, e flinkharness.Entry, from string) (snapshot.Reader, error) {
	t.Helper()
	old, nw := e.PathMap()
	opts := snapshot.OpenOptions{PathMap: map[string]string{old: nw}}
	if from != "" {
		opts.Schemas = &snapshot.Schemas{KeySerializersFrom: from}
	}
	return testReg.Open(context.Background(), e.SnapshotDir(), opts)
}

// The SQL witness jobs' changelog checkpoints have not materialized: they
// record no key serializer, and their operators have no timers to take
// one from, so their keys are walked as rows, not decoded, and the reader
// says which operators'. With the key serializers of the same job's
// savepoint, every keyed operator's key type is the savepoint's, byte for
// byte, and every key decodes by it.
func TestKeySerializersFromTheJobsSavepoint(t *testing.T) {
	entries := witnessEntries(t)
	for job, walked := range map[string][]string{
		"sqlops":   {"24_changelog-normalize", "20_group-aggregate", "26_upsert-materialize", "17_group-aggregate"},
		"sqlbatch": {"8_incremental-group-aggregate", "17_incremental-group-aggregate", "19_global-group-aggregate", "10_global-group-aggregate"},
	} {
		chk, sp := entries[job+"-hashmap-checkpoint-changelog"], entries[job+"-hashmap-canonical"]
		r, err := openWitness(t, chk, "")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, uid := range walked {
			ids = append(ids, keygroup.OperatorIDOfUID(uid))
		}
		if got := r.(snapshot.UnrecordedKeys).KeysNotRecorded(); !sameSet(got, ids) {
			t.Errorf("%s: keys not recorded of %v, want %v", job, got, ids)
		}
		r.Close()

		r, err = openWitness(t, chk, sp.SnapshotDir())
		if err != nil {
			t.Fatalf("%s: %v", job, err)
		}
		if got := r.(snapshot.UnrecordedKeys).KeysNotRecorded(); len(got) != 0 {
			t.Errorf("%s with the savepoint's key serializers: keys not recorded of %v", job, got)
		}
		want, err := testReg.Open(context.Background(), sp.SnapshotDir(), snapshot.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		keyed := 0
		for _, op := range r.Snapshot().Operators {
			wop, ok := want.Snapshot().OperatorOfUID(op.ID)
			if !ok {
				t.Fatalf("%s: the savepoint has no operator %s", job, op.ID)
			}
			for _, ks := range op.KeyedStates {
				wks, ok := wop.KeyedStateByName(ks.Name)
				if !ok {
					continue
				}
				keyed++
				if ks.KeyType.Name != wks.KeyType.Name || !bytes.Equal(ks.KeyType.SerializerSnapshot, wks.KeyType.SerializerSnapshot) {
					t.Errorf("%s %s %s: key type %s, the savepoint's %s", job, op.Label(), ks.Name, ks.KeyType, wks.KeyType)
				}
			}
			for i := range op.Subtasks {
				for e, err := range r.Entries(context.Background(), op, i, keygroup.Range{Start: 0, End: op.MaxParallelism - 1}) {
					if err != nil {
						t.Fatal(err)
					}
					ks, _ := op.KeyedStateByName(e.State)
					c, err := testReg.Codecs.Codec(ks.KeyType)
					if err == nil {
						_, err = c.Decode(e.Key)
					}
					if err != nil {
						t.Fatalf("%s %s %s: key %x not decoded: %v", job, op.Label(), e.State, e.Key, err)
					}
				}
			}
		}
		if keyed == 0 {
			t.Errorf("%s: no keyed state compared", job)
		}
		r.Close()
		want.Close()
	}
}

// A snapshot that records its key serializers takes none from elsewhere:
// the zoo job's changelog checkpoint (its timers record its key
// serializer) and the SQL job's savepoint read as they do without a key
// source, even one of another job.
func TestKeySerializersOnlyWhereNoneIsRecorded(t *testing.T) {
	entries := witnessEntries(t)
	other := entries["cep-hashmap-canonical"].SnapshotDir()
	for _, name := range []string{"zoo-hashmap-checkpoint-changelog", "sqlops-hashmap-canonical"} {
		r, err := openWitness(t, entries[name], other)
		if err != nil {
			t.Fatalf("%s with another job's key serializers: %v", name, err)
		}
		if got := r.(snapshot.UnrecordedKeys).KeysNotRecorded(); len(got) != 0 {
			t.Errorf("%s: keys not recorded of %v", name, got)
		}
		r.Close()
	}
}

// A key source that cannot give the key serializers is refused as the
// user's mistake, never damage, naming both snapshots' files.
func TestKeySerializersFromAnotherJobRefused(t *testing.T) {
	entries := witnessEntries(t)
	chk, other := entries["sqlops-hashmap-checkpoint-changelog"], entries["cep-hashmap-canonical"]
	_, err := openWitness(t, chk, other.SnapshotDir())
	var ke *snapshot.KeySerializersError
	if !errors.As(err, &ke) || errors.Is(err, snapshot.ErrCorrupt) || errors.Is(err, snapshot.ErrUnsupportedVersion) {
		t.Fatalf("got %v, want a *KeySerializersError and no damage", err)
	}
	for _, want := range []string{filepath.Join(chk.SnapshotDir(), "_metadata"), filepath.Join(other.SnapshotDir(), "_metadata"), "has no operator of that ID"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\ndoes not say %q", err, want)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
