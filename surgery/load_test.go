package surgery_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/snaptest"
	"github.com/stateutil/stateutil/surgery"
)

func TestReadRecords(t *testing.T) {
	in := strings.Join([]string{
		// As dump prints it, ttl and all.
		`{"schema_version":1,"operator":"word-counter","state":"recent","kind":"list","key":"word-10","key_group":1,"subtask":0,"value":[38,2],"ttl":{"expires_at":"2026-01-02T04:03:52.304Z","expired":false,"now":"2026-01-02T04:00:00Z"}}`,
		``,
		"  \t",
		`{"operator":"w","state":"s","key":["eu",42],"namespace":{"start":0,"end":60000},"value":{"a":1}}` + "\r",
		`{"operator":"w","state":"s","key":"k","delete":true}`,
		`{"operator":"w","state":"s","key":"k2","delete":true}`,
		// A pair of surrogates is one character; an escaped backslash
		// before u is no escape.
		`{"operator":"w","state":"s","key":"\ud83d\ude00 \\ud800","value":"\u00e9"}`,
	}, "\n")
	got, err := surgery.ReadRecords(strings.NewReader(in), 1)
	if err != nil {
		t.Fatal(err)
	}
	kg, sub := 1, 0
	want := []surgery.Record{
		{Line: 1, Operator: "word-counter", State: "recent", Kind: snapshot.List, Key: raw(`"word-10"`), KeyGroup: &kg, Subtask: &sub, Value: raw(`[38,2]`)},
		{Line: 4, Operator: "w", State: "s", Key: raw(`["eu",42]`), Namespace: raw(`{"start":0,"end":60000}`), Value: raw(`{"a":1}`)},
		{Line: 5, Operator: "w", State: "s", Key: raw(`"k"`), Delete: true},
		{Line: 6, Operator: "w", State: "s", Key: raw(`"k2"`), Delete: true},
		{Line: 7, Operator: "w", State: "s", Key: raw(`"\ud83d\ude00 \\ud800"`), Value: raw(`"\u00e9"`)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("records:\n%s\nwant:\n%s", show(got), show(want))
	}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func show(recs []surgery.Record) string {
	b, _ := json.MarshalIndent(recs, "", " ")
	return string(b)
}

func TestReadRecordsRefused(t *testing.T) {
	good := `{"operator":"w","state":"s","key":"k","value":1}`
	cases := map[string]string{
		"not JSON":                  `{"operator":"w",`,
		"not an object":             `["w","s","k",1]`,
		"two values":                good + ` {}`,
		"an unknown field":          `{"operator":"w","state":"s","key":"k","vaule":1}`,
		"a field of the wrong type": `{"operator":7,"state":"s","key":"k","value":1}`,
		"no operator":               `{"state":"s","key":"k","value":1}`,
		"no state":                  `{"operator":"w","state":"","key":"k","value":1}`,
		"no key":                    `{"operator":"w","state":"s","value":1}`,
		"a null key":                `{"operator":"w","state":"s","key":null,"value":1}`,
		"no value":                  `{"operator":"w","state":"s","key":"k"}`,
		"another schema":            `{"schema_version":2,"operator":"w","state":"s","key":"k","value":1}`,
		"a negative key group":      `{"operator":"w","state":"s","key":"k","key_group":-1,"value":1}`,
		"a fractional key group":    `{"operator":"w","state":"s","key":"k","key_group":1.5,"value":1}`,
		// What encoding/json would take and change without a word.
		"a field given twice":          `{"operator":"w","state":"s","key":"user-9","key":"other","value":1}`,
		"a field given twice, deeper":  `{"operator":"w","state":"s","key":"k","value":{"a":1,"b":{"c":1,"c":2}}}`,
		"a deletion with a value":      `{"operator":"w","state":"s","key":"k","value":5,"delete":true}`,
		"a deletion with a null value": `{"operator":"w","state":"s","key":"k","value":null,"delete":true}`,
		"a lone high surrogate":        `{"operator":"w","state":"s","key":"user-\ud800","value":1}`,
		"a lone low surrogate":         `{"operator":"w","state":"s","key":"user-\udc00x","value":1}`,
		"a reversed pair":              `{"operator":"w","state":"s","key":"\udc00\ud800","value":1}`,
		"bytes that are not UTF-8":     "{\"operator\":\"w\",\"state\":\"s\",\"key\":\"user-\xed\xa0\x80\",\"value\":1}",
	}
	for name, line := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := surgery.ReadRecords(strings.NewReader(good+"\n\n"+line+"\n"+good), 1)
			if !errors.Is(err, surgery.ErrBadEdit) || !strings.HasPrefix(err.Error(), "line 3: ") {
				t.Fatalf("ReadRecords: %v, want a bad edit at line 3", err)
			}
		})
	}
}

