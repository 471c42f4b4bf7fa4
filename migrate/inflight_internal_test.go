package migrate

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/redistribute"
	"github.com/stateutil/stateutil/snapshot"
)

// unalignedSnapshot has an operator whose channels hold records ("held":
// 10 bytes in subtask 1), one whose channels are empty ("empty") and one
// without channels ("none").
func unalignedSnapshot() *snapshot.Snapshot {
	op := func(uid string, inFlight ...[]snapshot.InFlight) *snapshot.Operator {
		o := &snapshot.Operator{UID: uid, ID: uid, Parallelism: len(inFlight), MaxParallelism: 128}
		for i, f := range inFlight {
			o.Subtasks = append(o.Subtasks, &snapshot.Subtask{Index: i, InFlight: f})
		}
		return o
	}
	in := func(bytes int64) snapshot.InFlight {
		return snapshot.InFlight{Direction: snapshot.InputChannel, Buffers: 1, Bytes: bytes}
	}
	return &snapshot.Snapshot{Operators: []*snapshot.Operator{
		op("held", []snapshot.InFlight{in(0)}, []snapshot.InFlight{in(4), in(6)}),
		op("empty", []snapshot.InFlight{in(0)}, nil),
		op("none", nil, nil),
	}}
}

// A copy carries the data in flight only where the job's shape stays, to
// a format whose writer carries it as the copy writes; else it refuses
// records in flight, saying why, and leaves out channels that hold none.
func TestInFlightCopy(t *testing.T) {
	s := unalignedSnapshot()
	op := func(uid string) *snapshot.Operator { o, _ := s.OperatorOfUID(uid); return o }
	flink := &snapshot.Format{Name: "flink", CarriesInFlight: func(_ *snapshot.Snapshot, opts snapshot.WriteOptions) string {
		if opts.ReaderVersion != "" {
			return "a savepoint for Flink " + opts.ReaderVersion + " cannot carry"
		}
		return ""
	}}
	dropped := func(uid string) []snapshot.UnreadablePart {
		return []snapshot.UnreadablePart{{Operator: uid, Subtask: 0, Unreadable: snapshot.Unreadable{Scope: snapshot.ScopeKeyed}}}
	}
	carried := &InFlight{Channels: 4, Bytes: 10}
	for _, c := range []struct {
		name string
		c    inFlightCopy
		want *InFlight
		says string // the refusal's reason
	}{
		{"shape kept", inFlightCopy{format: flink, from: "flink"}, carried, ""},
		{"another format", inFlightCopy{format: &snapshot.Format{Name: "filesystem"}, from: "flink"}, nil, `which only a copy to the flink format carries (format "filesystem" holds none)`},
		{"the format's own reason", inFlightCopy{format: flink, from: "flink", opts: snapshot.WriteOptions{ReaderVersion: "1.20"}}, nil, "which a savepoint for Flink 1.20 cannot carry"},
		{"parallelism", inFlightCopy{format: flink, from: "flink", change: redistribute.Request{Parallelism: 3}}, nil,
			`which a copy that changes the parallelism or max parallelism of operator "held" cannot carry`},
		// Moving an operator whose channels hold none is no better: records
		// in output buffers are partitioned for their consumers.
		{"another operator's parallelism", inFlightCopy{format: flink, from: "flink", change: redistribute.Request{Operators: map[string]int{"none": 1}}}, nil, `parallelism of operator "none" cannot carry`},
		{"max parallelism", inFlightCopy{format: flink, from: "flink", change: redistribute.Request{MaxParallelism: 256}}, nil, `max parallelism of operator "held"`},
		{"the parallelism it has", inFlightCopy{format: flink, from: "flink", change: redistribute.Request{Parallelism: 2, Operators: map[string]int{"none": 2}}}, carried, ""},
		{"the max parallelism it has", inFlightCopy{format: flink, from: "flink", change: redistribute.Request{MaxParallelism: 128}}, carried, ""},
		{"an operator removed", inFlightCopy{format: flink, from: "flink", edits: []Edit{{Operator: "none", Remove: true}}}, nil, `removes or renames operators cannot carry (it edits operator "none")`},
		{"edits of an operator that holds records", inFlightCopy{format: flink, from: "flink", edited: []*snapshot.Operator{op("none"), op("held")}}, nil, `the edits change operator "held"`},
		{"edits of operators that hold none", inFlightCopy{format: flink, from: "flink", edited: []*snapshot.Operator{op("none"), op("empty")}}, carried, ""},
		{"unreadable state dropped where records are", inFlightCopy{format: flink, from: "flink", dropped: dropped("held")}, nil, `--skip-unreadable leaves out state of operator "held" (subtask 0), whose channels hold records in flight`},
		{"unreadable state dropped elsewhere", inFlightCopy{format: flink, from: "flink", dropped: dropped("empty")}, carried, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.c.carry(s)
			switch {
			case c.says == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.says != "" && (!errors.Is(err, snapshot.ErrUnsupportedVersion) || !strings.Contains(err.Error(), c.says) ||
				!strings.Contains(err.Error(), `10 bytes in 3 channels of 2 subtasks, the first operator "held" subtask 1`)):
				t.Fatalf("got %v, want a refusal saying %q", err, c.says)
			case !reflect.DeepEqual(got, c.want):
				t.Fatalf("carried %+v, want %+v", got, c.want)
			}
		})
	}
	// Channels that hold no records are left out of a copy that cannot
	// carry them, which loses nothing; a snapshot without channels has
	// nothing to carry.
	empty := &snapshot.Snapshot{Operators: s.Operators[1:]}
	if got, err := (inFlightCopy{format: &snapshot.Format{Name: "filesystem"}, from: "flink"}).carry(empty); got != nil || err != nil {
		t.Errorf("empty channels to another format: %+v, %v", got, err)
	}
	if got, err := (inFlightCopy{format: flink, from: "flink"}).carry(empty); err != nil || !reflect.DeepEqual(got, &InFlight{Channels: 1}) {
		t.Errorf("empty channels, shape kept: %+v, %v; want them carried", got, err)
	}
	none := &snapshot.Snapshot{Operators: s.Operators[2:]}
	if got, err := (inFlightCopy{format: flink, from: "flink"}).carry(none); got != nil || err != nil {
		t.Errorf("no channels: %+v, %v", got, err)
	}
}

