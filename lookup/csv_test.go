package lookup

import (
	"bytes"
	"encoding/csv"
	"testing"
)

// AppendCSVRow writes what encoding/csv writes.
func FuzzAppendCSVRow(f *testing.F) {
	for _, s := range []string{"", "a", "a,b", `say "hi"`, " lead", "\tx", "line\nbreak", "cr\r", `\.`, "\u00a0nbsp", "é", "\xff"} {
		f.Add(s, "x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		var want bytes.Buffer
		w := csv.NewWriter(&want)
		if err := w.Write([]string{a, b, a}); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if got := AppendCSVRow(nil, []string{a, b, a}); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("fields %q %q:\n got %q\nwant %q", a, b, got, want.Bytes())
		}
	})
}
