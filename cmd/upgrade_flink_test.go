package cmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/internal/flinkharness"
)

// The upgrade's restore matrix: Flink 1.x snapshots of the harness's
// upgrade jobs (POJOs with List, Collection, Set and Map fields and nested
// collections, JDK classes under Kryo, in value, list and map states, with
// TTL; with and without classes registered with Kryo), of every kind and
// backend, upgraded for each Flink 2.x release and restored there; the
// state the restored job holds must be what the 1.x job held.
var (
	upgradeFrom  = []string{"1.18.1", "1.19.3", "1.20.5"}
	upgradeTo    = []string{"2.0.2", "2.1.3", "2.2.1", "2.3.0"}
	upgradeJobs  = []string{"upgrade", "upgradereg"}
	upgradeKinds = []flinkharness.SnapshotOptions{
		{Backend: "hashmap", Kind: "canonical"}, {Backend: "hashmap", Kind: "native"}, {Backend: "hashmap", Kind: "checkpoint"},
		{Backend: "rocksdb", Kind: "canonical"}, {Backend: "rocksdb", Kind: "native"}, {Backend: "rocksdb", Kind: "checkpoint", Incremental: true},
		// A savepoint of the changelog backend (its checkpoints of these jobs,
		// never materialized and without timers, do not record the key
		// serializer, and stateutil refuses to read them).
		{Backend: "hashmap", Kind: "native", Changelog: true},
	}
)

type upgradeCell struct {
	from, to, job string
	kind          flinkharness.SnapshotOptions
}

func (c upgradeCell) source() string {
	name := fmt.Sprintf("%s-%s-%s-%s", c.from, c.job, c.kind.Backend, c.kind.Kind)
	if c.kind.Incremental {
		name += "-incremental"
	}
	if c.kind.Changelog {
		name += "-changelog"
	}
	return name
}

// upgradeCells is the whole matrix with STATEUTIL_UPGRADE_MATRIX=full
// (make test-upgrade-matrix; STATEUTIL_UPGRADE_FROM and
// STATEUTIL_UPGRADE_TO narrow its versions), else the day's cell: one of
// 1.20.5's kinds and jobs into 2.3.0, a day each.
func upgradeCells() []upgradeCell {
	narrowed := func(env string, all []string) []string {
		if v := strings.Fields(os.Getenv(env)); len(v) > 0 {
			return v
		}
		return all
	}
	var all []upgradeCell
	for _, from := range narrowed("STATEUTIL_UPGRADE_FROM", upgradeFrom) {
		for _, job := range upgradeJobs {
			for _, k := range upgradeKinds {
				for _, to := range narrowed("STATEUTIL_UPGRADE_TO", upgradeTo) {
					all = append(all, upgradeCell{from: from, to: to, job: job, kind: k})
				}
			}
		}
	}
	if os.Getenv("STATEUTIL_UPGRADE_MATRIX") == "full" {
		return all
	}
	var daily []upgradeCell
	for _, c := range all {
		if c.from == "1.20.5" && c.to == "2.3.0" {
			daily = append(daily, c)
		}
	}
	day := int(time.Now().Unix() / 86400)
	return daily[day%len(daily) : day%len(daily)+1]
}

