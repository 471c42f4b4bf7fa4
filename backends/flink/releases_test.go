package flink

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/carried"
	"github.com/stateutil/stateutil/backends/flink/internal/releases"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/metadata"
	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/storage"
)

// releaseTable is what each Flink release line writes, as real Flink
// showed it: in snapshots the harness took of 1.15.4 to 2.3.0 (2026-12-02;
// TestFlinkVersionRestoresInFlink in cmd restores what stateutil writes
// for each, and sees Flink refuse the next version), and for 1.15 to 1.17
// in the savepoints and checkpoints of Flink's own test resources
// (../shared/fixtures/flink) too. Flink reads every version up to the one
// it writes.
var releaseTable = []struct {
	flink    string
	metadata int
}{
	{"1.15", 3}, {"1.16", 4}, {"1.17", 4}, {"1.18", 4}, {"1.19", 4}, {"1.20", 4},
	{"2.0", 5}, {"2.1", 6}, {"2.2", 6}, {"2.3", 6},
}

func TestReleaseTable(t *testing.T) {
	for _, c := range releaseTable {
		for _, v := range []string{c.flink, c.flink + ".1", "v" + c.flink} {
			got, err := MetadataVersionFor(v)
			if err != nil || got != c.metadata {
				t.Errorf("MetadataVersionFor(%q) = %d, %v; Flink %s writes and reads _metadata version %d", v, got, err, c.flink, c.metadata)
			}
		}
	}
	if len(Releases) != len(releaseTable) {
		t.Errorf("%d release lines known, the table lists %d", len(Releases), len(releaseTable))
	}
	// Lines whose reading nobody checked are refused, not guessed.
	for _, v := range []string{"1.14", "1.12", "2.4", "3.0", "3", "x.y", "", "1.-1"} {
		if got, err := MetadataVersionFor(v); err == nil {
			t.Errorf("MetadataVersionFor(%q) = %d, want an error", v, got)
		}
	}
}

