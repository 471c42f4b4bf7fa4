package typeser

import (
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// A Way passes values as SkipValue does: to the same offset, with the
// same answer and the same damage, whatever the bytes.
func FuzzWaySkip(f *testing.F) {
	var sers []*SerializerSnapshot
	for _, class := range []string{"java.lang.Long", "java.lang.Integer", "java.lang.String", "java.lang.Boolean",
		"java.lang.Double", "java.lang.Character", "byte[]", "void", "TimeWindow"} {
		sers = append(sers, &SerializerSnapshot{Class: CoreExprs[class]})
	}
	sers = append(sers, nil)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 7, 4, 'a', 'b', 'c'})
	f.Add([]byte{0x81, 0x01, 0xC3, 0xA9})
	f.Add([]byte{0xFF, 0xFF, 0xFF})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, s := range sers {
			for start := 0; start <= min(len(b), 3); start++ {
				want := wire.NewReader(b, "f", 0)
				want.Off = start
				wantOK := SkipValue(want, s, 0)
				got := wire.NewReader(b, "f", 0)
				got.Off = start
				way := WayOf(s)
				gotOK := way.Skip(got)
				if gotOK != wantOK || got.Off != want.Off || (got.Err == nil) != (want.Err == nil) {
					t.Fatalf("%v at %d of %x: Way.Skip = %v to %d (err %v); SkipValue = %v to %d (err %v)",
						s, start, b, gotOK, got.Off, got.Err, wantOK, want.Off, want.Err)
				}
				if got.Err != nil && got.Err.Error() != want.Err.Error() {
					t.Fatalf("%v at %d of %x: Way.Skip fails with %q; SkipValue with %q", s, start, b, got.Err, want.Err)
				}
			}
		}
	})
}
