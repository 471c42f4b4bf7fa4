// Package nonfinite spells the floats that JSON has no number for, NaN and
// the infinities, the one way every decoder here writes them and every
// encoder reads them: as the strings "NaN", "Infinity" and "-Infinity"
// (Java's Double.toString).
package nonfinite

import "math"

// Text is f's spelling; ok is false when f is a finite number.
func Text(f float64) (text string, ok bool) {
	switch {
	case math.IsNaN(f):
		return "NaN", true
	case math.IsInf(f, 1):
		return "Infinity", true
	case math.IsInf(f, -1):
		return "-Infinity", true
	}
	return "", false
}

// Parse is the float that text spells; ok is false when text is none of
// the three spellings.
func Parse(text string) (f float64, ok bool) {
	switch text {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	return 0, false
}
