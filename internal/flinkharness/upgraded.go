package flinkharness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// EqualUpgradedDumps compares the dump of a Flink 1.x job (old) with the
// dump of the same job restored in Flink 2.x from an upgraded snapshot
// (restored), as EqualDumps does, but for how the jobs show one value: a
// POJO field that Flink 1.x serializes with Kryo is dumped as a generic
// type, {"class": C, "toString": S}, and as a list or a map where Flink
// 2.x serializes it itself. There the restored value is shown as Java's
// toString of class C shows it (a list's elements in order, a map's
// entries as key=value, compared in key order).
func EqualUpgradedDumps(old, restored []Line) string {
	byKey := map[string]Line{}
	for _, l := range old {
		byKey[lineKey(l)] = l
	}
	norm := func(ls []Line, fromOld bool) ([]Line, error) {
		out := make([]Line, len(ls))
		for i, l := range ls {
			o, ok := byKey[lineKey(l)]
			if !ok {
				out[i] = l
				continue
			}
			ov, err := decodeNumbers(o.Value)
			if err != nil {
				return nil, err
			}
			v, err := decodeNumbers(l.Value)
			if err != nil {
				return nil, err
			}
			var fields map[string]json.RawMessage
			if err := json.Unmarshal([]byte(l.Raw), &fields); err != nil {
				return nil, err
			}
			if fields["value"], err = json.Marshal(asShownBy(ov, v, fromOld)); err != nil {
				return nil, err
			}
			raw, err := json.Marshal(fields)
			if err != nil {
				return nil, err
			}
			l.Value, l.Raw = fields["value"], string(raw)
			out[i] = l
		}
		return out, nil
	}
	a, err := norm(old, true)
	if err != nil {
		return "first dump: " + err.Error()
	}
	b, err := norm(restored, false)
	if err != nil {
		return "second dump: " + err.Error()
	}
	return EqualDumps(a, b)
}

func decodeNumbers(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// lineKey identifies a line's state and key.
func lineKey(l Line) string {
	return strings.Join([]string{l.Kind, l.Operator, l.State, string(l.Key), string(l.Namespace)}, "\x00")
}

// asShownBy is v (of the old dump, fromOld, or of the restored one) with
// every part that the old dump shows as a generic type shown as its
// toString, maps' entries sorted.
func asShownBy(old, v any, fromOld bool) any {
	switch o := old.(type) {
	case map[string]any:
		if c, ok := o["class"].(string); ok && len(o) == 2 {
			s, _ := o["toString"].(string)
			if r, ok := v.(map[string]any); !fromOld && ok && len(r) == 2 && r["class"] != nil {
				// Shown as a generic type by both: Kryo's in Flink 2.x too.
				s, _ = r["toString"].(string)
			} else if !fromOld {
				s = javaString(v)
			}
			return map[string]any{"class": c, "toString": sortedEntries(c, s)}
		}
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			out[k] = asShownBy(o[k], e, fromOld)
		}
		return out
	case []any:
		vs, ok := v.([]any)
		if !ok || len(vs) != len(o) {
			return v
		}
		out := make([]any, len(vs))
		for i := range vs {
			out[i] = asShownBy(o[i], vs[i], fromOld)
		}
		return out
	}
	return v
}

// javaString is a dumped value as Java's toString shows it: lists as
// [a, b], maps as {k=v, ...}.
func javaString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case json.Number:
		return x.String()
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = javaString(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + javaString(x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	b, _ := json.Marshal(v)
	return string(bytes.TrimSpace(b))
}

// sortedEntries is a map's or a set's toString with its entries in order
// (a HashMap's or HashSet's iteration order depends on its capacity, which
// Flink 2.x's serializers size otherwise); other classes' as it is.
func sortedEntries(class, s string) string {
	open, end := "{", "}"
	switch {
	case strings.HasSuffix(class, "Map"):
	case strings.HasSuffix(class, "Set"):
		open, end = "[", "]"
	default:
		return s
	}
	if !strings.HasPrefix(s, open) || !strings.HasSuffix(s, end) || len(s) == 2 {
		return s
	}
	parts := strings.Split(s[1:len(s)-1], ", ")
	sort.Strings(parts)
	return fmt.Sprintf("%s%s%s", open, strings.Join(parts, ", "), end)
}
