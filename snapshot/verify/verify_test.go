package verify_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
	"github.com/stateutil/stateutil/snapshot/verify"
)

// Readers refuse unknown state kinds when they open a snapshot, but Check
// is given any Reader, and a library user may edit the model it holds:
// a kind no format knows is a finding.
func TestUnknownStateKind(t *testing.T) {
	ctx := context.Background()
	const example = "../../testdata/memory/example.dump"
	reg := formattest.Registry(memory.Register)
	r, err := reg.Open(ctx, example, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := verify.Check(ctx, example, r, reg.Codecs)
	if err != nil || !res.OK {
		t.Fatalf("the example: %+v, %v", res, err)
	}
	op, _ := r.Snapshot().Operator("word-counter")
	op.KeyedStates[1].Kind = "valve"
	res, err = verify.Check(ctx, example, r, reg.Codecs)
	if err != nil {
		t.Fatal(err)
	}
	want := verify.Finding{Check: verify.CheckKind, Operator: "word-counter", Message: `keyed state "recent" has unknown kind "valve"`}
	if res.OK || len(res.Findings) != 1 || res.Findings[0] != want {
		t.Fatalf("findings %+v, want only %+v", res.Findings, want)
	}
}

// wholeChecked is a Reader whose whole-snapshot check finds err.
type wholeChecked struct {
	snapshot.Reader
	err error
}

func (w wholeChecked) CheckWhole(context.Context) error { return w.err }

// Each error a format's whole-snapshot check joins is a finding of its
// own: a checksum manifest names every damaged file apart.
func TestCheckWholeJoinedErrors(t *testing.T) {
	ctx := context.Background()
	const example = "../../testdata/memory/example.dump"
	reg := formattest.Registry(memory.Register)
	r, err := reg.Open(ctx, example, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, b := snapshot.Corrupt("a", -1, "damaged"), snapshot.Corrupt("b", 7, "damaged")
	res, err := verify.Check(ctx, example, wholeChecked{r, errors.Join(a, b)}, reg.Codecs)
	if err != nil {
		t.Fatal(err)
	}
	want := []verify.Finding{{Check: verify.CheckRead, Message: a.Error()}, {Check: verify.CheckRead, Message: b.Error()}}
	if res.OK || !slices.Equal(res.Findings, want) {
		t.Fatalf("findings %+v, want %+v", res.Findings, want)
	}
}

// A state a subtask could not read only for want of a serializer (its
// values not told apart) is no damage: it is counted as not decoded, its
// values summed over subtasks where the snapshot records them; damage
// beside it is still a finding.
func TestUnreadableForWantOfSerializer(t *testing.T) {
	ctx := context.Background()
	const example = "../../testdata/memory/example.dump"
	reg := formattest.Registry(memory.Register)
	r, err := reg.Open(ctx, example, snapshot.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	op, _ := r.Snapshot().Operator("word-counter")
	kryo := snapshot.Unreadable{Scope: snapshot.ScopeKeyed, State: "recent", Reason: "values not told apart",
		Serializer: "com.acme.EventSerializer", ValueClass: "com.acme.Event"}
	counted, uncounted := kryo, kryo
	counted.Values = 5
	op.Subtasks[0].Unreadable = []snapshot.Unreadable{counted}
	op.Subtasks[1].Unreadable = []snapshot.Unreadable{counted}
	res, err := verify.Check(ctx, example, r, reg.Codecs)
	if err != nil {
		t.Fatal(err)
	}
	want := verify.NotDecoded{Operator: "word-counter", State: "recent", Part: verify.PartState,
		Serializer: "com.acme.EventSerializer", ValueClass: "com.acme.Event", Count: 10}
	if !res.OK || len(res.NotDecoded) != 1 || res.NotDecoded[0] != want || want.Values() != "10" {
		t.Fatalf("ok %v, findings %+v, not decoded %+v, want only %+v", res.OK, res.Findings, res.NotDecoded, want)
	}

	damaged := snapshot.Unreadable{Scope: snapshot.ScopeKeyed, State: "count", Reason: "checksum mismatch", Damaged: true, Serializer: "x"}
	op.Subtasks[2].Unreadable = []snapshot.Unreadable{uncounted, damaged}
	res, err = verify.Check(ctx, example, r, reg.Codecs)
	if err != nil {
		t.Fatal(err)
	}
	want.Count, want.Uncounted = 10, true
	if res.OK || len(res.Findings) != 1 || res.Findings[0].Check != verify.CheckUnreadable || !strings.Contains(res.Findings[0].Message, "checksum mismatch") {
		t.Errorf("findings %+v, want the damaged state alone", res.Findings)
	}
	if len(res.NotDecoded) != 1 || res.NotDecoded[0] != want || res.NotDecoded[0].Values() != ">=10" {
		t.Errorf("not decoded %+v, want %+v (>=10)", res.NotDecoded, want)
	}
	only := verify.NotDecoded{Part: verify.PartState, Uncounted: true}
	if only.Values() != "?" {
		t.Errorf("a state of no counted values shows %q, want ?", only.Values())
	}
}
