package nonfinite

import (
	"math"
	"testing"
)

func TestSpellings(t *testing.T) {
	for _, c := range []struct {
		f    float64
		text string
	}{{math.NaN(), "NaN"}, {math.Inf(1), "Infinity"}, {math.Inf(-1), "-Infinity"}} {
		text, ok := Text(c.f)
		if !ok || text != c.text {
			t.Errorf("Text(%v) = %q, %v; want %q", c.f, text, ok, c.text)
		}
		back, ok := Parse(c.text)
		if !ok || math.IsNaN(c.f) != math.IsNaN(back) || !math.IsNaN(c.f) && back != c.f {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.text, back, ok, c.f)
		}
	}
}

// A finite number is a JSON number, and a string that only looks like a
// float's spelling to Go or to a reader of Java ("Inf", "nan",
// "+Infinity") is a string.
func TestOthersLeftAlone(t *testing.T) {
	for _, f := range []float64{0, -0.5, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		if text, ok := Text(f); ok {
			t.Errorf("Text(%v) = %q", f, text)
		}
	}
	for _, s := range []string{"Inf", "+Inf", "nan", "+Infinity", "infinity", "1e999", "", "NaN "} {
		if f, ok := Parse(s); ok {
			t.Errorf("Parse(%q) = %v", s, f)
		}
	}
}
