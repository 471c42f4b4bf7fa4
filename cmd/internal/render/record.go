package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/stateutil/stateutil/lookup"
)

func Record(w io.Writer, r *lookup.Record) error {
	fmt.Fprintf(w, "operator:   %s\n", r.Operator)
	fmt.Fprintf(w, "state:      %s (%s)\n", r.State, r.Kind)
	fmt.Fprintf(w, "key:        %s\n", JSONText(r.Key))
	if r.Namespace != nil {
		fmt.Fprintf(w, "namespace:  %s\n", JSONText(r.Namespace))
	}
	fmt.Fprintf(w, "key group:  %d (subtask %d)\n", r.KeyGroup, r.Subtask)
	if r.TTL != nil && !r.TTL.LastAccess.IsZero() {
		fmt.Fprintf(w, "ttl:        last access %s (the snapshot does not record the TTL duration)\n", r.TTL.LastAccess.Format(time.RFC3339Nano))
	} else if r.TTL != nil {
		state := "alive"
		if r.TTL.Expired {
			state = "expired"
		}
		fmt.Fprintf(w, "ttl:        expires %s: %s at %s\n", r.TTL.ExpiresAt.Format(time.RFC3339Nano), state, r.TTL.Now.Format(time.RFC3339))
	}
	switch v := r.Value.(type) {
	case []any:
		fmt.Fprintf(w, "value:      %s\n", Plural(len(v), "element"))
		rows := make([][]string, len(v))
		for i, x := range v {
			rows[i] = []string{strconv.Itoa(i), JSONText(x)}
		}
		return Table(w, []string{"#", "ELEMENT"}, rows)
	case map[string]any:
		entries := fmt.Sprintf("%d entries", len(v))
		if len(v) == 1 {
			entries = "1 entry"
		}
		fmt.Fprintf(w, "value:      %s\n", entries)
		var rows [][]string
		for _, k := range sortedKeys(v) {
			rows = append(rows, []string{k, JSONText(v[k])})
		}
		return Table(w, []string{"KEY", "VALUE"}, rows)
	}
	fmt.Fprintf(w, "value:      %s\n", JSONText(r.Value))
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
