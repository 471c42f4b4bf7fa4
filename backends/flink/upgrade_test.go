package flink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/carried"
	flinkupgrade "github.com/stateutil/stateutil/backends/flink/internal/upgrade"
	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/migrate"
	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// testdataSavepoint is the savepoint of a real-Flink entry of
// testdata/flink, or of testdata/flink-upgrade (the upgrade's jobs, whose
// values stateutil does not all decode, which the corpus tests want).
func testdataSavepoint(t *testing.T, version, entry string) string {
	t.Helper()
	var dirs []string
	for _, root := range []string{"flink", "flink-upgrade"} {
		d, _ := filepath.Glob(filepath.Join(flinkharness.RepoRoot(), "testdata", root, version, entry, "snapshot", "savepoint-*"))
		dirs = append(dirs, d...)
	}
	if len(dirs) != 1 {
		t.Fatalf("testdata/flink{,-upgrade}/%s/%s holds %d savepoints, want 1", version, entry, len(dirs))
	}
	return dirs[0]
}

// carriedSerializers are the serializer snapshots the snapshot at dir
// carries for a state, by operator uid ("" for none) and state.
func carriedSerializers(t *testing.T, r snapshot.Reader, state string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, op := range r.Snapshot().Operators {
		co, err := carried.OperatorOf(op)
		if err != nil || co == nil {
			t.Fatalf("operator %q carries nothing of Flink's (%v)", op.Label(), err)
		}
		for _, m := range append(append([]carried.Meta{}, co.Keyed...), co.Operator...) {
			if m.Name == state {
				for _, s := range m.Serializers {
					out[s.Key] = s.Raw
				}
			}
		}
	}
	return out
}

// stateValues are the decoded values of a keyed state, as JSON by key.
func stateValues(t *testing.T, r snapshot.Reader, state string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for _, op := range r.Snapshot().Operators {
		ks, ok := op.KeyedStateByName(state)
		if !ok {
			continue
		}
		dec := testReg.Codecs.Decoder(ks.ValueType)
		keys := testReg.Codecs.Decoder(ks.KeyType)
		for i := range op.Subtasks {
			for e, err := range r.Entries(ctx, op, i, keygroup.Range{Start: 0, End: op.MaxParallelism - 1}) {
				if err != nil {
					t.Fatal(err)
				}
				if e.State != state {
					continue
				}
				k, _ := json.Marshal(keys(e.Key))
				v, _ := json.Marshal(dec(e.Value))
				out[string(k)] += string(v)
			}
		}
	}
	return out
}

