package flink

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser/connectors"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/snapshot"
)

// The connector corpora hold, for every Flink version stateutil reads, a
// heap canonical and a RocksDB native savepoint and the checkpoints a
// running job leaves (a full heap one, an incremental RocksDB one) each of
// two testenv/flink jobs, with the job's dump of its connector states as
// Flink hands them over: testdata/flink-connectors (job "connectors": a
// FileSource's unfinished splits, a FileSink's writer and committer
// states) and testdata/flink-kafka (job "kafka", against a real broker: a
// KafkaSource's unfinished splits, an exactly-once KafkaSink's writer
// states and the committables of its open transactions), each version with
// the Kafka connector release built for it. Their files and transactions
// lived with the generator's run, so they are read, not restored: they sit
// apart from testdata/flink, whose entries Flink's restore witnesses too.

var connectorCorpora = []string{"flink-connectors", "flink-kafka"}

// connectorVersions and connectorKinds are what each connector corpus
// holds: every version by every kind.
var (
	connectorVersions = []string{"1.18.1", "1.19.3", "1.20.5", "2.0.2", "2.1.3", "2.2.1", "2.3.0"}
	connectorKinds    = []string{"hashmap-canonical", "hashmap-checkpoint", "rocksdb-checkpoint-incremental", "rocksdb-native"}
)

// connectorEntries is every entry of the connector corpora.
func connectorEntries(t testing.TB) []flinkharness.Entry {
	t.Helper()
	var all []flinkharness.Entry
	for _, corpus := range connectorCorpora {
		all = append(all, corpusEntries(t, corpus)...)
	}
	return all
}

// corpusEntries is one connector corpus's entries: every version of
// connectorVersions by every kind of connectorKinds, nothing else.
func corpusEntries(t testing.TB, corpus string) []flinkharness.Entry {
	t.Helper()
	es, err := flinkharness.ReadCorpus(filepath.Join(flinkharness.RepoRoot(), "testdata", corpus))
	if err != nil {
		t.Fatal(err)
	}
	job := strings.TrimPrefix(corpus, "flink-")
	var want, got []string
	for _, v := range connectorVersions {
		for _, k := range connectorKinds {
			want = append(want, v+"/"+job+"-"+k)
		}
	}
	for _, e := range es {
		got = append(got, e.Manifest.FlinkVersion+"/"+e.Name)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: want the entries %v, found %v", corpus, want, got)
	}
	return es
}

