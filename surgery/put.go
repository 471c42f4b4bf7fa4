package surgery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/stateutil/stateutil/snapshot"
)

// put is one key's new content in a keyed state.
type put struct {
	state   *stateEdit
	kg      int
	key, ns []byte
	// userKey, when entry is set, is the one map entry replaced;
	// otherwise every entry of the key and namespace is.
	userKey []byte
	entry   bool
	entries []snapshot.Entry // what is written instead (none: removed)
	delete  bool
	// line is the record of a load the put comes from (0: none).
	line int
	// keepUnchanged keeps the expiry of entries written as the source
	// holds them (a load's into a state with TTL), rather than counting
	// them as accessed.
	keepUnchanged bool
	// found is set when the source holds what the put replaces.
	found atomic.Bool
}

// replaces reports whether e is an entry the put replaces.
func (p *put) replaces(e *snapshot.Entry) bool {
	return bytes.Equal(e.Key, p.key) && bytes.Equal(e.Namespace, p.ns) && (!p.entry || bytes.Equal(e.UserKey, p.userKey))
}

func (oe *opEdit) addPut(codecs *snapshot.Codecs, e Edit) error {
	se, ks, err := oe.keyedState(e)
	if err != nil {
		return err
	}
	_, err = oe.addPutTo(codecs, se, ks, e, 0)
	return err
}

// keyedState is the keyed state a put names.
func (oe *opEdit) keyedState(e Edit) (*stateEdit, *snapshot.KeyedState, error) {
	if e.State == "" {
		return nil, nil, badEditf("no state named")
	}
	se := current(oe.keyed, e.State)
	if se == nil {
		if current(oe.oper, e.State) != nil {
			return nil, nil, badEditf("%q is an operator state: put sets keyed state", e.State)
		}
		return nil, nil, fmt.Errorf("%w: operator %q has no keyed state %q (keyed states: %s)", snapshot.ErrNotFound, oe.orig.Label(), e.State, names(oe.keyed))
	}
	return se, &oe.orig.KeyedStates[se.index], nil
}

// addPutTo adds the put e to state se (of type ks); line, when not 0, is
// the line of the record it comes from.
func (oe *opEdit) addPutTo(codecs *snapshot.Codecs, se *stateEdit, ks *snapshot.KeyedState, e Edit, line int) (*put, error) {
	switch {
	case len(e.Keys) != 1:
		return nil, badEditf("put takes one key, not %d", len(e.Keys))
	case ks.Kind == snapshot.Timer:
		return nil, badEditf("%q holds timers, which put does not set", ks.Name)
	case e.MapKey != nil && ks.Kind != snapshot.Map:
		return nil, badEditf("a map key given for %s state %q", ks.Kind, ks.Name)
	case e.Delete && e.Value != "":
		return nil, badEditf("a value given to delete")
	case !e.Delete && e.Value == "":
		return nil, badEditf("no value given")
	}
	if line == 0 {
		// A load's records are checked whole as they are read.
		if err := checkPutText(e); err != nil {
			return nil, err
		}
	}
	key, kg, err := oe.keyIn(codecs, ks, e.Keys[0])
	if err != nil {
		return nil, err
	}
	p := &put{state: se, key: key, kg: kg, line: line, delete: e.Delete}
	if p.ns, err = putNamespace(codecs, ks, e.Namespace); err != nil {
		return nil, err
	}
	if line > 0 {
		// A load's key and namespace are JSON as dump prints them, so a
		// number for text is a mistake; put's are text as typed.
		if err := checkKinds(codecs, ks.KeyType, parseJSON(e.Keys[0]), key, fmt.Sprintf("key of state %q", ks.Name)); err != nil {
			return nil, err
		}
		if e.Namespace != "" {
			if err := checkKinds(codecs, ks.NamespaceType, parseJSON(e.Namespace), p.ns, fmt.Sprintf("namespace of state %q", ks.Name)); err != nil {
				return nil, err
			}
		}
	}
	if e.MapKey != nil {
		if p.userKey, err = encodeText(codecs, ks.UserKeyType, *e.MapKey, "map key of state "+fmt.Sprintf("%q", ks.Name)); err != nil {
			return nil, err
		}
		p.entry = true
	}
	for _, q := range se.putsByKey[string(key)] {
		if bytes.Equal(q.ns, p.ns) && (!q.entry || !p.entry || bytes.Equal(q.userKey, p.userKey)) {
			at := ""
			if q.line > 0 {
				at = fmt.Sprintf(" (line %d sets it)", q.line)
			}
			return nil, badEditf("key %s of state %q is set twice%s", e.Keys[0], ks.Name, at)
		}
	}
	if !e.Delete {
		if p.entries, err = putEntries(codecs, ks, p, e.Value); err != nil {
			return nil, err
		}
	}
	if ks.TTL != nil {
		at := e.Now
		if !ks.TTL.Unknown {
			at += ks.TTL.TTLMillis // the expiry, not the last access
		}
		for i := range p.entries {
			p.entries[i].ExpiresAt = at
		}
	}
	if se.putsByKey == nil {
		se.putsByKey = map[string][]*put{}
	}
	se.puts++
	se.putsByKey[string(key)] = append(se.putsByKey[string(key)], p)
	oe.putsByKG[p.kg] = append(oe.putsByKG[p.kg], p)
	return p, nil
}

