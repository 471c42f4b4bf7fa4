package flinkharness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Line is one line of a dump (see testenv/flink/README.md).
type Line struct {
	Kind      string          `json:"kind"` // value list map reducing aggregating timer split union broadcast
	Operator  string          `json:"operator"`
	State     string          `json:"state"`
	Key       json.RawMessage `json:"key,omitempty"`
	Namespace json.RawMessage `json:"namespace,omitempty"`
	Subtask   *int            `json:"subtask,omitempty"`
	Value     json.RawMessage `json:"value"`
	TTL       bool            `json:"ttl,omitempty"`
	// Raw is the line as read.
	Raw string `json:"-"`
}

// Keyed reports whether the line is keyed state or a timer.
func (l Line) Keyed() bool {
	switch l.Kind {
	case "split", "union", "broadcast":
		return false
	}
	return true
}

// ReadDump reads a dump file.
func ReadDump(path string) ([]Line, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseDump(data)
}

// ParseDump parses dump text, one JSON object a line.
func ParseDump(data []byte) ([]Line, error) {
	var lines []Line
	n := 0
	for raw := range bytes.Lines(data) {
		n++
		raw = bytes.TrimSuffix(bytes.TrimSuffix(raw, []byte("\n")), []byte("\r"))
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var l Line
		if err := decodeLine(raw, &l); err != nil {
			return nil, fmt.Errorf("dump line %d: %v", n, err)
		}
		l.Raw = string(raw)
		if l.Kind == "" || l.Operator == "" || l.State == "" || l.Value == nil {
			return nil, fmt.Errorf("dump line %d: kind, operator, state and value are required: %s", n, raw)
		}
		lines = append(lines, l)
	}
	return lines, nil
}

// decodeLine decodes one line, allowing the optional "ttl_ts" field.
func decodeLine(raw []byte, l *Line) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	for k := range m {
		switch k {
		case "kind", "operator", "state", "key", "namespace", "subtask", "value", "ttl", "ttl_ts":
		default:
			return fmt.Errorf("unknown field %q", k)
		}
	}
	return json.Unmarshal(raw, l)
}

// EqualDumps compares two dumps and returns "" if they hold the same state,
// else a readable difference. Numbers compare numerically (1.0 == 1); keyed
// lines and timers compare as multisets (a duplicated key is a difference);
// split-state elements as a multiset over all subtasks; union and broadcast
// state as sets over all subtasks (every subtask holds every element after a
// restore); TTL timestamps ("ttl_ts") are ignored.
func EqualDumps(a, b []Line) string {
	ca, err := canonicalAll(a)
	if err != nil {
		return "first dump: " + err.Error()
	}
	cb, err := canonicalAll(b)
	if err != nil {
		return "second dump: " + err.Error()
	}
	var onlyA, onlyB []string
	keys := map[string]bool{}
	for k := range ca {
		keys[k] = true
	}
	for k := range cb {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		na, nb := ca[k], cb[k]
		for i := nb; i < na; i++ {
			onlyA = append(onlyA, k)
		}
		for i := na; i < nb; i++ {
			onlyB = append(onlyB, k)
		}
	}
	if len(onlyA) == 0 && len(onlyB) == 0 {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "dumps differ: %d line(s) only in the first, %d only in the second\n", len(onlyA), len(onlyB))
	show := func(prefix string, ls []string) {
		for i, l := range ls {
			if i == 20 {
				fmt.Fprintf(&sb, "%s ... %d more\n", prefix, len(ls)-20)
				break
			}
			fmt.Fprintf(&sb, "%s %s\n", prefix, l)
		}
	}
	show("-", onlyA)
	show("+", onlyB)
	return sb.String()
}

// canonicalAll maps each line's canonical text to its count.
func canonicalAll(ls []Line) (map[string]int, error) {
	out := map[string]int{}
	for _, l := range ls {
		c, err := Canonical(l)
		if err != nil {
			return nil, err
		}
		switch l.Kind {
		case "union", "broadcast":
			out[c] = 1
		default:
			out[c]++
		}
	}
	return out, nil
}

// Canonical is the line's comparison text: sorted keys, numbers normalised,
// no subtask for operator state, no TTL timestamp.
func Canonical(l Line) (string, error) {
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(l.Raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return "", err
	}
	delete(m, "ttl_ts")
	if !l.Keyed() {
		delete(m, "subtask")
	}
	var sb strings.Builder
	if err := writeCanonical(&sb, m); err != nil {
		return "", fmt.Errorf("%v in %s", err, l.Raw)
	}
	return sb.String(), nil
}

func writeCanonical(sb *strings.Builder, v any) error {
	switch x := v.(type) {
	case nil:
		sb.WriteString("null")
	case bool:
		sb.WriteString(strconv.FormatBool(x))
	case string:
		b, _ := json.Marshal(x)
		sb.Write(b)
	case json.Number:
		sb.WriteString(canonicalNumber(string(x)))
	case []any:
		sb.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				sb.WriteByte(',')
			}
			if err := writeCanonical(sb, e); err != nil {
				return err
			}
		}
		sb.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		sb.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				sb.WriteByte(',')
			}
			b, _ := json.Marshal(k)
			sb.Write(b)
			sb.WriteByte(':')
			if err := writeCanonical(sb, x[k]); err != nil {
				return err
			}
		}
		sb.WriteByte('}')
	default:
		return fmt.Errorf("unexpected JSON value %T", v)
	}
	return nil
}

// canonicalNumber: integers exactly (any size); other numbers as the shortest
// float64 text, so 1.0, 1 and 1e0 compare equal.
func canonicalNumber(s string) string {
	if i, ok := new(big.Int).SetString(s, 10); ok {
		return i.String()
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	if f == float64(int64(f)) && f < 1e18 && f > -1e18 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