// The table agrees with every `_metadata` that Flink itself wrote and the
// tree holds: the State Processor API's (operatorstate/*) aside, which
// writes v3 on every 1.x.
func TestReleaseTableMatchesRealFlinkFiles(t *testing.T) {
	ver := regexp.MustCompile(`(?:flink|/)(1\.1[5-9]|1\.20|2\.\d)[./-]`)
	n := 0
	for _, f := range flinkharness.RealMetadataFiles() {
		if strings.Contains(f, "operatorstate") {
			continue
		}
		m := ver.FindStringSubmatch(filepath.ToSlash(f))
		if m == nil {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		md, err := metadata.ParseMetadata(data, f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := MetadataVersionFor(m[1])
		if err != nil || md.Version != want {
			t.Errorf("%s: Flink %s wrote _metadata version %d; the table says %d (%v)", f, m[1], md.Version, want, err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no _metadata of Flink 1.15 or later found")
	}
	t.Logf("%d _metadata files of Flink 1.15 to 2.3 agree with the table", n)
}

// A POJO field of a collection type is the one case of Flink 2's own:
// Flink 1.x serializes it with Kryo, Flink 2.x with its List, Map or Set
// serializers, so that 1.x refuses the 2.x POJO serializer ("the new
// state serializer (PojoSerializer) must not be incompatible with the old
// state serializer"). The snapshots here are Flink 2.3.0's: its POJO
// with basic fields, one field given the snapshot of its List state.
func TestPojoCollectionFieldsStayInTheirMajor(t *testing.T) {
	snaps := serializersOf(t, "../../testdata/flink/2.3.0/types-hashmap-canonical/snapshot/savepoint-f9d9da-2fc270d6d6bb")
	pojo, list := snaps["pojo"], snaps["list"]
	if pojo == nil || list == nil || len(pojo.Nested) == 0 || !strings.HasSuffix(list.Class, ".ListSerializerSnapshot") {
		t.Fatalf("types savepoint: pojo %v, list %v", pojo, list)
	}
	to19 := func(s *typeser.SerializerSnapshot) string {
		return releases.WhyNot(Release{Line: "1.19", Major: 1, Metadata: 4, OperatorHeader: 6}, 2, s, false)
	}
	to20 := func(s *typeser.SerializerSnapshot) string {
		return releases.WhyNot(Release{Line: "2.0", Major: 2, Metadata: 5, OperatorHeader: 6}, 2, s, false)
	}
	if why := to19(pojo); why != "" {
		t.Errorf("a POJO of basic fields: %s", why)
	}
	if why := to19(list); why != "" {
		t.Errorf("a List state: %s", why)
	}
	// A POJO snapshot stateutil did not parse shows no fields to check.
	unread := &typeser.SerializerSnapshot{Class: pojo.Class, Version: pojo.Version, Opaque: true}
	if why := to19(unread); !strings.Contains(why, "cannot read whole") {
		t.Errorf("an unparsed POJO snapshot for Flink 1.19: %q", why)
	}
	pojo.Nested[0] = list
	if why := to19(pojo); !strings.Contains(why, "POJO field") || !strings.Contains(why, list.Class) {
		t.Errorf("a POJO with a List field for Flink 1.19: %q", why)
	}
	if why := to20(pojo); why != "" {
		t.Errorf("a POJO with a List field for Flink 2.0: %s", why)
	}
}

// serializersOf parses the value serializer snapshot of every keyed state
// of a savepoint's operators, by state name.
func serializersOf(t *testing.T, dir string) map[string]*typeser.SerializerSnapshot {
	t.Helper()
	reg := snapshot.NewRegistry(storage.NewRegistry())
	Register(reg)
	r, err := reg.Open(context.Background(), dir, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string]*typeser.SerializerSnapshot{}
	for _, op := range r.Snapshot().Operators {
		co, err := carried.OperatorOf(op)
		if err != nil || co == nil {
			t.Fatalf("%s: %v", op.Label(), err)
		}
		for _, m := range co.Keyed {
			for _, s := range m.Serializers {
				if s.Key == "VALUE_SERIALIZER" {
					if out[m.Name], err = carried.ParseSerializerSnapshot(serializers, s.Raw); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	return out
}

func TestMetadataVersionsSummary(t *testing.T) {
	const want = "v3 for 1.15, v4 for 1.16-1.20, v5 for 2.0, v6 for 2.1-2.3"
	if got := MetadataVersions(); got != want {
		t.Errorf("MetadataVersions() = %q, want %q", got, want)
	}
}

// releases.Classes is what real Flink writes: every serializer snapshot of
// the harness's basic and types jobs, taken by each Flink version run
// (make test-flink-matrix: the newest release of every line), is one of
// them, of the version the table gives. That is what lets a savepoint
// be written for another line of its major with its snapshots unchanged.
func TestSerializerTableIsWhatFlinkWrites(t *testing.T) {
	flinkharness.Require(t)
	if !flinkharness.Required() {
		t.Skip("real-Flink snapshots are taken with STATEUTIL_REQUIRE_FLINK=1")
	}
	ctx := context.Background()
	reg := snapshot.NewRegistry(storage.NewRegistry())
	Register(reg)
	for _, v := range flinkharness.Versions() {
		for _, job := range []string{"basic", "types"} {
			t.Run(v+"/"+job, func(t *testing.T) {
				snap, _, err := flinkharness.Snapshot(ctx, v, flinkharness.SnapshotOptions{Job: job, Backend: "hashmap", Kind: "canonical",
					Records: 50, Dir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				r, err := reg.Open(ctx, snap, snapshot.OpenOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				n := 0
				var walk func(where string, s *typeser.SerializerSnapshot)
				walk = func(where string, s *typeser.SerializerSnapshot) {
					k, ok := releases.Classes[s.Class]
					switch {
					case !ok:
						t.Errorf("%s: Flink %s wrote serializer %s (version %d), which the table lacks", where, v, s.Class, s.Version)
					case s.Version != k.Version:
						t.Errorf("%s: Flink %s wrote %s of version %d; the table says %d", where, v, s.Class, s.Version, k.Version)
					}
					n++
					for _, c := range s.Nested {
						walk(where, c)
					}
				}
				for _, op := range r.Snapshot().Operators {
					co, err := carried.OperatorOf(op)
					if err != nil || co == nil {
						t.Fatalf("operator %s: %v", op.Label(), err)
					}
					raws := map[string][]byte{"key serializer": co.KeySerializer}
					for _, m := range append(append(co.Keyed, co.Operator...), co.Broadcast...) {
						for _, s := range m.Serializers {
							raws[m.Name+" "+s.Key] = s.Raw
						}
					}
					for where, raw := range raws {
						if len(raw) == 0 {
							continue
						}
						s, err := carried.ParseSerializerSnapshot(serializers, raw)
						if err != nil {
							t.Fatalf("%s %s: %v", op.Label(), where, err)
						}
						walk(op.Label()+" "+where, s)
					}
				}
				t.Logf("Flink %s, %s job: %d serializer snapshots, each in the table", v, job, n)
			})
		}
	}
}
