package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// inEveryFormat converts the example snapshot into every writable format
// once, for the tests that must give the same answer in each.
var inEveryFormat = sync.OnceValues(func() (map[string]string, error) {
	dir, err := os.MkdirTemp(sharedTemp, "formats-")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, f := range writableFormats() {
		loc := filepath.Join(dir, f)
		var stdout, stderr strings.Builder
		if code := Run(context.Background(), []string{"convert", example, "--to", f, "--output", loc, "--quiet"}, &stdout, &stderr); code != 0 {
			return nil, fmt.Errorf("convert to %s: %s", f, stderr.String())
		}
		out[f] = loc
	}
	return out, nil
})

func formatsOf(t *testing.T) map[string]string {
	t.Helper()
	locs, err := inEveryFormat()
	if err != nil {
		t.Fatal(err)
	}
	return locs
}

// The golden output of get and dump is the same in every format.
func TestGoldenGetDump(t *testing.T) {
	cases := map[string][]string{
		"get-value":         {"get", "SNAP", "--operator", "word-counter", "--state", "count", "--key", "word-10"},
		"get-list-json":     {"get", "SNAP", "--operator", "word-counter", "--state", "recent", "--key", "word-10", "--now", "2026-01-02T04:00:00Z", "-o", "json"},
		"get-map":           {"get", "SNAP", "--operator", "word-counter", "--state", "by-source", "--key", "word-10", "--now", "1767322800000"},
		"get-aggregating":   {"get", "SNAP", "--operator", "word-counter", "--state", "mean-length", "--key", "word-3", "-o", "json"},
		"get-missing-key":   {"get", "SNAP", "--operator", "word-counter", "--state", "count", "--key", "no-such-word"},
		"get-missing-state": {"get", "SNAP", "--operator", "word-counter", "--state", "nope", "--key", "a"},
		"get-no-state":      {"get", "SNAP", "--operator", "word-counter", "--key", "a"},
		"get-bad-now":       {"get", "SNAP", "--operator", "word-counter", "--state", "count", "--key", "a", "--now", "yesterday"},
		"dump-state":        {"dump", "SNAP", "--operator", "rules", "--state", "user-total"},
		"dump-key-groups":   {"dump", "SNAP", "--key-group", "10-12", "--now", "2026-01-02T04:00:00Z"},
		"dump-prefix-csv":   {"dump", "SNAP", "--operator", "word-counter", "--key-prefix", "word-1", "--limit", "7", "--now", "2026-01-02T04:00:00Z", "-o", "csv"},
		"dump-table":        {"dump", "SNAP", "--subtask", "1", "--state", "count", "--limit", "5", "-o", "table"},
		"dump-bad-range":    {"dump", "SNAP", "--key-group", "9-3"},
		// A key, namespace, state, key group or subtask that nothing has:
		// usage errors or not found, never a silent empty result.
		"get-no-key":                {"get", "SNAP", "--operator", "word-counter", "--state", "count"},
		"get-key-not-utf8":          {"get", "SNAP", "--operator", "word-counter", "--state", "count", "--key", "word-\xff"},
		"get-void-namespace":        {"get", "SNAP", "--operator", "word-counter", "--state", "count", "--key", "word-10", "--namespace", "garbage"},
		"dump-unknown-state":        {"dump", "SNAP", "--state", "nope"},
		"dump-key-group-above-maxp": {"dump", "SNAP", "--key-group", "999"},
		"dump-subtask-above-p":      {"dump", "SNAP", "--operator", "rules", "--subtask", "2"},
	}
	for format, loc := range formatsOf(t) {
		for name, args := range cases {
			t.Run(format+"/"+name, func(t *testing.T) {
				args := append([]string(nil), args...)
				args[1] = loc
				runGoldenAs(t, name, strings.ReplaceAll(strings.Join(args, " "), loc, "SNAP"), args...)
			})
		}
	}
}

func readRecords(t *testing.T, jsonl string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(jsonl))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// Property: dump is the union of get over every key, in every format, and
// every key get finds lies in the key group and subtask that stateutil
// keygroup names for it.
func TestDumpIsTheUnionOfGet(t *testing.T) {
	for format, loc := range formatsOf(t) {
		t.Run(format, func(t *testing.T) {
			records := readRecords(t, mustRun(t, "dump", loc, "--now", "2026-01-02T04:00:00Z"))
			if len(records) < 100 {
				t.Fatalf("dump gave %d records", len(records))
			}
			parallelism := map[string]int{}
			var summary struct {
				Operators []struct {
					UID            string `json:"uid"`
					Parallelism    int    `json:"parallelism"`
					MaxParallelism int    `json:"max_parallelism"`
					KeyedStates    []struct {
						Name    string `json:"name"`
						KeyType struct {
							Name string `json:"name"`
						} `json:"key_type"`
					} `json:"keyed_states"`
				} `json:"operators"`
			}
			json.Unmarshal([]byte(mustRun(t, "inspect", loc, "-o", "json")), &summary)
			maxP, keyTypes := map[string]int{}, map[string]string{}
			for _, op := range summary.Operators {
				parallelism[op.UID], maxP[op.UID] = op.Parallelism, op.MaxParallelism
				for _, st := range op.KeyedStates {
					keyTypes[op.UID+"/"+st.Name] = map[string]string{"string": "string", "int32": "int", "int64": "long"}[st.KeyType.Name]
				}
			}
			for i, rec := range records {
				op, state := rec["operator"].(string), rec["state"].(string)
				key := fmt.Sprint(rec["key"])
				if s, ok := rec["key"].(string); ok {
					key = s
				}
				var one map[string]any
				json.Unmarshal([]byte(mustRun(t, "get", loc, "--operator", op, "--state", state, "--key", key, "--now", "2026-01-02T04:00:00Z", "-o", "json")), &one)
				if !reflect.DeepEqual(one, rec) {
					t.Fatalf("record %d: dump %v, get %v", i, rec, one)
				}
				if i%7 != 0 { // keygroup for a sample; get for all
					continue
				}
				var loc struct {
					KeyGroup int  `json:"key_group"`
					Subtask  *int `json:"subtask"`
				}
				json.Unmarshal([]byte(mustRun(t, "keygroup", "--key-type", keyTypes[op+"/"+state], "--max-parallelism", fmt.Sprint(maxP[op]), "--parallelism", fmt.Sprint(parallelism[op]), "-o", "json", "--", key)), &loc)
				if float64(loc.KeyGroup) != rec["key_group"].(float64) || loc.Subtask == nil || float64(*loc.Subtask) != rec["subtask"].(float64) {
					t.Fatalf("%s %s key %q: get says key group %v subtask %v, keygroup says %d %v", op, state, key, rec["key_group"], rec["subtask"], loc.KeyGroup, loc.Subtask)
				}
			}
		})
	}
}

// dump | head: when the reader goes away, dump stops with exit 0 and says
// nothing.
func TestDumpIntoClosedPipe(t *testing.T) {
	// Far more output than a pipe holds, so that dump is still writing.
	loc := filepath.Join(t.TempDir(), "big.dump")
	mustRun(t, "generate", "--output", loc, "--keys", "20000")
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), mainEnv+"="+strings.Join([]string{"dump", loc}, "\x1f"))
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, `{"schema_version":1,`) {
		t.Fatalf("first line %q, %v", line, err)
	}
	stdout.Close()
	err = c.Wait()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("dump into a closed pipe: %v; stderr %q", err, stderr.String())
	}
}
