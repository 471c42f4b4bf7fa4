package cmd

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

func TestGoldenVerify(t *testing.T) {
	cases := map[string][]string{
		"verify-example":       {"verify", example},
		"verify-example-json":  {"verify", "../testdata/memory/maxp4096.dump", "-o", "json"},
		"verify-bad-checksum":  {"verify", "../testdata/memory/bad-checksum.dump"},
		"verify-bad-key-group": {"verify", "../testdata/memory/bad-key-group.dump"},
		"verify-missing":       {"verify", "../testdata/memory/missing.dump"},
		"verify-wrong-format":  {"verify", "../testdata/memory/wrong-format.dump"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) { runGolden(t, name, args...) })
	}
}

// A snapshot with several kinds of damage the memory format does not catch
// itself: verify prints every finding, then exits 2.
func TestVerifyPrintsEveryFinding(t *testing.T) {
	ctx := context.Background()
	loc := filepath.Join(t.TempDir(), "bad.dump")
	w, err := testReg.Create(ctx, memory.Format, loc, snapshot.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	op := &snapshot.Operator{ID: "01", UID: "counter", Parallelism: 2, MaxParallelism: 128,
		KeyedStates: []snapshot.KeyedState{{Name: "count", Kind: snapshot.Value, KeyType: snapshot.Type{Name: snapshot.TypeString}}}}
	for i := range 2 {
		sw, err := w.Subtask(ctx, op, i, keygroup.RangeOf(128, 2, i))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			kg := keygroup.OfHash(keygroup.HashString("hello"), 128) // 35
			for _, e := range []snapshot.Entry{
				{KeyGroup: kg, State: "count", Key: []byte("hello"), Value: []byte{1}},
				{KeyGroup: kg + 1, State: "count", Key: []byte("hello"), Value: []byte{2}},  // wrong key group
				{KeyGroup: kg + 2, State: "count", Key: []byte("user-1"), Value: []byte{3}}, // user-1 hashes to 121
				{KeyGroup: kg + 3, State: "count", Key: []byte("Flink"), ExpiresAt: -5},     // no TTL, negative expiry
			} {
				if err := sw.Entry(&e); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := sw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(ctx, &snapshot.Snapshot{Operators: []*snapshot.Operator{op}}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "verify", loc)
	if code != ExitCorrupt {
		t.Fatalf("exit %d, want %d", code, ExitCorrupt)
	}
	for _, want := range []string{"4 problems", "key group 36: state \"count\" key hello hashes to key group 35",
		"key group 37: state \"count\" key user-1 hashes to key group 121", "negative expiry -5"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "4 problems found") {
		t.Errorf("stderr %q", errOut)
	}
}
