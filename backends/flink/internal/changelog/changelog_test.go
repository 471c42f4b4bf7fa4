package changelog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
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
