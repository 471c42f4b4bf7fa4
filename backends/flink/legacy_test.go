package flink

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/lookup"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/verify"
)

// TestLegacyTupleKeys: Flink 1.4 heap savepoints record their Tuple key
// serializer only Java-serialized; its field serializers are recovered from
// that object, so the keys are walked, re-hash to their key groups, and hold
// what Flink's migration job wrote (Tuple2(i, i) keyed by f0, the state
// holding f1).
func TestLegacyTupleKeys(t *testing.T) {
	for _, name := range []string{"stateful-udf-migration-itcase-flink1.4-savepoint", "new-stateful-udf-migration-itcase-flink1.4-savepoint"} {
		dir := filepath.Join(fixtureRoot(t), name)
		r := openFixture(t, dir)
		res, err := verify.Check(context.Background(), dir, r, testReg.Codecs)
		if err != nil || !res.OK || res.Checked.Entries != 16 {
			t.Fatalf("%s: verify: %v %+v", name, err, res)
		}
		n := 0
		err = lookup.Dump(context.Background(), r, testReg.Codecs, lookup.Filter{Subtask: -1, State: "state-name"}, func(rec *lookup.Record) error {
			n++
			key, ok := rec.Key.([]any)
			if !ok || len(key) != 1 || key[0] != rec.Value {
				t.Errorf("%s: key %v holds %v", name, rec.Key, rec.Value)
			}
			return nil
		})
		if err != nil || n == 0 {
			t.Errorf("%s: %d keys of state-name: %v", name, n, err)
		}
	}
}