// TestUpgradeWritesWhatFlink2Writes upgrades the 1.20.5 savepoints of the
// jobs whose POJOs have List, Map and Set fields, and compares the result
// with the same jobs' 2.3.0 savepoints (the same records): the serializer
// snapshots must be Flink 2.3.0's byte for byte, and every value must
// decode to what Flink 2.3.0's own bytes hold.
func TestUpgradeWritesWhatFlink2Writes(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		entry, state string
		change       redistribute.Request
	}{
		{"collections-hashmap-canonical", "basket", redistribute.Request{}},
		{"orders-hashmap-canonical", "order", redistribute.Request{}},
		// Rescaled in the same run, to another max parallelism too.
		{"collections-hashmap-canonical", "basket", redistribute.Request{Parallelism: 3, MaxParallelism: 256}},
	} {
		t.Run(fmt.Sprintf("%s-p%d-maxp%d", c.entry, c.change.Parallelism, c.change.MaxParallelism), func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "up")
			res, err := migrate.Run(ctx, testReg, migrate.Request{Source: testdataSavepoint(t, "1.20.5", c.entry), Destination: dst,
				Format: "flink", ReaderVersion: "2.3", Upgrade: true, Change: c.change})
			if err != nil {
				t.Fatal(err)
			}
			if res.Upgrade.Rewritten != 1 || res.Upgrade.Blocked != 0 {
				t.Fatalf("report %+v, want one state rewritten and none blocked", res.Upgrade)
			}
			up, err := testReg.Open(ctx, dst, snapshot.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer up.Close()
			ref, err := testReg.Open(ctx, testdataSavepoint(t, "2.3.0", c.entry), snapshot.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			got, want := carriedSerializers(t, up, c.state), carriedSerializers(t, ref, c.state)
			if len(want) == 0 || len(got) != len(want) {
				t.Fatalf("serializers of %q: %d, Flink 2.3.0 wrote %d", c.state, len(got), len(want))
			}
			for k, w := range want {
				if !bytes.Equal(got[k], w) {
					t.Errorf("%s %s: upgraded\n%x\nFlink 2.3.0 wrote\n%x", c.state, k, got[k], w)
				}
			}
			for _, op := range up.Snapshot().Operators {
				if len(op.KeyedStates) > 0 && c.change.MaxParallelism > 0 && (op.MaxParallelism != c.change.MaxParallelism || op.Parallelism != c.change.Parallelism) {
					t.Errorf("operator %q: parallelism %d, max parallelism %d; want %d, %d", op.Label(), op.Parallelism, op.MaxParallelism, c.change.Parallelism, c.change.MaxParallelism)
				}
			}
			gv, wv := stateValues(t, up, c.state), stateValues(t, ref, c.state)
			if len(wv) == 0 || len(gv) != len(wv) {
				t.Fatalf("%d keys of %q, Flink 2.3.0 holds %d", len(gv), c.state, len(wv))
			}
			for k, w := range wv {
				if gv[k] != w {
					t.Errorf("key %s: upgraded %s, Flink 2.3.0 holds %s", k, gv[k], w)
				}
			}
			m, err := ReadMetadata(ctx, storage.Local(), filepath.Join(dst, "_metadata"))
			if err != nil || m.Version != 6 {
				t.Fatalf("_metadata version %v (%v), want 6 (Flink 2.3)", m, err)
			}
		})
	}
}

// TestUpgradeCheckNamesTheCause checks --check's verdicts on the corpus:
// Kryo values of JDK classes are rewritten, and what blocks names the
// class that blocks (a user class under Kryo's FieldSerializer, a user
// enum with a body), not another field.
func TestUpgradeCheckNamesTheCause(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		entry   string
		want    map[string]snapshot.Verdict // the states not restored as is
		reasons map[string]string
	}{
		{"basic-hashmap-canonical", map[string]snapshot.Verdict{}, nil},
		{"kryojdk-hashmap-canonical", map[string]snapshot.Verdict{"jdk": snapshot.Rewritten, "jdks": snapshot.Rewritten, "kept": snapshot.Blocked},
			map[string]string{"kept": "KryoJdkJob$Color$1"}},
		{"kryojdk-rocksdb-native", map[string]snapshot.Verdict{"jdk": snapshot.Rewritten, "jdks": snapshot.Rewritten, "kept": snapshot.Blocked},
			map[string]string{"kept": "KryoJdkJob$Color$1"}},
		{"types-hashmap-canonical", map[string]snapshot.Verdict{"kryo": snapshot.Blocked}, map[string]string{"kryo": "TypesJob$Opaque"}},
		{"collections-hashmap-canonical", map[string]snapshot.Verdict{"basket": snapshot.Rewritten}, nil},
		// Kryo values of a class of the job's in heap key groups, which
		// stateutil cannot tell apart: blocked, not a refused check.
		{"heapkryo-hashmap-native", map[string]snapshot.Verdict{"events": snapshot.Blocked, "maps": snapshot.Rewritten},
			map[string]string{"events": "stateutil cannot read its values, which the upgrade must rewrite"}},
		// A POJO with a BigDecimal and a Kryo-typed LocalDateTime field: the
		// LocalDateTime is named first; a class with a registered serializer.
		{"upgradeblock-hashmap-canonical", map[string]snapshot.Verdict{"deal": snapshot.Blocked, "money": snapshot.Blocked},
			map[string]string{"deal": "POJO field Deal.at is a Kryo-typed java.time.LocalDateTime, which Kryo 2 writes with its FieldSerializer",
				"money": "UpgradeBlockedJob$Money, which the job registers with a Kryo serializer of its own"}},
	} {
		t.Run(c.entry, func(t *testing.T) {
			rep, err := migrate.CheckUpgrade(ctx, testReg, testdataSavepoint(t, "1.20.5", c.entry), "2.1", nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.To != "Flink 2.1" || rep.From != "Flink 1.x" {
				t.Errorf("report from %q to %q", rep.From, rep.To)
			}
			seen := 0
			for _, f := range rep.Findings {
				want, ok := c.want[f.State]
				if !ok {
					want = snapshot.RestoresAsIs
				} else {
					seen++
				}
				if f.Verdict != want {
					t.Errorf("state %q: %s (%s%s), want %s", f.State, f.Verdict, f.Reason, strings.Join(f.Changes, "; "), want)
				}
				r := c.reasons[f.State]
				if r != "" && !strings.Contains(f.Reason, r) {
					t.Errorf("state %q blocked for %q, want the reason to name %s", f.State, f.Reason, r)
				}
				if big := strings.Index(f.Reason, "BigDecSerializer"); r != "" && big >= 0 && big < strings.Index(f.Reason, r) {
					t.Errorf("state %q blocked for %q: the BigDecimal field is named before the cause", f.State, f.Reason)
				}
			}
			if seen != len(c.want) {
				t.Errorf("%d of the %d states expected found in %+v", seen, len(c.want), rep.Findings)
			}
			if (rep.Blocked > 0) != (rep.Err() != nil) || rep.Err() != nil && !errors.Is(rep.Err(), snapshot.ErrUpgradeBlocked) {
				t.Errorf("Blocked %d, Err %v", rep.Blocked, rep.Err())
			}
		})
	}
}

