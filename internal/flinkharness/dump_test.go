package flinkharness

import (
	"strings"
	"testing"
)

func parse(t *testing.T, s string) []Line {
	t.Helper()
	ls, err := ParseDump([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func TestEqualDumpsNumbersNumerically(t *testing.T) {
	a := parse(t, `{"key":"k","kind":"value","operator":"o","state":"d","value":1.0}
{"key":"k","kind":"value","operator":"o","state":"e","value":[0.5,12345678901234567890]}`)
	b := parse(t, `{"kind":"value","key":"k","operator":"o","state":"d","value":1}
{"key":"k","kind":"value","operator":"o","state":"e","value":[5e-1,12345678901234567890]}`)
	if d := EqualDumps(a, b); d != "" {
		t.Fatalf("want equal, got %s", d)
	}
	c := parse(t, `{"key":"k","kind":"value","operator":"o","state":"d","value":1}
{"key":"k","kind":"value","operator":"o","state":"e","value":[0.5,12345678901234567891]}`)
	if d := EqualDumps(a, c); d == "" {
		t.Fatal("integers that differ in the last digit compared equal")
	}
}

func TestEqualDumpsOperatorState(t *testing.T) {
	a := parse(t, `{"kind":"split","operator":"o","state":"s","subtask":0,"value":[0,5]}
{"kind":"split","operator":"o","state":"s","subtask":1,"value":[1,5]}
{"kind":"union","operator":"o","state":"u","subtask":0,"value":"x"}
{"kind":"broadcast","operator":"b","state":"r","subtask":0,"value":{"key":"a","value":"1"}}
{"kind":"broadcast","operator":"b","state":"r","subtask":1,"value":{"key":"a","value":"1"}}`)
	// Rescaled to 3: split elements moved, union and broadcast copied to every subtask.
	b := parse(t, `{"kind":"split","operator":"o","state":"s","subtask":2,"value":[0,5]}
{"kind":"split","operator":"o","state":"s","subtask":0,"value":[1,5]}
{"kind":"union","operator":"o","state":"u","subtask":0,"value":"x"}
{"kind":"union","operator":"o","state":"u","subtask":1,"value":"x"}
{"kind":"union","operator":"o","state":"u","subtask":2,"value":"x"}
{"kind":"broadcast","operator":"b","state":"r","subtask":-1,"value":{"key":"a","value":"1"}}`)
	if d := EqualDumps(a, b); d != "" {
		t.Fatalf("want equal, got %s", d)
	}
	// A split element held twice is a difference (multiset).
	c := parse(t, `{"kind":"split","operator":"o","state":"s","subtask":0,"value":[0,5]}
{"kind":"split","operator":"o","state":"s","subtask":1,"value":[0,5]}
{"kind":"split","operator":"o","state":"s","subtask":1,"value":[1,5]}
{"kind":"union","operator":"o","state":"u","subtask":0,"value":"x"}
{"kind":"broadcast","operator":"b","state":"r","subtask":0,"value":{"key":"a","value":"1"}}`)
	if d := EqualDumps(a, c); !strings.Contains(d, "only in the second") {
		t.Fatalf("duplicated split element not reported: %q", d)
	}
}

func TestEqualDumpsKeyedAndTTL(t *testing.T) {
	a := parse(t, `{"key":["a",1],"kind":"value","operator":"o","state":"last","ttl":true,"ttl_ts":17,"value":"e1"}
{"key":["a",1],"kind":"timer","operator":"o","state":"event-time","value":1000}`)
	b := parse(t, `{"key":["a",1],"kind":"value","operator":"o","state":"last","ttl":true,"ttl_ts":99,"value":"e1"}
{"key":["a",1],"kind":"timer","operator":"o","state":"event-time","value":1000}`)
	if d := EqualDumps(a, b); d != "" {
		t.Fatalf("TTL timestamps must not count: %s", d)
	}
	// The same key twice (the State Processor API duplicate-key bug) is a difference.
	c := append(parse(t, b[0].Raw), b...)
	if d := EqualDumps(a, c); d == "" {
		t.Fatal("a duplicated keyed line compared equal")
	}
	// Keyed lines keep their subtask-free identity: another key differs.
	d := parse(t, `{"key":["a",2],"kind":"value","operator":"o","state":"last","ttl":true,"value":"e1"}
{"key":["a",1],"kind":"timer","operator":"o","state":"event-time","value":1000}`)
	if diff := EqualDumps(a, d); !strings.Contains(diff, `["a",2]`) {
		t.Fatalf("diff does not name the other key: %q", diff)
	}
}

func TestParseDumpRejectsBadLines(t *testing.T) {
	for _, s := range []string{
		`{"kind":"value","operator":"o","state":"s"}`,
		`{"kind":"value","operator":"o","state":"s","value":1,"extra":2}`,
		`not json`,
	} {
		if _, err := ParseDump([]byte(s)); err == nil {
			t.Errorf("accepted %s", s)
		}
	}
}