// checkPutText refuses in a put's key, namespace, map key and value
// what JSON would change silently (checkStrictJSON).
func checkPutText(e Edit) error {
	texts := map[string]string{"key": e.Keys[0], "namespace": e.Namespace, "value": e.Value}
	if e.MapKey != nil {
		texts["map key"] = *e.MapKey
	}
	for _, what := range []string{"key", "namespace", "map key", "value"} {
		if err := checkStrictJSON([]byte(texts[what])); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

// keyIn is a key as state ks stores it, and its key group.
func (oe *opEdit) keyIn(codecs *snapshot.Codecs, ks *snapshot.KeyedState, text string) (key []byte, kg int, err error) {
	if key, err = encodeKey(codecs, ks, text); err != nil {
		return nil, 0, err
	}
	if kg, err = codecs.KeyGroupOf(ks.KeyType, key, oe.orig.MaxParallelism); err != nil {
		return nil, 0, fmt.Errorf("%w: the key group of key %s of state %q: %w", snapshot.ErrUnsupportedVersion, text, ks.Name, err)
	}
	return key, kg, nil
}

// putNamespace is the namespace a put writes in: the one given, or the
// state's only one (Flink's VoidNamespace) when none is.
func putNamespace(codecs *snapshot.Codecs, ks *snapshot.KeyedState, text string) ([]byte, error) {
	if text == "" {
		if b, err := codecs.EncodeKey(ks.NamespaceType, "null"); err == nil {
			if codec, err := codecs.Codec(ks.NamespaceType); err == nil {
				if v, err := codec.Decode(b); err == nil && v == nil {
					return b, nil
				}
			}
		}
		return nil, badEditf("state %q has namespaces (of type %s): give one", ks.Name, ks.NamespaceType)
	}
	ns, ok, err := namespaceOf(codecs, ks, text)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, badEditf("namespace %s is not one of state %q (its namespace type is %s)", text, ks.Name, ks.NamespaceType)
	}
	return ns, nil
}

// putEntries encodes a put's value as the entries the state stores: one
// for a value, reducing or aggregating state and a map entry, one per
// element of a list, one per entry of a map (in their bytes' order).
func putEntries(codecs *snapshot.Codecs, ks *snapshot.KeyedState, p *put, text string) ([]snapshot.Entry, error) {
	v := parseJSON(text)
	entry := func(userKey []byte, v any) (snapshot.Entry, error) {
		what := fmt.Sprintf("value of state %q", ks.Name)
		b, err := encodeValue(codecs, ks.ValueType, v, what)
		if err == nil {
			err = checkKinds(codecs, ks.ValueType, v, b, what)
		}
		return snapshot.Entry{KeyGroup: p.kg, State: ks.Name, Key: p.key, Namespace: p.ns, UserKey: userKey, Value: b}, err
	}
	var out []snapshot.Entry
	switch {
	case p.entry:
		e, err := entry(p.userKey, v)
		return append(out, e), err
	case ks.Kind == snapshot.List:
		elems, ok := v.([]any)
		if !ok {
			return nil, badEditf("the value of list state %q is a JSON array of its elements, not %s", ks.Name, text)
		}
		for _, el := range elems {
			e, err := entry(nil, el)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
	case ks.Kind == snapshot.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, badEditf("the value of map state %q is a JSON object of its entries, not %s", ks.Name, text)
		}
		for k, mv := range m {
			uk, err := encodeText(codecs, ks.UserKeyType, k, fmt.Sprintf("map key of state %q", ks.Name))
			if err != nil {
				return nil, err
			}
			e, err := entry(uk, mv)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		slices.SortFunc(out, func(a, b snapshot.Entry) int { return bytes.Compare(a.UserKey, b.UserKey) })
	default:
		e, err := entry(nil, v)
		return append(out, e), err
	}
	return out, nil
}

// parseJSON is text as JSON (numbers kept as they are written), or the
// text itself, a string, when it is no JSON.
func parseJSON(text string) any {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil && !dec.More() {
		return v
	}
	return text
}

// encodeValue encodes a JSON value as type t.
func encodeValue(codecs *snapshot.Codecs, t snapshot.Type, v any, what string) ([]byte, error) {
	codec, err := codecs.Codec(t)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", snapshot.ErrUnsupportedVersion, what, err)
	}
	enc, ok := codec.(snapshot.Encoder)
	if !ok {
		return nil, fmt.Errorf("%w: %s: stateutil cannot write values of type %s", snapshot.ErrUnsupportedVersion, what, t)
	}
	b, err := enc.Encode(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: not a %s: %w", ErrBadEdit, what, t, err)
	}
	return b, nil
}

// encodeText encodes a key written as text (a map key) as type t.
func encodeText(codecs *snapshot.Codecs, t snapshot.Type, text, what string) ([]byte, error) {
	b, err := codecs.EncodeKey(t, text)
	switch {
	case err == nil:
		return b, nil
	case errors.Is(err, snapshot.ErrBadValue):
		return nil, fmt.Errorf("%w: %s: %w", ErrBadEdit, what, err)
	}
	return nil, fmt.Errorf("%w: %s: %w", snapshot.ErrUnsupportedVersion, what, err)
}
