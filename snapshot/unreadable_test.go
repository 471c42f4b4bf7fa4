package snapshot

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckReadableClassAndMessage(t *testing.T) {
	snap := func(us ...Unreadable) *Snapshot {
		return &Snapshot{Operators: []*Operator{{Name: "op", Subtasks: []*Subtask{{Index: 0, Unreadable: us}}}}}
	}
	if err := CheckReadable(snap()); err != nil {
		t.Fatalf("a snapshot without unreadable state: %v", err)
	}
	unknown := Unreadable{Scope: ScopeKeyed, State: "a", Reason: "changelog not materialised"}
	damaged := Unreadable{Scope: ScopeKeyed, State: "b", Reason: "truncated at offset 12", Damaged: true}
	for _, tc := range []struct {
		name  string
		parts []Unreadable
		class error
		other error
	}{
		{"unknown form", []Unreadable{unknown}, ErrUnsupportedVersion, ErrCorrupt},
		{"damage wins", []Unreadable{unknown, damaged}, ErrCorrupt, ErrUnsupportedVersion},
	} {
		err := CheckReadable(snap(tc.parts...))
		if !errors.Is(err, tc.class) || errors.Is(err, tc.other) {
			t.Errorf("%s: %v is not only %v", tc.name, err, tc.class)
		}
		for _, u := range tc.parts {
			if !strings.Contains(err.Error(), u.Reason) {
				t.Errorf("%s: %q does not give the reason %q", tc.name, err, u.Reason)
			}
		}
		if strings.Contains(err.Error(), tc.class.Error()) {
			t.Errorf("%s: %q names its class although no reason does", tc.name, err)
		}
	}
}
