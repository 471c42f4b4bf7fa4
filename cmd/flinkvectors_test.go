package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

func runJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), v); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, stdout.String())
	}
}

// The keygroup command reproduces every vector of FLINK-FORMATS.md §1.
func TestKeygroupCommandMatchesFlinkVectors(t *testing.T) {
	cases := []struct {
		key, typ string
		hash     int32
		kg       map[int]int
	}{
		{"0", "int", 0, map[int]int{128: 94, 4096: 2526, 32768: 31198}},
		{"42", "int", 42, map[int]int{128: 29, 4096: 3613, 32768: 28189}},
		{"1", "long", 1, map[int]int{128: 86, 4096: 4054, 32768: 16342}},
		{"4294967296", "long", 1, map[int]int{128: 86, 4096: 4054, 32768: 16342}},
		{"-1", "long", 0, map[int]int{128: 94, 4096: 2526, 32768: 31198}},
		{"hello", "string", 99162322, map[int]int{128: 35, 4096: 2723, 32768: 31395}},
		{"user-1", "string", -836031825, map[int]int{128: 121, 4096: 1657, 32768: 13945}},
		{"Flink", "string", 67968320, map[int]int{128: 127, 4096: 1663, 32768: 22143}},
		{"héllo", "string", 103094734, map[int]int{128: 18, 4096: 3602, 32768: 3602}},
		{"😀", "string", 1772899, map[int]int{128: 54, 4096: 3254, 32768: 7350}},
		{"-2147483648", "int", -2147483648, map[int]int{128: 108, 4096: 2156, 32768: 10348}},
	}
	for _, c := range cases {
		for maxP, want := range c.kg {
			var got struct {
				HashCode int32 `json:"hash_code"`
				KeyGroup int   `json:"key_group"`
			}
			runJSON(t, &got, "keygroup", "--key-type", c.typ, "--max-parallelism", itoa(maxP), "-o", "json", "--", c.key)
			if got.HashCode != c.hash || got.KeyGroup != want {
				t.Errorf("%s %q @%d: hash %d kg %d, want hash %d kg %d", c.typ, c.key, maxP, got.HashCode, got.KeyGroup, c.hash, want)
			}
		}
	}
}

// inspect shows the key-group ranges of Flink's formula (FLINK-FORMATS.md
// §1: maxP=128, p=3 -> [0,42] [43,85] [86,127]).
func TestInspectShowsFlinkKeyGroupRanges(t *testing.T) {
	var got struct {
		Operators []struct {
			UID      string `json:"uid"`
			Subtasks []struct {
				KeyGroups struct{ Start, End int } `json:"key_groups"`
			} `json:"subtasks"`
		} `json:"operators"`
	}
	runJSON(t, &got, "inspect", example, "--subtasks", "-o", "json")
	want := map[string][][2]int{
		"word-counter": {{0, 42}, {43, 85}, {86, 127}},
		"kafka-source": {{0, 63}, {64, 127}},
		"sink":         {{0, 127}},
	}
	for _, op := range got.Operators {
		w, ok := want[op.UID]
		if !ok {
			continue
		}
		if len(op.Subtasks) != len(w) {
			t.Fatalf("%s: %d subtasks, want %d", op.UID, len(op.Subtasks), len(w))
		}
		for i, s := range op.Subtasks {
			if s.KeyGroups.Start != w[i][0] || s.KeyGroups.End != w[i][1] {
				t.Errorf("%s subtask %d: [%d,%d], want %v", op.UID, i, s.KeyGroups.Start, s.KeyGroups.End, w[i])
			}
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