// connectorElements is every element of the connectors' states in e, by
// state name, with the element type.
func connectorElements(t testing.TB, e flinkharness.Entry) map[string][][]byte {
	t.Helper()
	ctx := context.Background()
	old, nw := e.PathMap()
	r, err := testReg.Open(ctx, e.SnapshotDir(), snapshot.OpenOptions{PathMap: map[string]string{old: nw}, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string][][]byte{}
	for _, op := range r.Snapshot().Operators {
		for _, sub := range op.Subtasks {
			for el, err := range r.Elements(ctx, op, sub.Index) {
				if err != nil {
					t.Fatal(err)
				}
				st, _ := op.OperatorStateByName(el.State)
				if strings.HasPrefix(st.ElementType.Name, typeser.TypePrefix+typeser.StateTypePrefix) {
					out[el.State] = append(out[el.State], bytes.Clone(el.Value))
				}
			}
		}
	}
	return out
}

func TestConnectorsEqualJobDump(t *testing.T) {
	for _, e := range connectorEntries(t) {
		t.Run(e.Manifest.FlinkVersion+"/"+e.Name, func(t *testing.T) {
			old, nw := e.PathMap()
			lines, parts, err := readAsDump(context.Background(), t, e.SnapshotDir(), snapshot.OpenOptions{PathMap: map[string]string{old: nw}})
			if err != nil || len(parts) != 0 {
				t.Fatalf("read: %v, unreadable %v", err, parts)
			}
			want, err := flinkharness.ReadDump(e.File("dump.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			states := map[string]int{}
			for _, l := range want {
				states[l.State]++
			}
			// One unfinished split per reader, one committer state per subtask; a
			// bucket state or two per file writer, one state per Kafka writer.
			writers := states["writer_raw_states"] >= 2
			if e.Manifest.Job == "kafka" {
				writers = states["writer_raw_states"] == 2
			}
			if states["SourceReaderState"] != 2 || !writers || states["streaming_committer_raw_states"] != 2 {
				t.Fatalf("the job dumped %v", states)
			}
			if err := flinkharness.EqualDumps(want, byUID(lines, want)); err != "" {
				t.Error(err)
			}
		})
	}
}

// TestConnectorsRoundTrip: every element decodes, and its JSON (as dump
// prints it and load reads it back) encodes to the same bytes.
func TestConnectorsRoundTrip(t *testing.T) {
	for _, e := range connectorEntries(t) {
		for state, els := range connectorElements(t, e) {
			c := connectors.Family.StateCodecs[state]()
			for i, b := range els {
				v, err := c.Decode(b)
				if _, isHex := v.(string); err != nil || isHex {
					t.Fatalf("%s/%s %s[%d]: %v %v", e.Manifest.FlinkVersion, e.Name, state, i, v, err)
				}
				text, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				dec := json.NewDecoder(bytes.NewReader(text))
				dec.UseNumber()
				var back any
				if err := dec.Decode(&back); err != nil {
					t.Fatal(err)
				}
				got, err := c.Encode(back)
				if err != nil || !bytes.Equal(got, b) {
					t.Errorf("%s/%s %s[%d]: encoded back %x, %v; want %x", e.Manifest.FlinkVersion, e.Name, state, i, got, err, b)
				}
			}
		}
	}
}

// TestConnectorsOtherBytesStay: a byte[] of a connector state name that
// no layout parses (the harness's own source's splits) stays byte[] hex,
// and writes back.
func TestConnectorsOtherBytesStay(t *testing.T) {
	c := connectors.Family.StateCodecs["SourceReaderState"]()
	data := []byte{0, 0, 0, 1, 0, 0, 0, 24, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0xca, 0, 0, 0, 0, 0, 0, 0, 0xc8}
	b := typeser.AppendBytes32(nil, data)
	v, err := c.Decode(b)
	if err != nil || v != "0x00000001000000180000000200000004000000000000"+"00ca00000000000000c8" {
		t.Fatalf("got %v, %v", v, err)
	}
	if back, err := c.Encode(v); err != nil || !bytes.Equal(back, b) {
		t.Fatalf("encoded back %x, %v", back, err)
	}
}

// TestConnectorsDamage: an element whose frame length disagrees with its
// bytes is damage, named with its offset; damage inside a split's bytes
// leaves it undecoded (byte[]), never half-read.
func TestConnectorsDamage(t *testing.T) {
	for _, e := range connectorEntries(t) {
		for state, els := range connectorElements(t, e) {
			c := connectors.Family.StateCodecs[state]()
			b := bytes.Clone(els[0])
			binary.BigEndian.PutUint32(b[8:], binary.BigEndian.Uint32(b[8:])^1)
			_, err := c.Decode(b)
			var ce *wire.CorruptError
			if !errors.As(err, &ce) || ce.Offset != 8 {
				t.Errorf("%s: flipped frame length: %v, want damage at offset 8", state, err)
			}
			b = bytes.Clone(els[0])
			b[len(b)-1] ^= 0x80
			if v, err := c.Decode(b); err != nil {
				t.Errorf("%s: %v", state, err)
			} else if m, ok := v.(map[string]any); ok {
				if back, _ := c.Encode(m); !bytes.Equal(back, b) {
					t.Errorf("%s: a damaged element decoded to %v, which does not write back", state, v)
				}
			}
		}
	}
}

// The fuzz targets decode mutated elements of one connector state each,
// seeded with one corpus's: no panic, and whatever decodes writes back to
// the same bytes.

func FuzzFileSourceSplit(f *testing.F) {
	fuzzConnectorState(f, "flink-connectors", "SourceReaderState")
}
func FuzzFileWriterBucketState(f *testing.F) {
	fuzzConnectorState(f, "flink-connectors", "writer_raw_states")
}
func FuzzCommittableCollector(f *testing.F) {
	fuzzConnectorState(f, "flink-connectors", "streaming_committer_raw_states")
}
func FuzzKafkaPartitionSplit(f *testing.F) {
	fuzzConnectorState(f, "flink-kafka", "SourceReaderState")
}
func FuzzKafkaWriterState(f *testing.F) { fuzzConnectorState(f, "flink-kafka", "writer_raw_states") }
func FuzzKafkaCommittables(f *testing.F) {
	fuzzConnectorState(f, "flink-kafka", "streaming_committer_raw_states")
}

func fuzzConnectorState(f *testing.F, corpus, state string) {
	for _, e := range corpusEntries(f, corpus) {
		for _, b := range connectorElements(f, e)[state] {
			f.Add(b)
		}
	}
	c := connectors.Family.StateCodecs[state]()
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := c.Decode(b)
		if err != nil {
			return
		}
		back, err := c.Encode(v)
		if err != nil || !bytes.Equal(back, b) {
			t.Fatalf("decoded %v, encoded back %x, %v; want %x", v, back, err, b)
		}
	})
}

// TestConnectorsVerifyDamage: verify passes the connector snapshots and
// reports a committer state element whose frame length was flipped in the
// snapshot's bytes as damage of that element.
func TestConnectorsVerifyDamage(t *testing.T) {
	ctx := context.Background()
	for _, e := range connectorEntries(t) {
		name := e.Manifest.FlinkVersion + "/" + e.Name
		old, nw := e.PathMap()
		if got := verifyFindings(ctx, t, e.SnapshotDir(), snapshot.OpenOptions{PathMap: map[string]string{old: nw}}); got != "" {
			t.Fatalf("%s: healthy snapshot: %s", name, got)
		}
		el := connectorElements(t, e)["streaming_committer_raw_states"][0]
		// The whole directory Flink wrote into: a checkpoint's shared files
		// are beside it, named by absolute path.
		root := filepath.Join(t.TempDir(), "snapshot")
		if err := os.CopyFS(root, os.DirFS(nw)); err != nil {
			t.Fatal(err)
		}
		flipped := 0
		err := filepath.WalkDir(root, func(name string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(name)
			if err != nil {
				return err
			}
			// The element's bytes follow its int length; its frame length is at 8.
			if at := bytes.Index(b, el); at >= 0 {
				b[at+11] ^= 1
				flipped++
				return os.WriteFile(name, b, 0o644)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if flipped != 1 {
			t.Fatalf("%s: element found in %d files, want 1", name, flipped)
		}
		dir := filepath.Join(root, filepath.FromSlash(e.Manifest.SnapshotSubpath))
		got := verifyFindings(ctx, t, dir, snapshot.OpenOptions{PathMap: map[string]string{old: root}})
		if !strings.Contains(got, "decode") || !strings.Contains(got, "serialized length") {
			t.Errorf("%s: flipped frame length: verify says %q", name, got)
		}
	}
}

// A source's coordinator (the split enumerator of the file and Kafka
// sources) checkpoints state beside its operator's: each connector job has
// one source, so one operator has such state (the source, where
// `_metadata` names operators: Flink 2.x).
func TestCoordinatorStateBytes(t *testing.T) {
	ctx := context.Background()
	for _, e := range connectorEntries(t) {
		old, nw := e.PathMap()
		r, err := testReg.Open(ctx, e.SnapshotDir(), snapshot.OpenOptions{PathMap: map[string]string{old: nw}, TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		var with []string
		for _, op := range r.Snapshot().Operators {
			n, ok := r.(snapshot.CoordinatorSizer).CoordinatorStateBytes(op)
			if !ok {
				t.Errorf("%s: operator %s: coordinator state not told", e.Dir, op.Label())
			}
			if n > 0 {
				with = append(with, op.Name)
			}
		}
		r.Close()
		if len(with) != 1 || with[0] != "" && !strings.HasPrefix(with[0], "Source:") {
			t.Errorf("%s: operators with coordinator state: %q, want the one source", e.Dir, with)
		}
	}
}