func TestUpgradeRestoresInFlink(t *testing.T) {
	flinkharness.Require(t)
	if !flinkharness.Required() {
		t.Skip("the real-Flink upgrade matrix runs with STATEUTIL_REQUIRE_FLINK=1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Hour)
	defer cancel()
	dir := t.TempDir()
	const records = 200
	sources := map[string]string{} // snapshot by source name
	dumps := map[string]string{}
	skipped, restored, equal := 0, 0, 0
	cells := upgradeCells()
	for _, c := range cells {
		t.Run(c.source()+"-to-"+c.to, func(t *testing.T) {
			name := c.source()
			if (strings.HasPrefix(c.from, "1.18.") || strings.HasPrefix(c.from, "1.19.")) && c.kind.Changelog && c.kind.Kind == "native" && c.kind.Backend == "hashmap" {
				skipped++
				t.Skipf("Flink %s writes no native savepoint of the changelog backend over hashmap: no such source exists (testenv/flink/README.md)", c.from)
			}
			if _, ok := sources[name]; !ok {
				o := c.kind
				o.Job, o.Records, o.Dir = c.job, records, filepath.Join(dir, name)
				snap, dump, err := flinkharness.Snapshot(ctx, c.from, o)
				if err != nil {
					t.Fatalf("Flink %s: %v", c.from, err)
				}
				sources[name], dumps[name] = snap, dump
			}
			snap := sources[name]
			if snap == "" {
				t.Skip("its source snapshot failed")
			}
			line := c.to[:strings.LastIndex(c.to, ".")]
			dst := filepath.Join(dir, name+"-up-"+c.to)
			if code, out, errOut := run(t, "upgrade", snap, "--flink-version", line, "--output", dst, "-q"); code != ExitOK {
				t.Fatalf("stateutil upgrade: exit %d: %s %s", code, strings.ReplaceAll(errOut, "\n", " "), out)
			}
			restore := filepath.Join(dir, name+"-up-"+c.to+".restore.jsonl")
			if _, err := flinkharness.RestoreDump(ctx, c.to, flinkharness.RestoreOptions{Job: c.job, Snapshot: dst, Backend: c.kind.Backend,
				Records: records, Dump: restore}); err != nil {
				t.Fatalf("Flink %s did not restore the upgraded savepoint: %v", c.to, err)
			}
			restored++
			if d := flinkharness.EqualUpgradedDumps(dumpOf(t, dumps[name]), dumpOf(t, restore)); d != "" {
				t.Fatalf("Flink %s restored other state than the Flink %s job held:\n%s", c.to, c.from, d)
			}
			equal++
		})
	}
	t.Logf("upgrade matrix: %d cells, %d without a source Flink writes, %d restored, %d equal to the 1.x job's dump", len(cells), skipped, restored, equal)
}

// TestUpgradeCheckMatchesFlink compares upgrade --check's verdicts on the
// corpus's Flink 1.20.5 savepoints with what Flink 2.3.0 does with them as
// they are: a savepoint whose every state "restores as is" restores, with
// the state the 1.x job held; one with a state rewritten or blocked is
// refused or restored wrong. (That the upgraded ones restore is the
// matrix's; that a blocked upgrade writes nothing, the golden tests'.)
// With STATEUTIL_UPGRADE_MATRIX=full every entry, else one a day.
func TestUpgradeCheckMatchesFlink(t *testing.T) {
	flinkharness.Require(t)
	if !flinkharness.Required() {
		t.Skip("the real-Flink upgrade checks run with STATEUTIL_REQUIRE_FLINK=1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	entries := []string{"basic-hashmap-canonical", "collections-hashmap-canonical", "kryojdk-hashmap-canonical", "types-hashmap-canonical",
		"basic-rocksdb-native", "orders-hashmap-canonical", "upgradeblock-hashmap-canonical", "upgrade-hashmap-canonical"}
	if os.Getenv("STATEUTIL_UPGRADE_MATRIX") != "full" {
		day := int(time.Now().Unix() / 86400)
		entries = entries[day%len(entries) : day%len(entries)+1]
	}
	es, err := flinkharness.ReadCorpus(filepath.Join("..", "testdata", "flink"))
	if err != nil {
		t.Fatal(err)
	}
	more, err := flinkharness.ReadCorpus(filepath.Join("..", "testdata", "flink-upgrade"))
	if err != nil {
		t.Fatal(err)
	}
	es = append(es, more...)
	for _, name := range entries {
		t.Run(name, func(t *testing.T) {
			var e flinkharness.Entry
			for _, c := range es {
				if c.Name == name && c.Manifest.FlinkVersion == "1.20.5" {
					e = c
				}
			}
			if e.Dir == "" {
				t.Fatalf("testdata/flink/1.20.5 has no %s", name)
			}
			code, out, errOut := run(t, "upgrade", "--check", e.SnapshotDir(), "--flink-version", "2.3", "-o", "json")
			if code != ExitOK && code != ExitBlocked {
				t.Fatalf("upgrade --check: exit %d\n%s", code, errOut)
			}
			asIs := !strings.Contains(out, `"verdict": "blocked"`) && !strings.Contains(out, `"verdict": "rewritten by upgrade"`)
			dump := filepath.Join(t.TempDir(), "restore.jsonl")
			_, rerr := flinkharness.RestoreDump(ctx, "2.3.0", flinkharness.RestoreOptions{Job: e.Manifest.Job, Snapshot: e.SnapshotDir(),
				Backend: e.Manifest.Backend, Records: e.Manifest.Records, Dump: dump})
			differs := ""
			if rerr == nil {
				differs = flinkharness.EqualDumps(dumpOf(t, e.File("dump.jsonl")), dumpOf(t, dump))
			}
			switch {
			case asIs && rerr != nil:
				t.Errorf("--check says every state restores as is, and Flink 2.3.0 refused the savepoint: %v", rerr)
			case asIs && differs != "":
				t.Errorf("--check says every state restores as is, and Flink 2.3.0 restored other state:\n%s", differs)
			case !asIs && rerr == nil && differs == "":
				t.Errorf("--check says states must be rewritten or are blocked, and Flink 2.3.0 restored the savepoint as it is, equal:\n%s", out)
			default:
				t.Logf("--check: restores as is %v; Flink 2.3.0: %v %s", asIs, rerr, differs)
			}
		})
	}
}
