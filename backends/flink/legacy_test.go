package flink

import (
	"context"
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
