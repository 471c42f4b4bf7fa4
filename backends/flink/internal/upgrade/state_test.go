package upgrade

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
)

// TestRewriteRefusesWhatDoesNotReadBack: a value whose new bytes decode
// to something else than its old bytes held (here a double that a float
// cannot hold) fails the rewrite, and one that does not is written.
func TestRewriteRefusesWhatDoesNotReadBack(t *testing.T) {
	leaf := func(c string) *typeser.SerializerSnapshot {
		return &typeser.SerializerSnapshot{Class: typeutils + c, Version: 3}
	}
	p := &State{env: &Env{}, nodes: map[*typeser.SerializerSnapshot]bool{},
		old: leaf("DoubleSerializer$DoubleSerializerSnapshot"), new: leaf("FloatSerializer$FloatSerializerSnapshot")}
	value := func(f float64) []byte { return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)) }
	if _, err := p.Rewrite(value(0.1)); !errors.Is(err, ErrRewriteMismatch) {
		t.Fatalf("0.1 as a float: %v, want ErrRewriteMismatch", err)
	}
	b, err := p.Rewrite(value(0.5))
	if err != nil || len(b) != 4 || math.Float32frombits(binary.BigEndian.Uint32(b)) != 0.5 {
		t.Fatalf("0.5 as a float: %x, %v", b, err)
	}
}
