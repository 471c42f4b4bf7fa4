package flink

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

// decodedEntries reads every keyed entry of a snapshot and renders each as
// "operator state kg key ns userkey value", decoded by the state's types.
func decodedEntries(t testing.TB, r snapshot.Reader) []string {
	t.Helper()
	var out []string
	for _, op := range r.Snapshot().Operators {
		for _, sub := range op.Subtasks {
			for e, err := range r.Entries(context.Background(), op, sub.Index, sub.KeyGroups) {
				if err != nil {
					t.Fatalf("operator %s subtask %d: %v", op.ID, sub.Index, err)
				}
				ks, ok := op.KeyedStateByName(e.State)
				if !ok {
					t.Fatalf("entry of unknown state %q", e.State)
				}
				out = append(out, fmt.Sprintf("%s %s kg=%d key=%v ns=%v uk=%v value=%v", op.ID, e.State, e.KeyGroup,
					testReg.Codecs.Decode(ks.KeyType, e.Key), testReg.Codecs.Decode(ks.NamespaceType, e.Namespace), testReg.Codecs.Decode(ks.UserKeyType, e.UserKey), testReg.Codecs.Decode(ks.ValueType, e.Value)))
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestSameStateEveryBackend reads the state Flink's migration test job
// wrote with Flink 1.16 through five routes: heap checkpoint (heap key
// groups), heap and RocksDB canonical savepoints, a native RocksDB
// checkpoint and a native RocksDB savepoint (rebuilt RocksDB instances).
// The same job state must decode to the same entries every time.
//
// Expected values, read by hand from the canonical savepoint with xxd
// (state file of subtask 1 of operator d5c8b168..., the key group at the
// offset `_metadata` gives: prefix 01, Tuple1<Long> key 00..03, void
// namespace 00, value 00..03): the job keeps, per key k, a value state
// "state-name" holding k, and one processing-time and one event-time
// timer per key (event timers at Long.MIN_VALUE+10 once unflipped:
// stored 00 00 00 00 00 00 00 0a, sign bit flipped).
func TestSameStateEveryBackend(t *testing.T) {
	root := fixtureRoot(t)
	var first []string
	for _, name := range []string{"hashmap-checkpoint", "hashmap-savepoint", "rocksdb-savepoint", "rocksdb-checkpoint", "rocksdb-savepoint-native"} {
		dir := filepath.Join(root, "new-stateful-udf-migration-itcase-flink1.16-"+name)
		got := decodedEntries(t, openFixture(t, dir))
		for i, g := range got {
			// Processing-time timers hold the wall clock of each run.
			if strings.Contains(g, "processing_timer") {
				got[i] = g[:strings.LastIndex(g, "value=")] + "value=(wall clock)"
			}
		}
		// 4 keys (0..3) x {state-name} in 4 operators, and one event and
		// one processing timer per key in 2 of them: 16 + 16.
		if len(got) != 32 {
			t.Errorf("%s: %d entries, want 32", name, len(got))
		}
		if first == nil {
			first = got
			continue
		}
		if !slices.Equal(got, first) {
			t.Errorf("%s differs from hashmap-checkpoint:\n got %q\nwant %q", name, got, first)
		}
	}
	want := []string{
		"d5c8b168c6cbfe8c507a10f88b325243 state-name kg=1 key=[3] ns=<nil> uk=0x value=3",
		"d5c8b168c6cbfe8c507a10f88b325243 state-name kg=2 key=[0] ns=<nil> uk=0x value=0",
		"d5c8b168c6cbfe8c507a10f88b325243 state-name kg=2 key=[1] ns=<nil> uk=0x value=1",
		"d5c8b168c6cbfe8c507a10f88b325243 state-name kg=3 key=[2] ns=<nil> uk=0x value=2",
		"41e91aae0bee218c44306cf7d21940ad _timer_state/event_timer kg=1 key=[3] ns=3 uk=0x value=-9223372036854775798",
		"41e91aae0bee218c44306cf7d21940ad state-name kg=1 key=[3] ns=3 uk=0x value=3",
	}
	for _, w := range want {
		if !slices.Contains(first, w) {
			t.Errorf("missing %q", w)
		}
	}
}

// TestKeyGroupsMatchFlinkHash re-derives the key group of every entry with
// a hashable key from its Java hashCode (keygroup's murmur, checked
// against Flink's vectors) and checks it against where Flink stored it.
func TestKeyGroupsMatchFlinkHash(t *testing.T) {
	root, dirs := fixtureDirs(t)
	checked := 0
	for _, dir := range dirs {
		r := openFixture(t, dir)
		rel, _ := filepath.Rel(root, dir)
		for _, op := range r.Snapshot().Operators {
			for _, sub := range op.Subtasks {
				for e, err := range r.Entries(context.Background(), op, sub.Index, sub.KeyGroups) {
					if errors.Is(err, wire.ErrUnsupportedVersion) {
						break
					}
					if err != nil {
						t.Fatalf("%s: %v", rel, err)
					}
					ks, _ := op.KeyedStateByName(e.State)
					kg, err := testReg.Codecs.KeyGroupOf(ks.KeyType, e.Key, op.MaxParallelism)
					if errors.Is(err, keygroup.ErrUnknownKeyType) {
						continue
					}
					if err != nil {
						t.Fatalf("%s %s: key 0x%s: %v", rel, e.State, hex.EncodeToString(e.Key), err)
					}
					if kg != e.KeyGroup || !sub.KeyGroups.Contains(kg) {
						t.Errorf("%s %s: key %v hashes to key group %d, stored in %d (subtask range %v)", rel, e.State, testReg.Codecs.Decode(ks.KeyType, e.Key), kg, e.KeyGroup, sub.KeyGroups)
					}
					checked++
				}
			}
		}
	}
	t.Logf("%d keys re-hashed", checked)
	if checked < 500 {
		t.Errorf("only %d keys checked", checked)
	}
}

// TestScalaKryoKeys reads the Scala job's canonical savepoint: Kryo-written
// Long keys (class id 9, zig-zag varint), case classes, Option, Either.
func TestScalaKryoKeys(t *testing.T) {
	root := fixtureRoot(t)
	r := openFixture(t, filepath.Join(root, "stateful-scala-udf-migration-itcase-flink1.15-rocksdb-savepoint"))
	got := strings.Join(decodedEntries(t, r), "\n")
	// Hand-read from the state file: key 01|09 06|00 is key group 1,
	// Kryo Long 3 (zig-zag 6), void namespace; caseClassState holds
	// 02 33 + 8-byte 6: ("3", 6).
	for _, w := range []string{
		"caseClassState kg=1 key=3 ns=<nil> uk=0x value=[3 6]",
		"optionNoneState kg=1 key=3 ns=<nil> uk=0x value=<nil>",
		"eitherRightState kg=1 key=3 ns=<nil> uk=0x value=map[right:9]",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in\n%s", w, got)
		}
	}
}

// TestEntriesOnlyAskedKeyGroups checks that a narrower range yields exactly
// the entries of those key groups.
func TestEntriesOnlyAskedKeyGroups(t *testing.T) {
	root := fixtureRoot(t)
	for _, name := range []string{"operatorstate/complexKeyed-flink1.16", "operatorstate/complexKeyed-flink1.12"} {
		r := openFixture(t, filepath.Join(root, name))
		for _, op := range r.Snapshot().Operators {
			for _, sub := range op.Subtasks {
				var all []snapshot.Entry
				for e, err := range r.Entries(context.Background(), op, sub.Index, sub.KeyGroups) {
					if err != nil {
						t.Fatal(err)
					}
					all = append(all, e.Clone())
				}
				for kg := sub.KeyGroups.Start; kg <= sub.KeyGroups.End; kg++ {
					var want, got int
					for _, e := range all {
						if e.KeyGroup == kg {
							want++
						}
					}
					for e, err := range r.Entries(context.Background(), op, sub.Index, keygroup.Range{Start: kg, End: kg}) {
						if err != nil || e.KeyGroup != kg {
							t.Fatalf("%s kg %d: entry in %d, %v", name, kg, e.KeyGroup, err)
						}
						got++
					}
					if got != want {
						t.Errorf("%s kg %d: %d entries alone, %d in the full scan", name, kg, got, want)
					}
				}
			}
		}
	}
}
