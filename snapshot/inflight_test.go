package snapshot

import (
	"errors"
	"strings"
	"testing"
)

// Flink snapshots the channels of an unaligned checkpoint even where their
// buffers are empty (a result subpartition's buffer nothing was written
// into yet): a copy loses nothing there. Channels with bytes in them are
// refused, and the message counts what they hold and says why the copy
// cannot carry them. HasInFlight tells both kinds from no channels.
func TestCheckNoInFlight(t *testing.T) {
	channel := func(dir string, bytes int64) InFlight {
		return InFlight{Direction: dir, Buffers: 1, Bytes: bytes}
	}
	op := func(label string, subtasks ...[]InFlight) *Operator {
		o := &Operator{UID: label, Parallelism: len(subtasks)}
		for i, f := range subtasks {
			o.Subtasks = append(o.Subtasks, &Subtask{Index: i, InFlight: f})
		}
		return o
	}
	empty := []InFlight{channel(ResultSubpartition, 0), channel(ResultSubpartition, 0)}
	for _, c := range []struct {
		name string
		ops  []*Operator
		has  bool
		want string // "" when the copy may go ahead
	}{
		{"no channel state", []*Operator{op("a", nil, nil)}, false, ""},
		{"empty buffers only", []*Operator{op("calc", empty, empty), op("sink", []InFlight{channel(InputChannel, 0)})}, true, ""},
		{"bytes in one channel", []*Operator{op("calc", empty, empty), op("cep", nil, []InFlight{channel(InputChannel, 0), channel(InputChannel, 17)})}, true,
			`data in flight (17 bytes in 2 channels of 1 subtasks, the first operator "cep" subtask 1), which this copy cannot carry; restore`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Snapshot{Operators: c.ops}
			if got := HasInFlight(s); got != c.has {
				t.Errorf("HasInFlight: %v, want %v", got, c.has)
			}
			err := CheckNoInFlight(s, "this copy cannot carry")
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want == "":
			case !errors.Is(err, ErrUnsupportedVersion) || !strings.Contains(err.Error(), c.want):
				t.Fatalf("got %v, want ErrUnsupportedVersion saying %q", err, c.want)
			}
		})
	}
}