// Verify's comparison of the channels: a copy that holds another number
// of buffers or bytes in a channel, lacks one, or has one more, differs,
// named by operator and subtask; where it is a file matters not.
func TestInFlightDiffers(t *testing.T) {
	s := unalignedSnapshot()
	same := unalignedSnapshot()
	same.Operators[0].Subtasks[1].InFlight[0].File = "op1-1-channels"
	if errs := inFlightDiffers(s, same); len(errs) != 0 {
		t.Fatalf("the same channels differ: %v", errs)
	}
	for name, edit := range map[string]func(d *snapshot.Snapshot){
		"bytes":   func(d *snapshot.Snapshot) { d.Operators[0].Subtasks[1].InFlight[1].Bytes-- },
		"buffers": func(d *snapshot.Snapshot) { d.Operators[0].Subtasks[1].InFlight[1].Buffers++ },
		"lacks": func(d *snapshot.Snapshot) {
			d.Operators[0].Subtasks[1].InFlight = d.Operators[0].Subtasks[1].InFlight[:1]
		},
		"more": func(d *snapshot.Snapshot) {
			d.Operators[0].Subtasks[0].InFlight = append(d.Operators[0].Subtasks[0].InFlight, snapshot.InFlight{})
		},
		"gone": func(d *snapshot.Snapshot) { d.Operators[0].Subtasks = d.Operators[0].Subtasks[:1] },
	} {
		t.Run(name, func(t *testing.T) {
			d := unalignedSnapshot()
			edit(d)
			errs := inFlightDiffers(s, d)
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), `operator "held" subtask`) {
				t.Fatalf("got %v, want one difference of operator held", errs)
			}
		})
	}
}