// A line longer than a record can be is refused before it is read whole.
func TestReadRecordsRefusesALongLine(t *testing.T) {
	good := `{"operator":"w","state":"s","key":"k","value":1}` + "\n"
	long := `{"operator":"w","state":"s","key":"k","value":"` + strings.Repeat("x", 65<<20) + `"}`
	_, err := surgery.ReadRecords(strings.NewReader(good+long), 1)
	if !errors.Is(err, surgery.ErrBadEdit) || !strings.HasPrefix(err.Error(), "line 2: ") || !strings.Contains(err.Error(), "longer than 64 MiB") {
		t.Fatalf("ReadRecords: %v, want a bad edit at line 2, too long", err)
	}
}

// load is a Load edit of lines, read as the command reads them.
func load(t *testing.T, now int64, lines ...string) surgery.Edit {
	t.Helper()
	recs, err := surgery.ReadRecords(strings.NewReader(strings.Join(lines, "\n")), 1)
	if err != nil {
		t.Fatal(err)
	}
	return surgery.Edit{Op: surgery.Load, From: "edits.jsonl", Records: recs, Now: now}
}

func TestLoad(t *testing.T) {
	src := open(t, example)
	before := entriesOf(collect(t, src)["word-counter"])
	const now = 1_800_000_000_000
	// word-10 holds count 989, recent [38,2] (TTL 1h), by-source
	// {"web":13} (TTL 24h); word-18 and word-28 are keys too.
	w := apply(t, src, load(t, now,
		`{"operator":"word-counter","state":"count","key":"word-10","key_group":1,"subtask":0,"value":5}`,
		`{"operator":"word-counter","state":"recent","kind":"list","key":"word-10","value":[38,2,7]}`,
		`{"operator":"word-counter","state":"by-source","key":"word-10","value":{"web":13,"app":4}}`,
		`{"operator":"word-counter","state":"count","key":"word-18","delete":true}`,
		`{"operator":"word-counter","state":"count","key":"no-such-word","delete":true}`,
		// As the source holds it: nothing changes.
		`{"operator":"word-counter","state":"count","key":"word-28","value":985}`,
		`{"operator":"rules","state":"user-total","key":"7","value":12}`,
	))
	var want []snapshot.Entry
	for _, e := range before {
		key := string(e.Key)
		switch {
		case e.State == "count" && key == "word-10":
			e.Value = snapshot.EncodeInt64(5)
		case e.State == "count" && key == "word-18":
			continue
		}
		want = append(want, e)
		// The elements and entries the source holds keep their expiry;
		// those added expire a TTL after now.
		switch {
		case e.State == "recent" && key == "word-10" && bytes.Equal(e.Value, snapshot.EncodeInt64(2)):
			e.Value, e.ExpiresAt = snapshot.EncodeInt64(7), now+3_600_000
			want = append(want, e)
		case e.State == "by-source" && key == "word-10":
			e.UserKey, e.Value, e.ExpiresAt = []byte("app"), snapshot.EncodeInt64(4), now+86_400_000
			want = append(want, e)
		}
	}
	snaptest.Canonical(want)
	if ok, why := snaptest.EqualEntries(entriesOf(collect(t, w)["word-counter"]), want); !ok {
		t.Fatalf("entries after the load: %s", why)
	}
	rep := w.Report()
	type keys struct{ put, deleted int }
	got := map[string]keys{}
	for _, st := range rep.States {
		if st.Edit != "loaded" {
			t.Errorf("state %s: edit %q, want loaded", st.State, st.Edit)
		}
		got[st.State] = keys{st.KeysPut, st.KeysDeleted}
	}
	wantKeys := map[string]keys{"count": {2, 1}, "recent": {1, 0}, "by-source": {1, 0}, "user-total": {1, 0}}
	if !reflect.DeepEqual(got, wantKeys) {
		t.Errorf("keys put and deleted per state: %v, want %v", got, wantKeys)
	}
	if want := []surgery.LoadReport{{From: "edits.jsonl", Records: 7, Puts: 5, Deletes: 2}}; !reflect.DeepEqual(rep.Loads, want) {
		t.Errorf("loads: %+v, want %+v", rep.Loads, want)
	}
}

func TestLoadRefused(t *testing.T) {
	src := open(t, example)
	good := `{"operator":"word-counter","state":"count","key":"word-10","value":5}`
	cases := []struct {
		name, line string
		want       error
	}{
		{"unknown operator", `{"operator":"nope","state":"count","key":"a","value":1}`, snapshot.ErrNotFound},
		{"unknown state", `{"operator":"word-counter","state":"nope","key":"a","value":1}`, snapshot.ErrNotFound},
		{"operator state", `{"operator":"kafka-source","state":"partition-offsets","key":"a","value":1}`, surgery.ErrBadEdit},
		{"value of the wrong type", `{"operator":"word-counter","state":"count","key":"a","value":"ten"}`, surgery.ErrBadEdit},
		{"list that is no array", `{"operator":"word-counter","state":"recent","key":"a","value":1}`, surgery.ErrBadEdit},
		{"key of the wrong type", `{"operator":"rules","state":"user-total","key":"abc","value":1}`, surgery.ErrBadEdit},
		{"another key group", `{"operator":"word-counter","state":"recent","key":"word-18","key_group":1,"value":[1]}`, surgery.ErrBadEdit},
		{"another subtask", `{"operator":"word-counter","state":"recent","key":"word-18","key_group":5,"subtask":2,"value":[1]}`, surgery.ErrBadEdit},
		{"another kind", `{"operator":"word-counter","state":"count","kind":"list","key":"word-18","value":1}`, surgery.ErrBadEdit},
		{"a key given twice", `{"operator":"word-counter","state":"count","key":"word-10","delete":true}`, surgery.ErrBadEdit},
		{"a number for a text key", `{"operator":"word-counter","state":"count","key":10,"value":1}`, surgery.ErrBadEdit},
		{"a boolean for a text key", `{"operator":"word-counter","state":"count","key":true,"value":1}`, surgery.ErrBadEdit},
		{"a namespace of a state without", `{"operator":"word-counter","state":"count","key":"a","namespace":7,"value":1}`, surgery.ErrBadEdit},
		// mean-length holds msgpack, which stateutil reads but does not write.
		{"a type stateutil cannot write", `{"operator":"word-counter","state":"mean-length","key":"a","value":{"count":1,"sum":2}}`, snapshot.ErrUnsupportedVersion},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := surgery.Apply(src, codecs, []surgery.Edit{load(t, 0, good, "", c.line)})
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), `from "edits.jsonl": line 3: `) {
				t.Fatalf("Apply: %v, want %v at line 3 of edits.jsonl", err, c.want)
			}
		})
	}
}

