package changelog

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser/tableruntime"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// realChangelog is the changelog file of a real Flink 2.3.0 checkpoint
// (testdata/flink), its flag byte removed: String keys, the basic job's
// states (value "count" id 2, list "events" 3, map "by-bucket" 4,
// reducing "sum" 5, aggregating "avg" 6, TTL value "last" 7, event-time
// timers 1, processing-time timers 0).
func realChangelog(t testing.TB) []byte {
	t.Helper()
	dir := filepath.Join(flinkharness.RepoRoot(), "testdata", "flink", "2.3.0", "basic-hashmap-checkpoint-changelog", "snapshot", "changelog")
	files, err := filepath.Glob(filepath.Join(dir, "*", "dstl", "*"))
	if err != nil || len(files) != 1 {
		t.Fatalf("changelog file under %s: %v %v", dir, files, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil || len(b) == 0 || b[0] != 0 {
		t.Fatalf("%s: %v", files[0], err)
	}
	return b[1:]
}

// changesOf splits a changelog stream into its changes, in order.
func changesOf(t testing.TB, stream []byte) []stateChange {
	t.Helper()
	f := &changelogFile{data: stream, file: "changelog"}
	var out []stateChange
	for off := int64(0); off < int64(len(stream)); {
		cs, n, err := f.changeSet(off)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, cs...)
		off += n
	}
	return out
}

// changeSet encodes changes of one key group as a change set.
func changeSet(kg int32, changes ...[]byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 1)
	b = binary.BigEndian.AppendUint32(b, uint32(len(changes)))
	b = binary.BigEndian.AppendUint32(b, uint32(kg))
	for _, c := range changes {
		b = binary.BigEndian.AppendUint32(b, uint32(len(c)))
		b = append(b, c...)
	}
	return b
}

// change is an operation on state id of key "user-16" (StringValue
// bytes), void namespace, then data.
func change(op byte, id uint16, data ...[]byte) []byte {
	b := []byte{op, byte(id >> 8), byte(id)}
	b = append(b, 0x08, 'u', 's', 'e', 'r', '-', '1', '6', 0x00)
	for _, d := range data {
		b = append(b, d...)
	}
	return b
}

