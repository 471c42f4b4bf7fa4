package snapshot

import "testing"

// Operator takes a uid or an id first, then a name that only one operator
// has, then the id a uid-less operator would have been given for the label.
func TestOperatorByLabel(t *testing.T) {
	s := &Snapshot{Operators: []*Operator{
		{ID: "01", UID: "source", Name: "Source: source"},
		{ID: "02", UID: "Source: source2", Name: "map"},
		{ID: "03", UID: "sink", Name: "map"},
		{ID: "04", UID: "other", Name: "Source: source2"},
	}}
	for label, want := range map[string]string{
		"source":          "01",
		"02":              "02",
		"Source: source":  "01",
		"Source: source2": "02", // a uid wins over another operator's name
		"map":             "",   // two operators have that name
		"nope":            "",
	} {
		op, ok := s.Operator(label)
		if got := ""; ok {
			got = op.ID
			if got != want {
				t.Errorf("Operator(%q) = %s, want %q", label, got, want)
			}
		} else if want != "" {
			t.Errorf("Operator(%q) not found, want %s", label, want)
		}
	}
}

// A job's operator restores from the one with its uid, never from one that
// only bears its uid as a name: Flink pairs operators by id.
func TestOperatorOfUIDIgnoresNames(t *testing.T) {
	s := &Snapshot{Operators: []*Operator{
		{ID: "01", UID: "source", Name: "Source: source"},
		{ID: "02", Name: "legacy"},
	}}
	for uid, want := range map[string]string{
		"source":         "01",
		"01":             "01",
		"legacy":         "02", // recorded without a uid, so its name stands for one
		"Source: source": "",
	} {
		op, ok := s.OperatorOfUID(uid)
		switch {
		case ok && op.ID != want:
			t.Errorf("OperatorOfUID(%q) = %s, want %q", uid, op.ID, want)
		case !ok && want != "":
			t.Errorf("OperatorOfUID(%q) not found, want %s", uid, want)
		}
	}
}
