package statefile

import (
	"errors"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/backends/flink/metadata"
)

// evenOffsets spreads n offsets over data, as a handle in _metadata would.
func evenOffsets(n, size int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i * size / max(n, 1))
	}
	return out
}

// FuzzOperatorStateFile feeds arbitrary bytes to the operator-state decoder
// under a handle whose offsets point into them: it must fail cleanly, with
// one of the package's errors, or account for what it accepted.
func FuzzOperatorStateFile(f *testing.F) {
	f.Add([]byte{0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0}, uint8(1))
	f.Add([]byte("\x00\x00\x00\x02\x00\x01\x00\x00\x00\x01x"), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		h := &metadata.OperatorStateHandle{Type: metadata.HandleOperatorState, States: []metadata.OperatorStateInfo{{Name: "s", Offsets: evenOffsets(int(n%16), len(data))}}}
		if _, err := ParseOperatorState(typeser.NewTable(), data, "fuzz", 0, h, false); err != nil && !errors.Is(err, wire.ErrCorrupt) && !errors.Is(err, wire.ErrUnsupportedVersion) {
			t.Fatalf("error matches no sentinel: %v", err)
		}
	})
}

// FuzzKeyGroupsFile does the same for keyed state files: header, key-group
// streams, compressed or not.
func FuzzKeyGroupsFile(f *testing.F) {
	f.Add([]byte{0, 0, 0, 6, 0}, uint16(0), uint8(1))
	f.Add([]byte{0, 0, 0, 5, 1, 0, 0}, uint16(3), uint8(4))
	f.Fuzz(func(t *testing.T, data []byte, start uint16, n uint8) {
		count := int(n%32) + 1
		h := &metadata.KeyGroupsHandle{Range: metadata.KeyGroupRange{Start: int32(start % 32768), Count: int32(count)}, Offsets: evenOffsets(count, len(data))}
		if _, err := ParseKeyGroups(typeser.NewTable(), data, "fuzz", 0, h); err != nil && !errors.Is(err, wire.ErrCorrupt) && !errors.Is(err, wire.ErrUnsupportedVersion) {
			t.Fatalf("error matches no sentinel: %v", err)
		}
	})
}
