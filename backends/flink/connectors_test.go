package flink

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/flinkharness"
	"github.com/stateutil/stateutil/snapshot"
)

// The connectors entries (testenv/flink job "connectors", Flink 1.20.5 and
// 2.3.0) hold a FileSource's unfinished splits and a FileSink's writer and
// committer states. The job dumps its splits and keyed state; the sink's
// states it does not see, so they are checked against what the file sink
// promises of them instead.

func connectorEntries(t testing.TB) []flinkharness.Entry {
	t.Helper()
	es, err := flinkharness.ReadCorpus(filepath.Join(repoRoot(t), "testdata", "flink-connectors"))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 {
		t.Fatalf("want the connectors entries of 1.20.5 and 2.3.0, found %d", len(es))
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
				if strings.HasPrefix(st.ElementType.Name, typePrefix+connectorTypePrefix) {
					out[el.State] = append(out[el.State], bytes.Clone(el.Value))
				}
			}
		}
	}
	return out
}

func TestConnectorsEqualJobDump(t *testing.T) {
	for _, e := range connectorEntries(t) {
		t.Run(e.Manifest.FlinkVersion, func(t *testing.T) {
			old, nw := e.PathMap()
			lines, parts, err := readAsDump(context.Background(), t, e.SnapshotDir(), snapshot.OpenOptions{PathMap: map[string]string{old: nw}})
			if err != nil || len(parts) != 0 {
				t.Fatalf("read: %v, unreadable %v", err, parts)
			}
			want, err := flinkharness.ReadDump(e.File("dump.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			dumped := map[string]bool{}
			splits := 0
			for _, l := range want {
				dumped[l.Operator] = true
				if l.State == "SourceReaderState" {
					splits++
				}
			}
			if splits != 2 {
				t.Fatalf("the job dumped %d splits, want one unfinished split per reader", splits)
			}
			var got []flinkharness.Line
			sinkStates := map[string]int{}
			for _, l := range byUID(lines, want) {
				if dumped[l.Operator] {
					got = append(got, l)
					continue
				}
				sinkStates[l.State]++
				checkSinkElement(t, l)
			}
			if err := flinkharness.EqualDumps(want, got); err != "" {
				t.Error(err)
			}
			if sinkStates["writer_raw_states"] == 0 || sinkStates["streaming_committer_raw_states"] != 2 {
				t.Errorf("sink states read: %v, want writer states and one committer state per subtask", sinkStates)
			}
		})
	}
}

// checkSinkElement checks a file sink state element against what the
// sink keeps: its files under the bucket's directory, a local file's
// recoverable naming the same file and, for a pending file, the size
// written so far.
func checkSinkElement(t *testing.T, l flinkharness.Line) {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(l.Value, &v); err != nil {
		t.Fatalf("%s: not decoded: %s", l.State, l.Value)
	}
	checkFile := func(bucket string, f map[string]any, rec string) {
		path, _ := f["path"].(string)
		r, _ := f[rec].(map[string]any)
		if !strings.HasPrefix(path, "file:/") || !strings.Contains(path, "/out/"+bucket+"/part-") || r["@recoverable"] != "LocalRecoverable" || "file:"+r["targetFile"].(string) != path {
			t.Errorf("%s: file %v of bucket %q", l.State, f, bucket)
		}
		if size, ok := f["size"].(float64); ok && r["offset"].(float64) != size {
			t.Errorf("%s: pending file of %v bytes, recoverable at %v", l.State, size, r["offset"])
		}
	}
	switch l.State {
	case "writer_raw_states":
		bucket, _ := v["bucketId"].(string)
		if !strings.HasSuffix(v["bucketPath"].(string), "/out/"+bucket) {
			t.Errorf("bucket %q at %v", bucket, v["bucketPath"])
		}
		// Bucket "open" never rolls: its part file is in progress.
		if f, ok := v["inProgressFile"].(map[string]any); ok {
			checkFile(bucket, f, "resumable")
		} else if bucket == "open" {
			t.Errorf("bucket open without its in-progress file: %s", l.Value)
		}
	case "streaming_committer_raw_states":
		for _, c := range v["checkpoints"].([]any) {
			cp := c.(map[string]any)
			if cp["checkpointId"].(float64) != 1 || cp["numberOfSubtasks"].(float64) != 2 {
				t.Errorf("checkpoint %v", cp)
			}
			for _, s := range cp["subtasks"].([]any) {
				for _, q := range s.(map[string]any)["requests"].([]any) {
					cm := q.(map[string]any)["committable"].(map[string]any)
					// Only bucket "rolled" rolls on checkpoints.
					if cm["bucketId"] != "rolled" {
						t.Errorf("committable of bucket %v", cm["bucketId"])
					}
					checkFile("rolled", cm["pendingFile"].(map[string]any), "commitRecoverable")
				}
			}
		}
	default:
		t.Errorf("state %s of an operator the job does not dump", l.State)
	}
}

// TestConnectorsRoundTrip: every element decodes, and its JSON (as dump
// prints it and load reads it back) encodes to the same bytes.
func TestConnectorsRoundTrip(t *testing.T) {
	for _, e := range connectorEntries(t) {
		for state, els := range connectorElements(t, e) {
			c, _ := newConnectorCodec(state)
			for i, b := range els {
				v, err := c.Decode(b)
				if _, isHex := v.(string); err != nil || isHex {
					t.Fatalf("%s %s[%d]: %v %v", e.Manifest.FlinkVersion, state, i, v, err)
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
					t.Errorf("%s %s[%d]: encoded back %x, %v; want %x", e.Manifest.FlinkVersion, state, i, got, err, b)
				}
			}
		}
	}
}

// TestConnectorsOtherBytesStay: a byte[] of a connector state name that
// no layout parses (the harness's own source's splits) stays byte[] hex,
// and writes back.
func TestConnectorsOtherBytesStay(t *testing.T) {
	c, _ := newConnectorCodec("SourceReaderState")
	data := []byte{0, 0, 0, 1, 0, 0, 0, 24, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0xca, 0, 0, 0, 0, 0, 0, 0, 0xc8}
	b := appendBytes32(nil, data)
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
			c, _ := newConnectorCodec(state)
			b := bytes.Clone(els[0])
			binary.BigEndian.PutUint32(b[8:], binary.BigEndian.Uint32(b[8:])^1)
			_, err := c.Decode(b)
			var ce *CorruptError
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

// FuzzConnectorStates decodes mutated connector elements: no panic, and
// whatever decodes writes back to the same bytes.
func FuzzConnectorStates(f *testing.F) {
	states := []string{"SourceReaderState", "writer_raw_states", "streaming_committer_raw_states"}
	for _, e := range connectorEntries(f) {
		for state, els := range connectorElements(f, e) {
			for i, s := range states {
				if s == state {
					for _, b := range els {
						f.Add(byte(i), b)
					}
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, which byte, b []byte) {
		c, _ := newConnectorCodec(states[int(which)%len(states)])
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
