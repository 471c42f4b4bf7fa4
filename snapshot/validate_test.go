package snapshot

import (
	"errors"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/keygroup"
)

// valid is a snapshot Validate accepts: a keyed operator at parallelism 3
// of 128 and a source at parallelism 2.
func valid() *Snapshot {
	op := func(id, uid string, p int) *Operator {
		o := &Operator{ID: id, UID: uid, Name: "Op " + uid, Parallelism: p, MaxParallelism: 128}
		for i := range p {
			o.Subtasks = append(o.Subtasks, &Subtask{Index: i, KeyGroups: keygroup.RangeOf(128, p, i)})
		}
		return o
	}
	keyed := op("2e588ce1c86a9d46e2e85186773ce4fd", "counter", 3)
	keyed.KeyedStates = []KeyedState{
		{Name: "count", Kind: Value, KeyType: Type{Name: TypeString}, ValueType: Type{Name: TypeInt64}},
		{Name: "timers", Kind: Timer},
		{Name: "old", Kind: Folding},
	}
	// A keyed and an operator state may share a name: they live in
	// different backends.
	keyed.OperatorStates = []OperatorState{{Name: "count", Mode: Union}}
	source := op("0a448493b4782967b150582570326227", "source", 2)
	source.OperatorStates = []OperatorState{{Name: "offsets", Mode: Split}, {Name: "rules", Mode: Broadcast}}
	return &Snapshot{Format: "memory", JobID: "job", Kind: Checkpoint, Operators: []*Operator{keyed, source},
		Properties: map[string]string{"k": "v"}}
}

func TestValidateAcceptsWhatReadersRelyOn(t *testing.T) {
	if err := Validate(valid(), "f"); err != nil {
		t.Fatal(err)
	}
	s := valid()
	s.Operators[0].Name = strings.Repeat("n", MaxStringBytes)
	s.Operators[0].Parallelism, s.Operators[0].MaxParallelism = 1, 1
	s.Operators[0].Subtasks = []*Subtask{{KeyGroups: keygroup.Range{Start: 0, End: 0}}}
	if err := Validate(s, "f"); err != nil {
		t.Fatalf("a name of exactly MaxStringBytes, parallelism 1 of 1: %v", err)
	}
}

func TestValidateRefuses(t *testing.T) {
	long := strings.Repeat("x", MaxStringBytes+1)
	keyed := func(s *Snapshot) *Operator { return s.Operators[0] }
	for _, tc := range []struct {
		name string
		edit func(s *Snapshot)
		want string
	}{
		{"parallelism 0", func(s *Snapshot) { keyed(s).Parallelism = 0 }, "parallelism 0 must be at least 1"},
		{"negative parallelism", func(s *Snapshot) { keyed(s).Parallelism = -2 }, "parallelism -2 must be at least 1"},
		{"max parallelism 0", func(s *Snapshot) { keyed(s).MaxParallelism = 0 }, "max parallelism 0 is outside 1..32768"},
		{"max parallelism too large", func(s *Snapshot) { keyed(s).MaxParallelism = 32769 }, "max parallelism 32769 is outside 1..32768"},
		{"parallelism above max", func(s *Snapshot) { keyed(s).MaxParallelism = 2 }, "parallelism 3 exceeds max parallelism 2"},
		{"fewer subtasks", func(s *Snapshot) { keyed(s).Subtasks = keyed(s).Subtasks[:2] }, "parallelism 3 but 2 subtasks"},
		{"more subtasks", func(s *Snapshot) {
			keyed(s).Subtasks = append(keyed(s).Subtasks, &Subtask{Index: 3})
		}, "parallelism 3 but 4 subtasks"},
		{"null subtask", func(s *Snapshot) { keyed(s).Subtasks[1] = nil }, "subtask 1 is null"},
		{"subtasks out of order", func(s *Snapshot) {
			st := keyed(s).Subtasks
			st[0], st[1] = st[1], st[0]
		}, "subtask 1 is stored at position 0"},
		{"range not Flink's", func(s *Snapshot) { keyed(s).Subtasks[1].KeyGroups.End++ }, "subtask 1 has key groups [43,86], but Flink assigns it [43,85]"},
		{"empty range", func(s *Snapshot) { keyed(s).Subtasks[2].KeyGroups = keygroup.Range{Start: 0, End: -1} }, "subtask 2 has key groups []"},
		{"duplicate operator id", func(s *Snapshot) { s.Operators[1].ID = keyed(s).ID }, `operator "source": id 2e588ce1c86a9d46e2e85186773ce4fd is also operator 0's`},
		{"duplicate keyed state", func(s *Snapshot) { keyed(s).KeyedStates[1].Name = "count" }, `keyed state "count" declared twice`},
		{"duplicate operator state", func(s *Snapshot) { s.Operators[1].OperatorStates[1].Name = "offsets" }, `operator state "offsets" declared twice`},
		{"unknown kind", func(s *Snapshot) { keyed(s).KeyedStates[0].Kind = "valve" }, `keyed state "count": unknown kind "valve"`},
		{"no kind", func(s *Snapshot) { keyed(s).KeyedStates[0].Kind = "" }, `keyed state "count": unknown kind ""`},
		{"unknown mode", func(s *Snapshot) { s.Operators[1].OperatorStates[0].Mode = "SPLIT_DISTRIBUTE" }, `operator state "offsets": unknown mode "SPLIT_DISTRIBUTE"`},
		{"null operator", func(s *Snapshot) { s.Operators[1] = nil }, "operator 1 is null"},
		{"long operator name", func(s *Snapshot) { keyed(s).Name = long }, "operator 0: name of 65537 bytes"},
		{"long uid", func(s *Snapshot) { keyed(s).UID = long }, "operator 0: uid of 65537 bytes"},
		{"long id", func(s *Snapshot) { keyed(s).ID = long }, "operator 0: id of 65537 bytes"},
		{"long keyed state name", func(s *Snapshot) { keyed(s).KeyedStates[0].Name = long }, "keyed state name of 65537 bytes"},
		{"long operator state name", func(s *Snapshot) { s.Operators[1].OperatorStates[0].Name = long }, "operator state name of 65537 bytes"},
		{"long type name", func(s *Snapshot) { keyed(s).KeyedStates[0].ValueType.Name = long }, `keyed state "count": value type: name of 65537 bytes`},
		{"long type class", func(s *Snapshot) { keyed(s).KeyedStates[0].KeyType.Class = long }, `keyed state "count": key type: class of 65537 bytes`},
		{"long element type", func(s *Snapshot) { s.Operators[1].OperatorStates[1].ElementType.Name = long }, `operator state "rules": element type: name of 65537 bytes`},
		{"long job id", func(s *Snapshot) { s.JobID = long }, "job id of 65537 bytes"},
		{"long property", func(s *Snapshot) { s.Properties["k"] = long }, `property "k" of 65537 bytes`},
		{"long property name", func(s *Snapshot) { s.Properties[long] = "v" }, "property name of 65537 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := valid()
			tc.edit(s)
			err := Validate(s, "/snap/_metadata")
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.File != "/snap/_metadata" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a CorruptError of /snap/_metadata saying %q", err, tc.want)
			}
			if len(err.Error()) > 400 {
				t.Fatalf("a message of %d bytes: long strings must be cut", len(err.Error()))
			}
		})
	}
	if err := Validate(nil, "f"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("nil snapshot: %v", err)
	}
}
