package flinkharness

import (
	"encoding/binary"
	"strings"
	"testing"
)

func utf(s string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(s))), s...)
}

func TestRelocatePaths(t *testing.T) {
	var in, want []byte
	add := func(b []byte, w []byte) {
		in, want = append(in, b...), append(want, w...)
	}
	add([]byte{0, 0, 0, 4, 7}, []byte{0, 0, 0, 4, 7})
	add(utf("file:/tmp/ua/snapshot/ab/chk-1/x"), utf("file:/repo/testdata/e/snapshot/ab/chk-1/x"))
	add([]byte{1, 2, 3}, []byte{1, 2, 3})
	add(utf("/tmp/ua/snapshot/shared/y"), utf("/repo/testdata/e/snapshot/shared/y"))
	add(utf("file:/tmp/ua/snapshotter/z"), utf("file:/tmp/ua/snapshotter/z"))
	add([]byte{9}, []byte{9})
	_, n, err := relocatePaths(in, "/tmp/ua/snapshot", "/repo/testdata/e/snapshot")
	if err == nil {
		t.Fatalf("a path under a longer directory name was taken for one under /tmp/ua/snapshot: %d relocated", n)
	}
	in = in[:len(in)-len(utf("file:/tmp/ua/snapshotter/z"))-1]
	want = want[:len(want)-len(utf("file:/tmp/ua/snapshotter/z"))-1]
	got, n, err := relocatePaths(in, "/tmp/ua/snapshot", "/repo/testdata/e/snapshot")
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 || string(got) != string(want) {
		t.Fatalf("relocated %d paths:\n got %q\nwant %q", n, got, want)
	}
	if _, _, err := relocatePaths([]byte("xx/tmp/ua/snapshot/a"), "/tmp/ua/snapshot", "/b"); err == nil || !strings.Contains(err.Error(), "not a whole string") {
		t.Fatalf("a path without its length was relocated: %v", err)
	}
}
