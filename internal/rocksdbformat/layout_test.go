package rocksdbformat

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
	"github.com/stateutil/stateutil/keygroup"
	"github.com/stateutil/stateutil/snapshot"
)

func TestKeyLayout(t *testing.T) {
	op := rockstest.Operator("01", 1, 4096)
	cs := Codecs(op)
	for _, tc := range []struct {
		e    snapshot.Entry
		want []byte
	}{
		// 2-byte prefix, varint-length string key, void namespace = 0x00.
		{snapshot.Entry{KeyGroup: 0x0102, State: "counts", Key: []byte("ab")}, []byte{1, 2, 2, 'a', 'b', 0}},
		// int64 namespace: 8 raw bytes, no length.
		{snapshot.Entry{KeyGroup: 3, State: "sum", Key: []byte("k"), Namespace: snapshot.EncodeInt64(9)}, []byte{0, 3, 1, 'k', 0, 0, 0, 0, 0, 0, 0, 9}},
		// both variable: each length-prefixed.
		{snapshot.Entry{KeyGroup: 4, State: "events", Key: []byte("k"), Namespace: []byte("w")}, []byte{0, 4, 1, 'k', 1, 'w'}},
		// map: user key last, unprefixed.
		{snapshot.Entry{KeyGroup: 5, State: "attrs", Key: []byte("k"), UserKey: []byte("uk")}, []byte{0, 5, 1, 'k', 0, 'u', 'k'}},
	} {
		c := cs[tc.e.State]
		got, err := c.EncodeKey(nil, &tc.e)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: key %x, %v; want %x", tc.e.State, got, err, tc.want)
			continue
		}
		var back snapshot.Entry
		if err := c.DecodeKey(got, &back); err != nil {
			t.Fatal(err)
		}
		back.Value, back.ExpiresAt = tc.e.Value, tc.e.ExpiresAt
		if !back.Equal(&tc.e) {
			t.Errorf("%s: decoded %+v", tc.e.State, back)
		}
	}
	if w := newCodec(&op.KeyedStates[0], 128).prefix; w != 1 {
		t.Errorf("maxP 128 prefix %d, want 1", w)
	}
}

func TestValueLayout(t *testing.T) {
	op := rockstest.Operator("01", 1, 128)
	cs := Codecs(op)
	// TTL value: 8-byte last access = expiry - ttl, then the value.
	e := snapshot.Entry{State: "attrs", Value: []byte("v"), ExpiresAt: 60_000 + 5}
	v, err := cs["attrs"].EncodeValue(nil, &e)
	if err != nil || !bytes.Equal(v, []byte{0, 0, 0, 0, 0, 0, 0, 5, 'v'}) {
		t.Fatalf("TTL value %x, %v", v, err)
	}
	// List: elements joined by ','.
	c := cs["events"]
	var list []byte
	for _, s := range []string{"a,b", ""} {
		if list, err = c.AppendElement(list, len(list), &snapshot.Entry{State: "events", Value: []byte(s), ExpiresAt: 60_001}); err != nil {
			t.Fatal(err)
		}
	}
	want := []byte{0, 0, 0, 0, 0, 0, 0, 1, 3, 'a', ',', 'b', ',', 0, 0, 0, 0, 0, 0, 0, 1, 0}
	if !bytes.Equal(list, want) {
		t.Fatalf("list %x, want %x", list, want)
	}
	var got []string
	var x snapshot.Entry
	if _, err := c.DecodeValues(nil, list, &x, func(e *snapshot.Entry) bool {
		got = append(got, string(e.Value))
		return e.ExpiresAt == 60_001
	}); err != nil || len(got) != 2 || got[0] != "a,b" || got[1] != "" {
		t.Fatalf("decoded %q, %v", got, err)
	}
	for _, bad := range [][]byte{list[:len(list)-1], append(bytes.Clone(list), ','), {0, 0, 0}} {
		if _, err := c.DecodeValues(nil, bad, &x, func(*snapshot.Entry) bool { return true }); !errors.Is(err, snapshot.ErrCorrupt) {
			t.Errorf("%x: error %v, want ErrCorrupt", bad, err)
		}
	}
}

// TestValueSizeGuard lowers the limit instead of allocating 2 GiB (the
// format's writer has its own test, TestWriterValueSizeGuard).
func TestValueSizeGuard(t *testing.T) {
	old := MaxValueSize
	MaxValueSize = 64
	defer func() { MaxValueSize = old }()
	op := rockstest.Operator("01", 1, 128)
	in, err := OpenInstance(filepath.Join(t.TempDir(), "db"), op, 0, keygroup.Range{Start: 0, End: 127})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, snapshot.ErrTooLarge) || !strings.Contains(err.Error(), "events") && !strings.Contains(err.Error(), "agg") ||
			!strings.Contains(err.Error(), "6b6579") { // hex of "key"
			t.Errorf("%s: error %v, want ErrTooLarge naming state and key", what, err)
		}
	}
	check("value", in.Put(&snapshot.Entry{KeyGroup: 1, State: "agg", Key: []byte("key"), Value: make([]byte, 65)}))
	if err := in.Put(&snapshot.Entry{KeyGroup: 1, State: "agg", Key: []byte("key"), Value: make([]byte, 64)}); err != nil {
		t.Errorf("value at the limit: %v", err)
	}
	// A merged list crossing the limit: each element is 8+1+20 bytes.
	el := snapshot.Entry{KeyGroup: 1, State: "events", Key: []byte("key"), Namespace: []byte("n"), Value: make([]byte, 20)}
	for i := range 2 {
		if err := in.Put(&el); err != nil {
			t.Fatalf("element %d: %v", i, err)
		}
	}
	check("list", in.Put(&el))
}

func TestMetadataRefusesEscapingReferences(t *testing.T) {
	for _, f := range []File{
		{Local: "000001.sst", Path: "../x.sst"},
		{Local: "000001.sst", Path: "/etc/passwd"},
		{Local: "000001.sst", Path: "a/../../x"},
		{Local: "000001.sst", Path: "shared/x.sst"}, // shared path, not flagged shared
		{Local: "../CURRENT", Path: "a/CURRENT"},
	} {
		m := &Metadata{Snapshot: &snapshot.Snapshot{}, Handles: []*Handle{{Operator: "01", PrefixBytes: 1, Files: []File{f}}}}
		if err := m.Validate("_metadata"); !errors.Is(err, snapshot.ErrCorrupt) {
			t.Errorf("%+v: %v, want ErrCorrupt", f, err)
		}
	}
}