// TestHeapSectionsInStoredOrder: a heap key group holds its states'
// sections in the order of a Java HashMap over the states, not by state
// id. In this Flink 1.8 Scala savepoint, states whose values cannot be
// walked (Scala's Try and Traversable serializers) have sections after
// them; every state is then either read in a subtask, with a value for
// each of its keys, or marked unreadable there, and what is read is what
// the job wrote (CaseClassWithNesting(k, Nested(k.toString, 2k)) per key
// k). The job updates every state of every key but enumThreeState
// (StatefulJobSavepointMigrationITCase sets enumOneState twice), whose
// sections count none.
func TestHeapSectionsInStoredOrder(t *testing.T) {
	dir := filepath.Join(fixtureRoot(t), "stateful-scala-udf-migration-itcase-flink1.8-jobmanager-savepoint")
	r := openFixture(t, dir)
	res, err := verify.Check(context.Background(), dir, r, testReg.Codecs)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Findings {
		if f.Check != verify.CheckUnreadable {
			t.Errorf("finding: %v", f)
		}
	}
	read := map[string]int{}
	err = lookup.Dump(context.Background(), r, testReg.Codecs, lookup.Filter{Subtask: -1}, func(rec *lookup.Record) error {
		read[rec.Operator+"/"+rec.State+"/"+fmt.Sprint(rec.Subtask)]++
		if rec.State == "caseClassWithNestingState" {
			k, _ := rec.Key.(int64)
			if got, want := fmt.Sprint(rec.Value), fmt.Sprint([]any{k, []any{fmt.Sprint(k), 2 * k}}); got != want {
				t.Errorf("key %v: %s, want %s", rec.Key, got, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	unwalkable := map[string]bool{"tryState": true, "tryFailureState": true, "collectionState": true}
	readAfterMarked := false
	for _, op := range r.Snapshot().Operators {
		for _, sub := range op.Subtasks {
			marked := map[string]bool{}
			for _, u := range sub.Unreadable {
				marked[u.State] = true
				if !unwalkable[u.State] {
					t.Errorf("operator %s subtask %d: state %q marked unreadable: %s", op.Label(), sub.Index, u.State, u.Reason)
				}
			}
			keys := read[op.Label()+"/caseClassWithNestingState/"+fmt.Sprint(sub.Index)]
			for _, st := range op.KeyedStates {
				n := read[op.Label()+"/"+st.Name+"/"+fmt.Sprint(sub.Index)]
				want := keys
				if st.Name == "enumThreeState" {
					want = 0
				}
				switch {
				case marked[st.Name]:
				case n != want:
					t.Errorf("operator %s subtask %d: state %q: %d values for %d keys", op.Label(), sub.Index, st.Name, n, want)
				case len(marked) > 0 && n > 0:
					readAfterMarked = true
				}
			}
		}
	}
	if !readAfterMarked {
		t.Error("no state read in a subtask where another is marked unreadable")
	}
}

// TestLegacyCompositeConfigSnapshots: Flink 1.7 records a timer
// serializer by its legacy TimerSerializerConfigSnapshot, whose key and
// namespace serializers (a Tuple1<Long> and the void namespace) are in the
// config's "with resilience" block. Read from there, the 1.7 heap
// savepoint of Flink's migration test job holds what the same job's Flink
// 1.16 savepoint holds (TestSameStateEveryBackend), timers included; the
// processing-time timers hold each run's wall clock.
func TestLegacyCompositeConfigSnapshots(t *testing.T) {
	root := fixtureRoot(t)
	entries := func(name string) []string {
		r := openFixture(t, filepath.Join(root, name))
		if parts := snapshot.UnreadableParts(r.Snapshot()); len(parts) > 0 {
			t.Fatalf("%s: unreadable %v", name, parts)
		}
		got := decodedEntries(t, r)
		for i, g := range got {
			if strings.Contains(g, "processing_timer") {
				got[i] = g[:strings.LastIndex(g, "value=")] + "value=(wall clock)"
			}
		}
		return got
	}
	legacy, current := entries("new-stateful-udf-migration-itcase-flink1.7-savepoint"), entries("new-stateful-udf-migration-itcase-flink1.16-hashmap-savepoint")
	if len(legacy) != 32 || !slices.Equal(legacy, current) {
		t.Errorf("Flink 1.7:\n%s\nFlink 1.16:\n%s", strings.Join(legacy, "\n"), strings.Join(current, "\n"))
	}
}

// TestLegacyListState: the state of Flink's KeyedJob (the operator
// restore tests' savepoint generator) as Flink 1.3 to 1.7 wrote it. Its
// ListState "values" holds x for each key Tuple1(x), x = 0 to 9: 1.3 to
// 1.6 describe it by a CollectionSerializerConfigSnapshot whose element
// serializer is in its "with resilience" block, 1.7 by a
// ListSerializerSnapshot of version 1, written before
// CompositeTypeSerializerSnapshot's framing. Its two ListCheckpointed
// maps hold "first" and "second" and their subtask index, each a String
// under JavaSerializer.
func TestLegacyListState(t *testing.T) {
	for _, v := range []string{"1.3", "1.4", "1.5", "1.6", "1.7"} {
		r := openFixture(t, filepath.Join(fixtureRoot(t), "operatorstate", "complexKeyed-flink"+v))
		if parts := snapshot.UnreadableParts(r.Snapshot()); len(parts) > 0 {
			t.Fatalf("Flink %s: unreadable %v", v, parts)
		}
		held := map[string]bool{}
		err := lookup.Dump(context.Background(), r, testReg.Codecs, lookup.Filter{Subtask: -1, State: "values"}, func(rec *lookup.Record) error {
			k, _ := json.Marshal(rec.Key)
			v, _ := json.Marshal(rec.Value)
			held[string(k)+" "+string(v)] = true
			return nil
		})
		if err != nil {
			t.Fatalf("Flink %s: %v", v, err)
		}
		for x := range 10 {
			if !held[fmt.Sprintf("[%d] [%d]", x, x)] {
				t.Errorf("Flink %s: key (%d) does not hold [%d]: %v", v, x, x, held)
			}
		}
		if len(held) != 10 {
			t.Errorf("Flink %s: %d keys, want 10: %v", v, len(held), held)
		}
		elements := map[string]bool{}
		for _, op := range r.Snapshot().Operators {
			st, ok := op.OperatorStateByName("_default_")
			if !ok {
				continue
			}
			for _, sub := range op.Subtasks {
				for el, err := range r.Elements(context.Background(), op, sub.Index) {
					if err != nil {
						t.Fatalf("Flink %s: %v", v, err)
					}
					elements[fmt.Sprint(sub.Index, testReg.Codecs.Decode(st.ElementType, el.Value))] = true
				}
			}
		}
		for i := range 4 {
			for _, prefix := range []string{"first", "second"} {
				if !elements[fmt.Sprint(i, prefix, i)] {
					t.Errorf("Flink %s: subtask %d holds no %s%d: %v", v, i, prefix, i, elements)
				}
			}
		}
		if len(elements) != 8 {
			t.Errorf("Flink %s: elements %v, want 8", v, elements)
		}
	}
}