// FuzzReadRecords: no input panics, and what is read is records that
// read back the same from their own JSON.
func FuzzReadRecords(f *testing.F) {
	f.Add([]byte(`{"schema_version":1,"operator":"word-counter","state":"recent","kind":"list","key":"word-10","key_group":1,"subtask":0,"value":[38,2],"ttl":{"now":"x"}}` + "\n\n"))
	f.Add([]byte(`{"operator":"w","state":"s","key":["eu",42],"namespace":{"start":0},"delete":true}` + "\r\n" + `{"operator":"w"}`))
	f.Add([]byte("{}\n[]\nnull\n\"x\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := surgery.ReadRecords(bytes.NewReader(data), 1)
		if err != nil {
			if !errors.Is(err, surgery.ErrBadEdit) {
				t.Fatalf("an error that is no bad edit: %v", err)
			}
			return
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		var again []byte
		for i, r := range recs {
			if r.Line < 1 || r.Line > lines || (i > 0 && r.Line <= recs[i-1].Line) {
				t.Fatalf("record %d at line %d of %d", i, r.Line, lines)
			}
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(r); err != nil {
				t.Fatalf("record %+v: %v", r, err)
			}
			// Line is the record's place, not one of its fields.
			again = append(again, bytes.Replace(b.Bytes(), []byte(`"line":`+strconv.Itoa(r.Line)+`,`), nil, 1)...)
		}
		back, err := surgery.ReadRecords(bytes.NewReader(again), 1)
		if err != nil {
			t.Fatalf("records do not read back: %v\n%s", err, again)
		}
		for i := range back {
			back[i].Line = recs[i].Line
		}
		if !reflect.DeepEqual(compact(t, back), compact(t, recs)) {
			t.Fatalf("read back as\n%s\nnot\n%s", show(back), show(recs))
		}
	})
}

// compact is records with their JSON fields compacted: read back, they
// are what Marshal made of them.
func compact(t *testing.T, recs []surgery.Record) []surgery.Record {
	out := make([]surgery.Record, len(recs))
	for i, r := range recs {
		for _, m := range []*json.RawMessage{&r.Key, &r.Namespace, &r.Value} {
			if *m == nil {
				continue
			}
			var b bytes.Buffer
			if err := json.Compact(&b, *m); err != nil {
				t.Fatal(err)
			}
			*m = b.Bytes()
		}
		out[i] = r
	}
	return out
}

// A record's namespace, as dump prints it, names the window it sets or
// deletes; the key's other windows stay.
func TestLoadWindows(t *testing.T) {
	src := open(t, windows(t))
	w := apply(t, src, load(t, 0,
		`{"operator":"windows","state":"sums","key":"a","namespace":60000,"value":99}`,
		`{"operator":"windows","state":"sums","key":"b","namespace":120000,"delete":true}`,
		`{"operator":"windows","state":"seen","key":"a","value":5}`,
	))
	var got []string
	for _, e := range entriesOf(collect(t, w)["windows"]) {
		ns := "-"
		if len(e.Namespace) == 8 {
			ns = strconv.FormatUint(binary.BigEndian.Uint64(e.Namespace), 10)
		}
		got = append(got, e.State+"/"+string(e.Key)+"/"+ns+"="+strconv.FormatUint(binary.BigEndian.Uint64(e.Value), 10))
	}
	want := []string{"seen/a/-=5", "seen/b/-=1", "sums/a/60000=99", "sums/a/120000=120", "sums/b/60000=60"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	_, err := surgery.Apply(src, codecs, []surgery.Edit{load(t, 0, `{"operator":"windows","state":"sums","key":"a","value":1}`)})
	if !errors.Is(err, surgery.ErrBadEdit) || !strings.Contains(err.Error(), "line 1: ") {
		t.Fatalf("a record without the window of a state with windows: %v, want a bad edit at line 1", err)
	}
}
