package flink

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/lookup"
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
