package verify_test

import (
	"context"
	"errors"
	"slices"
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