// TestUpgradeRewritesKryoValues writes every Kryo 2 value of the states
// of JDK classes as Kryo 5 and checks each against its old value (what
// the copy does), and that Kryo 5's bytes are not Kryo 2's.
func TestUpgradeRewritesKryoValues(t *testing.T) {
	ctx := context.Background()
	for _, entry := range []string{"kryojdk-hashmap-canonical", "kryojdk-rocksdb-native"} {
		t.Run(entry, func(t *testing.T) {
			r, err := testReg.Open(ctx, testdataSavepoint(t, "1.20.5", entry), snapshot.OpenOptions{TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			to, _ := ReleaseOf("2.2")
			u := newUpgrader(r, to, &snapshot.UpgradeReport{})
			rewritten, changed := 0, 0
			for _, op := range r.Snapshot().Operators {
				if err := u.operator(op); err != nil {
					t.Fatal(err)
				}
				plans := map[string]*statePlan{}
				for _, p := range u.plans[op] {
					if p.name == "jdk" || p.name == "jdks" {
						if !p.RewritesValues() {
							t.Fatalf("state %q: blocked %q, rewrites nothing", p.name, p.Blocked())
						}
						if err := p.rewriteSerializers(); err != nil {
							t.Fatal(err)
						}
						plans[p.name] = p
					}
				}
				for i := range op.Subtasks {
					for e, err := range r.Entries(ctx, op, i, keygroup.Range{Start: 0, End: op.MaxParallelism - 1}) {
						if err != nil {
							t.Fatal(err)
						}
						p := plans[e.State]
						if p == nil {
							continue
						}
						b, err := p.Rewrite(e.Value)
						if err != nil {
							t.Fatalf("%s: %v", e.State, err)
						}
						rewritten++
						if !bytes.Equal(b, e.Value) {
							changed++
						}
					}
				}
			}
			if rewritten < 50 || changed == 0 {
				t.Fatalf("%d values rewritten, %d of them changed: want the states' every value, and Kryo 5 bytes", rewritten, changed)
			}
		})
	}
}

// TestUpgradedSavepointReads upgrades the upgrade job's 1.20.5 savepoint
// (POJOs with collection fields and nested collections, JDK values under
// Kryo, in value, list and map states, with TTL) and reads every value of
// the result as verify does: Kryo 5 inside POJOs included.
func TestUpgradedSavepointReads(t *testing.T) {
	ctx := context.Background()
	dst := filepath.Join(t.TempDir(), "up")
	res, err := migrate.Run(ctx, testReg, migrate.Request{Source: testdataSavepoint(t, "1.20.5", "upgrade-hashmap-canonical"), Destination: dst,
		Format: "flink", ReaderVersion: "2.1", Upgrade: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Upgrade.Rewritten != 6 || res.Upgrade.Blocked != 0 {
		t.Fatalf("report %+v, want the six states rewritten", res.Upgrade)
	}
	up, err := testReg.Open(ctx, dst, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	read := 0
	for _, op := range up.Snapshot().Operators {
		for _, ks := range op.KeyedStates {
			codec, err := testReg.Codecs.Codec(ks.ValueType)
			if err != nil {
				t.Fatalf("state %q: %v", ks.Name, err)
			}
			for i := range op.Subtasks {
				for e, err := range up.Entries(ctx, op, i, keygroup.Range{Start: 0, End: op.MaxParallelism - 1}) {
					if err != nil {
						t.Fatal(err)
					}
					if e.State != ks.Name {
						continue
					}
					if _, err := codec.Decode(e.Value); err != nil {
						t.Fatalf("state %q key group %d: %v", ks.Name, e.KeyGroup, err)
					}
					read++
				}
			}
		}
	}
	if read < 500 {
		t.Fatalf("%d values read", read)
	}
}

// TestUpgradeRefusesDowngrade: a Flink 2.x savepoint is never carried
// back to Flink 1.x, nor is a snapshot "upgraded" within its major.
func TestUpgradeRefusesDowngrade(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ version, to, want string }{
		{"2.3.0", "1.20", "never carries state back"},
		{"1.20.5", "1.19", "nothing to upgrade"},
		{"2.3.0", "2.1", "nothing to upgrade"},
	} {
		_, err := migrate.CheckUpgrade(ctx, testReg, testdataSavepoint(t, c.version, "orders-hashmap-canonical"), c.to, nil)
		if !errors.Is(err, snapshot.ErrUnsupportedVersion) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s to %s: %v, want unsupported, saying %q", c.version, c.to, err, c.want)
		}
	}
	_, err := migrate.CheckUpgrade(ctx, testReg, testdataSavepoint(t, "2.3.0", "orders-hashmap-canonical"), "1.20", nil)
	if !errors.Is(err, snapshot.ErrDowngrade) {
		t.Errorf("2.3.0 to 1.20: %v, want ErrDowngrade", err)
	}
}

// TestUpgradeJudgesDataInFlight: Flink 2.x restores an unaligned
// checkpoint's data in flight with the checkpoint as it is, so the data
// restores as is when every state does; once a state must be rewritten
// or is blocked, the checkpoint must be copied, and the data blocks.
func TestUpgradeJudgesDataInFlight(t *testing.T) {
	op := &snapshot.Operator{ID: "3dcfac5b19b775e603b5c3f8f510a4b2"}
	for _, c := range []struct {
		name  string
		state func(*flinkupgrade.State)
		want  snapshot.Verdict
	}{
		{"every state as is", func(*flinkupgrade.State) {}, snapshot.RestoresAsIs},
		{"a state blocked", func(s *flinkupgrade.State) { s.Block("it holds what Kryo 2 wrote with its FieldSerializer") }, snapshot.Blocked},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &flinkupgrade.State{}
			c.state(s)
			u := &upgrader{to: Release{Line: "2.3"}, rep: &snapshot.UpgradeReport{To: "Flink 2.3"}, ops: []*snapshot.Operator{op},
				plans:    map[*snapshot.Operator][]*statePlan{op: {{State: s, op: op, scope: snapshot.ScopeKeyed, name: "nfaStateName"}}},
				inFlight: []inFlight{{op, snapshot.InFlightTotals{Subtasks: 2, Channels: 4, Bytes: 1102}}}}
			u.report()
			if len(u.rep.Findings) != 2 || u.rep.Findings[0].State != "" {
				t.Fatalf("findings %+v, want the operator's data in flight, then its state", u.rep.Findings)
			}
			if f := u.rep.Findings[0]; f.Verdict != c.want || !strings.Contains(f.Reason, "1102 bytes in 4 channels") {
				t.Errorf("data in flight: %q (%s), want %q", f.Verdict, f.Reason, c.want)
			}
		})
	}
}