func long(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// stamp is a timer's timestamp as Flink's TimerSerializer writes it, its
// sign bit flipped.
func stamp(ts int64) []byte { return long(ts ^ -1<<63) }

// str is a short ASCII string as Flink's StringSerializer writes it.
func str(s string) []byte { return append([]byte{byte(len(s) + 1)}, s...) }

// timer is a timer-state change: op, id, then data with no scope.
func timer(op byte, id uint16, data ...[]byte) []byte {
	b := []byte{op, byte(id >> 8), byte(id)}
	for _, d := range data {
		b = append(b, d...)
	}
	return b
}

// Each operation on each kind of state, applied after Flink's own changes,
// gives what Flink's appliers give; an operation that needs the job's
// functions marks only its state unreadable.
func TestChangelogOperations(t *testing.T) {
	const kg = 102 // user-16's key group at max parallelism 128
	key := append(str("user-16")[:0:0], str("user-16")...)
	user16 := append(key, 0x00) // the timer's key and void namespace
	stream := realChangelog(t)
	stream = append(stream, changeSet(kg,
		change(opSet, 2, long(5)),
		change(opSet, 3, binary.BigEndian.AppendUint32(nil, 2), str("p"), str("q")),
		change(opAddElement, 3, str("r")),
		change(opClear, 4),
		change(opAddOrUpdateElement, 4, str("b1"), long(7)),
		change(opAddOrUpdateElement, 4, str("b2"), long(9)),
		change(opRemoveElement, 4, str("b2")),
		change(opClear, 5),
		change(opMergeNamespaces, 6, []byte{0x00}, binary.BigEndian.AppendUint32(nil, 0)),
		timer(opAddElement, 1, binary.BigEndian.AppendUint32(nil, 1), stamp(7000), user16),
		timer(opRemoveElement, 1, stamp(7000), user16),
		timer(opRemoveElement, 1, stamp(1003000), user16),
	)...)
	s := &ChangelogState{Rng: metadata.KeyGroupRange{Start: 64, Count: 64}, Groups: map[int]*ChangedGroup{}, Broken: map[string]error{}, Header: &statefile.KeyedHeader{}}
	if err := s.Apply(context.Background(), nil, changesOf(t, stream)); err != nil {
		t.Fatal(err)
	}
	if err := s.Broken["avg"]; !errors.Is(err, wire.ErrUnsupportedVersion) || len(s.Broken) != 1 {
		t.Errorf("broken states %v", s.Broken)
	}
	got := map[string][][]byte{}
	for e, err := range s.Entries(context.Background(), keygroup.Range{Start: kg, End: kg}) {
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(e.Key, key) {
			continue
		}
		v := e.Value
		if e.UserKey != nil {
			v = append(append([]byte{}, e.UserKey...), e.Value...)
		}
		got[e.State] = append(got[e.State], v)
	}
	timers := func(ts ...int64) [][]byte {
		var out [][]byte
		for _, x := range ts {
			out = append(out, long(x))
		}
		return out
	}
	want := map[string][][]byte{
		"count":     {long(5)},
		"events":    {str("p"), str("q"), str("r")},
		"by-bucket": {append(str("b1"), long(7)...)},
		// The job's five event-time timers of the key, one removed.
		"_timer_state/event_user-timers":      timers(1000000, 1001000, 1002000, 1004000),
		"_timer_state/processing_user-timers": timers(4102444800000),
		"last":                                nil, // checked below: present, TTL'd
	}
	for state, w := range want {
		if state == "last" {
			continue
		}
		if len(got[state]) != len(w) {
			t.Errorf("state %q: %d entries, want %d: %x", state, len(got[state]), len(w), got[state])
			continue
		}
		for i := range w {
			if !bytes.Equal(got[state][i], w[i]) {
				t.Errorf("state %q entry %d: %x, want %x", state, i, got[state][i], w[i])
			}
		}
	}
	if _, ok := got["sum"]; ok {
		t.Errorf("cleared state sum still has %x", got["sum"])
	}
	if len(got["last"]) != 1 {
		t.Errorf("TTL state last: %x", got["last"])
	}
}

// Changes of an unregistered state id, or an operation no Flink writes,
// are damage at their own offset.
func TestChangelogDamage(t *testing.T) {
	for name, c := range map[string][]byte{
		"unregistered id": change(opSet, 99, long(1)),
		"unknown op":      change(42, 2, long(1)),
		"trailing bytes":  timer(opAddElement, 1, binary.BigEndian.AppendUint32(nil, 1), stamp(7000), str("user-16"), []byte{0, 7}),
	} {
		stream := append(realChangelog(t), changeSet(102, c)...)
		s := &ChangelogState{Rng: metadata.KeyGroupRange{Start: 64, Count: 64}, Groups: map[int]*ChangedGroup{}, Broken: map[string]error{}, Header: &statefile.KeyedHeader{}}
		err := s.Apply(context.Background(), nil, changesOf(t, stream))
		var ce *wire.CorruptError
		if !errors.As(err, &ce) || ce.File != "changelog" || ce.Offset < int64(len(realChangelog(t))) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Whatever the bytes of a changelog stream, splitting and applying them
// ends in entries, damage or unsupported state, never a panic.
func FuzzChangelog(f *testing.F) {
	real := realChangelog(f)
	f.Add(real)
	f.Add(append(append([]byte{}, real...), changeSet(102, change(opSet, 2, long(5)))...))
	f.Fuzz(func(t *testing.T, b []byte) {
		cf := &changelogFile{data: b, file: "fuzz"}
		if err := cf.split(); err != nil {
			if !errors.Is(err, wire.ErrCorrupt) {
				t.Fatalf("split: %v", err)
			}
			return
		}
		var changes []stateChange
		for off := int64(0); off < int64(len(b)); {
			cs, n, _ := cf.changeSet(off)
			changes = append(changes, cs...)
			off += n
		}
		s := &ChangelogState{Rng: metadata.KeyGroupRange{Start: 0, Count: 128}, Groups: map[int]*ChangedGroup{}, Broken: map[string]error{}, Header: &statefile.KeyedHeader{}}
		if err := s.Apply(context.Background(), nil, changes); err != nil {
			if !errors.Is(err, wire.ErrCorrupt) && !errors.Is(err, wire.ErrUnsupportedVersion) {
				t.Fatalf("apply: %v", err)
			}
			return
		}
		for _, err := range s.Entries(context.Background(), keygroup.Range{Start: 0, End: 127}) {
			if err != nil {
				t.Fatal(err)
			}
		}
	})
}

// Changes apply on top of the materialized part: a value the changes set
// replaces the materialized one, list elements and map entries the
// changes add come after (or next to) those materialized.
func TestChangelogOnMaterializedBase(t *testing.T) {
	const kg = 102
	key := str("user-16")
	base := []snapshot.Entry{
		{KeyGroup: kg, State: "count", Key: key, Namespace: []byte{0}, Value: long(99)},
		{KeyGroup: kg, State: "events", Key: key, Namespace: []byte{0}, Value: str("a")},
		{KeyGroup: kg, State: "by-bucket", Key: key, Namespace: []byte{0}, UserKey: str("zz"), Value: long(1)},
		{KeyGroup: kg, State: "by-bucket", Key: key, Namespace: []byte{0}, UserKey: str("b0"), Value: long(-1)},
	}
	entries := func(yield func(snapshot.Entry, error) bool) {
		for _, e := range base {
			if !yield(e, nil) {
				return
			}
		}
	}
	s := &ChangelogState{Rng: metadata.KeyGroupRange{Start: 64, Count: 64}, Groups: map[int]*ChangedGroup{}, Broken: map[string]error{}, Header: &statefile.KeyedHeader{}}
	if err := s.Apply(context.Background(), entries, changesOf(t, realChangelog(t))); err != nil {
		t.Fatal(err)
	}
	got := map[string][][]byte{}
	for e, err := range s.Entries(context.Background(), keygroup.Range{Start: kg, End: kg}) {
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(e.Key, key) {
			got[e.State] = append(got[e.State], append(append([]byte{}, e.UserKey...), e.Value...))
		}
	}
	// The job's dump of user-16 (testdata/flink/2.3.0/basic-hashmap-checkpoint-changelog).
	want := map[string][][]byte{
		"count":     {long(10)},
		"events":    {str("a"), str("e16"), str("e36"), str("e56"), str("e76"), str("e96"), str("e116"), str("e136"), str("e156"), str("e176"), str("e196")},
		"by-bucket": {append(str("zz"), long(1)...), append(str("b0"), long(288)...), append(str("b1"), long(424)...), append(str("b2"), long(348)...)},
	}
	for state, w := range want {
		if len(got[state]) != len(w) {
			t.Errorf("state %q: %x, want %x", state, got[state], w)
			continue
		}
		for i := range w {
			if !bytes.Equal(got[state][i], w[i]) {
				t.Errorf("state %q entry %d: %x, want %x", state, i, got[state][i], w[i])
			}
		}
	}
}

// sqlopsChanges are the changes of the SQL witness job's changelog
// checkpoint (Flink 2.3.0, no materialized part, no timers in its SQL
// operators) of operator uid's subtask, with its key-group range and max
// parallelism.
func sqlopsChanges(t *testing.T, uid string, subtask int) ([]stateChange, metadata.KeyGroupRange, int) {
	t.Helper()
	entries, err := flinkharness.ReadCorpus(filepath.Join(flinkharness.RepoRoot(), "testdata", "flink-witness"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Manifest.FlinkVersion != "2.3.0" || e.Name != "sqlops-hashmap-checkpoint-changelog" {
			continue
		}
		md := filepath.Join(e.SnapshotDir(), "_metadata")
		data, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		m, err := metadata.ParseMetadata(data, md)
		if err != nil {
			t.Fatal(err)
		}
		old, nw := e.PathMap()
		res := statefile.NewResolver(storage.Local(), md, nil, statefile.PathMapping{Old: old, New: nw})
		for _, op := range m.Operators {
			if op.ID.String() != keygroup.OperatorIDOfUID(uid) {
				continue
			}
			for _, st := range op.Subtasks {
				if st.Index == subtask {
					h := st.ManagedKeyedState.Changelog
					changes, err := ListChanges(context.Background(), res, h)
					if err != nil {
						t.Fatal(err)
					}
					return changes, h.Range, op.MaxParallelism
				}
			}
		}
	}
	t.Fatalf("no subtask %d of %s in the witness", subtask, uid)
	return nil, metadata.KeyGroupRange{}, 0
}

func applyWitness(t *testing.T, changes []stateChange, rng metadata.KeyGroupRange, maxParallelism int) *ChangelogState {
	t.Helper()
	s := &ChangelogState{Table: typeser.NewTable(tableruntime.Family), Rng: rng, MaxParallelism: maxParallelism,
		Groups: map[int]*ChangedGroup{}, Broken: map[string]error{}, Header: &statefile.KeyedHeader{}}
	if err := s.Apply(context.Background(), nil, changes); err != nil {
		t.Fatal(err)
	}
	return s
}

// A changelog that records no key serializer, of an operator without
// timers, is read with the Table runtime's RowData keys when every change
// parses so and its key hashes to the change's key group. Keys that are
// all rows of no fields (the joins without an equality condition) get the
// very serializer snapshot Flink wrote into the job's savepoint for them
// (testdata/flink-witness/2.3.0/sqlops-hashmap-canonical, operator
// 6_join); other rows are walked and hashed, their fields not known.
func TestChangelogRowKeys(t *testing.T) {
	const flinkRowOfNoFields = "0000000200546f72672e6170616368652e666c696e6b2e7461626c652e72756e74696d652e747970657574696c732e526f774461746153657269616c697a657224526f774461746153657269616c697a6572536e617073686f740000000300000000001457fd0000000100000000"
	changes, rng, maxp := sqlopsChanges(t, "6_join", 0)
	s := applyWitness(t, changes, rng, maxp)
	if k := s.Header.KeySerializer; k == nil || hex.EncodeToString(k.Raw) != flinkRowOfNoFields || k.LogicalTypes == nil || len(k.LogicalTypes) != 0 {
		t.Fatalf("key serializer of 6_join: %+v", k)
	}
	if s.KeyFrom != KeyRowsOfNoFields || s.KeysNotDecoded() {
		t.Errorf("6_join: key from %d, keys not decoded %v; want rows of no fields, decoded", s.KeyFrom, s.KeysNotDecoded())
	}
	if len(s.Broken) != 0 {
		t.Fatalf("broken: %v", s.Broken)
	}
	n := 0
	for e, err := range s.Entries(context.Background(), keygroup.Range{Start: 0, End: 0}) {
		if err != nil {
			t.Fatal(err)
		}
		if hex.EncodeToString(e.Key) != "000000080000000000000000" {
			t.Fatalf("key %x", e.Key)
		}
		n++
	}
	// The job's dump: 10 rows on each side.
	if n != 20 {
		t.Errorf("%d entries of 6_join, the job holds 20", n)
	}

	changes, rng, maxp = sqlopsChanges(t, "17_group-aggregate", 0)
	s = applyWitness(t, changes, rng, maxp)
	if k := s.Header.KeySerializer; k == nil || typeser.KindOf(k) != "RowData" || k.LogicalTypes != nil {
		t.Fatalf("key serializer of 17_group-aggregate: %+v", k)
	}
	if s.KeyFrom != KeyRowsWalked || !s.KeysNotDecoded() {
		t.Errorf("17_group-aggregate: key from %d, keys not decoded %v; want rows walked, not decoded", s.KeyFrom, s.KeysNotDecoded())
	}
	if len(s.Broken) != 0 {
		t.Fatalf("broken: %v", s.Broken)
	}

	// One key moved to a key group it does not hash to: the keys are not
	// taken for rows, and every state needs the serializer nobody recorded.
	for i := range changes {
		if changes[i].kg >= 0 {
			changes[i].kg = int(rng.Start) + (changes[i].kg-int(rng.Start)+1)%int(rng.Count)
			break
		}
	}
	s = applyWitness(t, changes, rng, maxp)
	if s.Header.KeySerializer != nil || len(s.Broken) == 0 || s.KeyFrom != KeyNone || !s.KeysNotDecoded() {
		t.Fatalf("a key in another key group: key serializer %+v from %d, broken %v", s.Header.KeySerializer, s.KeyFrom, s.Broken)
	}
	for state, err := range s.Broken {
		var nd *snapshot.NotDecodedError
		if !errors.Is(err, wire.ErrUnsupportedVersion) || !strings.Contains(err.Error(), "needs the key serializer") ||
			!errors.As(err, &nd) || nd.Serializer != "(key serializer, not recorded)" {
			t.Errorf("state %q: %v, want no damage: the key serializer not recorded", state, err)
		}
	}
}

// A key serializer given for a changelog that records none (another
// snapshot's) is taken only if every key fits it. The SQL witness's keys,
// rows of one field, fit a RowData serializer that does not name the
// field's type (walked and hashed), but not Flink's serializer of rows of
// no fields, as which they decode to a row written in fewer bytes; a key
// moved to a key group it does not hash to fits neither; and where no key
// serializer can be given, the refusal ends the read.
func TestChangelogGivenKey(t *testing.T) {
	changes, rng, maxp := sqlopsChanges(t, "17_group-aggregate", 0)
	table := typeser.NewTable(tableruntime.Family)
	apply := func(changes []stateChange, key *typeser.SerializerSnapshot, refusal error) (*ChangelogState, error) {
		s := &ChangelogState{Table: table, Rng: rng, MaxParallelism: maxp, Groups: map[int]*ChangedGroup{}, Broken: map[string]error{},
			Header: &statefile.KeyedHeader{}, GivenKey: func() (*typeser.SerializerSnapshot, error) { return key, refusal }}
		return s, s.Apply(context.Background(), nil, changes)
	}
	rows := table.Bind(&typeser.SerializerSnapshot{Class: rowDataSnapshotClass})
	s, err := apply(changes, rows, nil)
	if err != nil || s.KeyFrom != KeyGiven || s.Header.KeySerializer != rows || len(s.Broken) != 0 || s.KeysNotDecoded() {
		t.Fatalf("rows given: %v, key from %d, broken %v", err, s.KeyFrom, s.Broken)
	}
	misfit := func(what string, err error, says string) {
		t.Helper()
		var m *KeyMisfitError
		if !errors.As(err, &m) || errors.Is(err, wire.ErrCorrupt) || !strings.Contains(err.Error(), says) || !strings.Contains(err.Error(), "/dstl/") {
			t.Errorf("%s: %v; want a key misfit, no damage, naming the changelog file and saying %q", what, err, says)
		}
	}
	_, err = apply(changes, rowOfNoFields(table), nil)
	misfit("rows of no fields given", err, "the key is not of its type")

	moved := slices.Clone(changes)
	for i := range moved {
		if moved[i].kg >= 0 && len(moved[i].data) > 0 && moved[i].data[0] != opMetadata {
			moved[i].kg = int(rng.Start) + (moved[i].kg-int(rng.Start)+1)%int(rng.Count)
			break
		}
	}
	_, err = apply(moved, rows, nil)
	misfit("a key in another key group", err, "hashes to key group")

	refusal := errors.New("the other snapshot has no such operator")
	if _, err = apply(changes, nil, refusal); !errors.Is(err, refusal) {
		t.Errorf("refused: %v, want the refusal", err)
	}
}
