package flink

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/lookup"
	"github.com/stateutil/stateutil/snapshot"
)

// TestGetEveryKeyOfTheCorpus looks up, in every real Flink snapshot of
// testdata/flink, every key of every keyed state the job itself dumped
// (timers aside: a timer is not a key's value), by its uid, state name and
// key as a user writes them, through lookup.Get as `stateutil get` does;
// each answer must equal the job's own line. A state the reader marked
// unreadable must fail the lookup, never answer "not found".
func TestGetEveryKeyOfTheCorpus(t *testing.T) {
	entries, err := flinkharness.ReadCorpus(filepath.Join(flinkharness.RepoRoot(), "testdata", "flink"))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, e := range entries {
		t.Run(e.Manifest.FlinkVersion+"/"+e.Name, func(t *testing.T) {
			ctx := context.Background()
			old, nw := e.PathMap()
			r, err := testReg.Open(ctx, e.SnapshotDir(), snapshot.OpenOptions{PathMap: map[string]string{old: nw}, TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			want, err := flinkharness.ReadDump(e.File("dump.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			unreadable := map[string]bool{}
			for _, p := range snapshot.UnreadableParts(r.Snapshot()) {
				if p.Scope == snapshot.ScopeKeyed {
					unreadable[p.Operator+"/"+p.State] = true
				}
			}
			looked := 0
			for _, l := range want {
				if !l.Keyed() || l.Kind == string(snapshot.Timer) {
					continue
				}
				q := lookup.Query{Operator: l.Operator, State: l.State, Key: string(l.Key), Namespace: string(l.Namespace)}
				rec, err := lookup.Get(ctx, r, testReg.Codecs, q)
				id := uidHash(l.Operator)
				if unreadable[id+"/"+l.State] || unreadable[id+"/"] || unreadable[l.Operator+"/"+l.State] || unreadable[l.Operator+"/"] {
					if err == nil || errors.Is(err, snapshot.ErrNotFound) {
						t.Fatalf("get %s %s %s of a state marked unreadable: %v, want a read error", l.Operator, l.State, l.Key, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("get %s %s %s: %v", l.Operator, l.State, l.Key, err)
				}
				got, err := recordLine(rec)
				if err != nil {
					t.Fatal(err)
				}
				if d := flinkharness.EqualDumps(withoutKryoText([]flinkharness.Line{l}), withoutKryoText(byUID([]flinkharness.Line{got}, want))); d != "" {
					t.Fatalf("get %s %s %s differs from the job's dump:\n%s", l.Operator, l.State, l.Key, d)
				}
				looked++
			}
			if looked == 0 && len(unreadable) == 0 {
				t.Fatal("the job's dump names no key to look up")
			}
			total += looked
		})
	}
	t.Logf("%d keys looked up in %d real Flink snapshots, each equal to the job's dump", total, len(entries))
}
