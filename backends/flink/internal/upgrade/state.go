package upgrade

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/statefile"
	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/snapshot"
)

// State is what the upgrade makes of one state: its serializers'
// nodes whose values change (Kryo values, POJO collection fields), or
// why it is blocked.
type State struct {
	env    *Env
	name   string
	sm     *statefile.StateMeta
	keySer *typeser.SerializerSnapshot
	keyed  bool
	kryo   []*typeser.SerializerSnapshot
	fields []*collField
	nested []*collField // fields of nested collections, Kryo's in both
	// fieldOfKryo names the POJO field ("Deal.at") a Kryo node serializes.
	fieldOfKryo map[*typeser.SerializerSnapshot]string
	// blocked are why the state cannot be carried, found in its values or
	// serializers; unverified why it may not be, its serializers that
	// stateutil has not seen restore across the majors. Both block it,
	// and a state of unverified serializers is still scanned, so that what
	// surely blocks it is named first.
	blocked, unverified []string
	// old and new are the serializers of a value (the element of a list,
	// the value of a map), userKey those of a map's user keys.
	old, new       *typeser.SerializerSnapshot
	oldUK, newUK   *typeser.SerializerSnapshot
	nodes          map[*typeser.SerializerSnapshot]bool // kryo and fields' nodes
	rewritesValues bool
}

// Block marks the state blocked, for why.
func (p *State) Block(why string) {
	if !slices.Contains(p.blocked, why) {
		p.blocked = append(p.blocked, why)
	}
}

// scalaAPI is the package of the Scala API's serializers (flink-scala).
const scalaAPI = "org.apache.flink.api.scala."

func (p *State) unverifiedBy(why string) {
	if !slices.Contains(p.unverified, why) {
		p.unverified = append(p.unverified, why)
	}
}

// walkFixed checks serializers whose bytes must not change (keys,
// namespaces, timers): Flink 2.x restores them as they are, or blocks.
func (p *State) walkFixed(s *typeser.SerializerSnapshot, what string) {
	before := len(p.nodes)
	p.walk(s, nil)
	if len(p.nodes) > before {
		p.Block(what + " are of a serializer whose bytes change from Flink 1.x to 2.x (Kryo), and stateutil does not rewrite keys or namespaces")
	}
}

// collectionClasses are the declared types of the POJO fields that Flink
// 1.x serializes with Kryo and Flink 2.x with its collection serializers.
var collectionClasses = map[string]string{
	"java.util.List": "List", "java.util.Collection": "List", "java.util.Set": "Set", "java.util.Map": "Map",
}

// walk classifies s, a serializer of the state (pojo: the POJO whose
// field it is).
func (p *State) walk(s, pojo *typeser.SerializerSnapshot) {
	if s == nil {
		p.Block("a serializer snapshot is missing")
		return
	}
	if typeser.KindOf(s) == "Kryo" {
		if kind, ok := collectionClasses[s.TypeClass]; ok && pojo != nil {
			f := &collField{node: s, pojo: pojo, kind: kind, field: fieldOf(pojo, s)}
			p.fields, p.nodes[s] = append(p.fields, f), true
			return
		}
		if _, why := p.env.Snapshot5(s); why != "" {
			p.Block(why)
			return
		}
		p.kryo, p.nodes[s] = append(p.kryo, s), true
		if pojo != nil {
			if p.fieldOfKryo == nil {
				p.fieldOfKryo = map[*typeser.SerializerSnapshot]string{}
			}
			p.fieldOfKryo[s] = pojo.TypeClass[strings.LastIndexAny(pojo.TypeClass, ".$")+1:] + "." + fieldOf(pojo, s)
		}
		return
	}
	version, known := p.env.Known(s.Class)
	switch {
	case strings.HasPrefix(s.Class, scalaAPI):
		p.unverifiedBy(fmt.Sprintf("serializer %s is the Scala API's (flink-scala), which no Flink 2.x release ships (it ends with 1.20): a Flink 2.x job declares this state with other serializers", s.Class))
		return
	case !known:
		p.unverifiedBy(fmt.Sprintf("serializer %s (snapshot version %d) is not one stateutil has seen Flink 2.x restore from Flink 1.x", s.Class, s.Version))
		return
	case s.Opaque && len(s.Nested) == 0:
		p.unverifiedBy(fmt.Sprintf("serializer %s has a snapshot stateutil cannot read whole", s.Class))
		return
	case s.Version != version:
		p.unverifiedBy(fmt.Sprintf("serializer %s of snapshot version %d, where Flink 1.15 to 2.3 write version %d", s.Class, s.Version, version))
		return
	}
	var parent *typeser.SerializerSnapshot
	if s.Class == pojoSnapshot {
		parent = s
	}
	for _, n := range s.Nested {
		p.walk(n, parent)
	}
}

// touches reports whether s or a serializer inside it changes.
func (p *State) touches(s *typeser.SerializerSnapshot) bool {
	if s == nil {
		return false
	}
	if p.nodes[s] {
		return true
	}
	return slices.ContainsFunc(s.Nested, p.touches)
}

func fieldOf(pojo, s *typeser.SerializerSnapshot) string {
	if i := slices.Index(pojo.Nested, s); i >= 0 && i < len(pojo.Fields) {
		return pojo.Fields[i]
	}
	return "?"
}

// Changes says what the upgrade rewrites of the state.
func (p *State) Changes() []string {
	var out []string
	for _, s := range p.kryo {
		what := "Kryo values of " + s.TypeClass
		for _, f := range p.nested {
			if f.node == s {
				what = fmt.Sprintf("POJO field %s (%s, nested collections: Kryo's in Flink 2.x too)", f.name(), s.TypeClass)
			}
		}
		out = append(out, what+": Kryo 2 -> Kryo 5")
	}
	for _, f := range p.fields {
		out = append(out, fmt.Sprintf("POJO field %s (%s): Kryo -> %s", f.name(), f.node.TypeClass, f.expr()))
	}
	return out
}

// See looks at one value of the state.
func (p *State) See(b []byte) {
	v, err := decodeWith(p.old, b)
	if nd := (*snapshot.NotDecodedError)(nil); errors.As(err, &nd) && strings.Contains(nd.Serializer, "Kryo") && nd.ValueClass != "" {
		p.Block(p.kryoCause(nd.ValueClass))
		return
	}
	if err != nil {
		p.Block(fmt.Sprintf("a value does not decode (%v)", err))
		return
	}
	p.visit(p.old, v, func(n *typeser.SerializerSnapshot, v any) {
		if why := p.note(n, v); why != "" {
			p.Block(why)
		}
	})
}

// kryoCause is why a Kryo value holding an object of class cannot be
// carried: the class is registered with a serializer of the job's own, or
// Kryo 2 writes it with its FieldSerializer; naming the POJO field that
// holds it where a Kryo field is of that class.
func (p *State) kryoCause(class string) string {
	where := "it holds a " + class
	for _, n := range p.kryo {
		if f := p.fieldOfKryo[n]; f != "" && n.TypeClass == class {
			where = fmt.Sprintf("POJO field %s is a Kryo-typed %s", f, class)
		}
	}
	for _, n := range p.kryo {
		for _, reg := range n.KryoRegistrations {
			if reg.Class == class && reg.Kind != 0 {
				return fmt.Sprintf("%s, which the job registers with a Kryo serializer of its own: its bytes are that serializer's, and its Kryo 5 port decides the new ones (--kryo-classes can declare what it writes, @WrittenBy)", where)
			}
		}
	}
	return fmt.Sprintf("%s, which Kryo 2 writes with its FieldSerializer over the class's fields (a user class, or a JDK class Kryo 2 has no serializer for), which the savepoint does not describe: its Kryo 5 bytes cannot be written from them", where)
}

// note records what one value of a changing node holds: why it blocks,
// or "".
func (p *State) note(n *typeser.SerializerSnapshot, v any) string {
	for _, f := range p.fields {
		if f.node == n {
			if why := f.see(p.env, v); why != "" {
				return why
			}
		}
	}
	if _, why := p.env.Carried(v); why != "" {
		return fmt.Sprintf("a Kryo value of %s: %s", n.TypeClass, why)
	}
	return ""
}

// visit calls fn with the value of every changing node of s in v, the
// value of s as decodeWith gives it; a changing node in a serializer that
// visit does not walk blocks the state.
func (p *State) visit(s *typeser.SerializerSnapshot, v any, fn func(n *typeser.SerializerSnapshot, v any)) {
	if s == nil || !p.touches(s) {
		return
	}
	if p.nodes[s] {
		fn(s, v)
		return
	}
	if v == nil {
		return
	}
	switch typeser.KindOf(s) {
	case "Pojo":
		m, _ := v.(map[string]any)
		for i, n := range s.Nested {
			if i < len(s.Fields) {
				p.visit(n, m[s.Fields[i]], fn)
			}
		}
	case "List":
		vs, _ := v.([]any)
		for _, e := range vs {
			p.visit(s.Nested[0], e, fn)
		}
	case "Nullable":
		p.visit(s.Nested[0], v, fn)
	case "Tuple":
		vs, _ := v.([]any)
		for i, n := range s.Nested {
			if i < len(vs) {
				p.visit(n, vs[i], fn)
			}
		}
	default:
		p.Block(fmt.Sprintf("a value of a serializer whose bytes change (Kryo) lies inside %s, which stateutil does not rewrite", s.Class))
	}
}

// Settle turns what the scan saw into the new serializers.
func (p *State) Settle() {
	if len(p.blocked) > 0 {
		return // its values were not all read: what they hold is unknown
	}
	fields := p.fields[:0]
	for _, f := range p.fields {
		if f.staysKryo() {
			// Kryo's in Flink 2.x too: its values are Kryo 2's, carried to Kryo 5.
			if _, why := p.env.Snapshot5(f.node); why != "" {
				p.Block(why)
			}
			p.kryo, p.nested = append(p.kryo, f.node), append(p.nested, f)
			continue
		}
		if why := f.settle(); why != "" {
			p.Block(fmt.Sprintf("POJO %s field %s: %s", f.pojo.TypeClass, f.field, why))
		}
		fields = append(fields, f)
	}
	p.fields = fields
}

// decodeWith decodes b, one value of s, whole.
func decodeWith(s *typeser.SerializerSnapshot, b []byte) (any, error) {
	v, err := (typeser.Codec{S: s}).Decode(b)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// jsonOf is v with its numbers as json.Number, as the encoders take them,
// and its JSON text. Only plain lists and objects are walked: a Kryo map
// (kept in Kryo's order, which JSON's objects would lose) is the Kryo
// encoder's, which takes Go's numbers too.
func jsonOf(v any) (any, []byte, error) {
	text, err := json.Marshal(v)
	if err != nil {
		return nil, nil, err
	}
	return numbers(v), text, nil
}

func numbers(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = numbers(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = numbers(e)
		}
		return out
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64:
		return json.Number(fmt.Sprint(x))
	case float32:
		return json.Number(strconv.FormatFloat(float64(x), 'g', -1, 32))
	case float64:
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64))
	}
	return v
}

// ErrRewriteMismatch reports a value whose rewritten bytes do not decode
// to what its old bytes held: nothing is written.
var ErrRewriteMismatch = fmt.Errorf("%w: a value rewritten for Flink 2.x does not read back as it was", snapshot.ErrCorrupt)

// Rewrite writes one value again for Flink 2.x, and checks it: its new
// bytes, decoded, must be what its old bytes held.
func (p *State) Rewrite(b []byte) ([]byte, error) {
	v, err := decodeWith(p.old, b)
	if err != nil {
		return nil, fmt.Errorf("the value does not decode: %w", err)
	}
	tv, err := p.transform(p.old, v)
	if err != nil {
		return nil, fmt.Errorf("the value cannot be carried: %w", err)
	}
	nv, text, err := jsonOf(tv)
	if err != nil {
		return nil, err
	}
	out, err := typeser.EncodeAny(nil, p.new, nv, 0)
	if err != nil {
		return nil, fmt.Errorf("writing the value for Flink 2.x: %w", err)
	}
	back, err := decodeWith(p.new, out)
	if err != nil {
		return nil, fmt.Errorf("%w: its new bytes do not decode: %w", ErrRewriteMismatch, err)
	}
	_, backText, err := jsonOf(back)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(text, backText) {
		return nil, fmt.Errorf("%w: it held %s, its new bytes hold %s", ErrRewriteMismatch, text, backText)
	}
	return out, nil
}

// transform is v, a value of s, as the new serializers take it.
func (p *State) transform(s *typeser.SerializerSnapshot, v any) (any, error) {
	if s == nil || v == nil || !p.touches(s) {
		return v, nil
	}
	if p.nodes[s] {
		for _, f := range p.fields {
			if f.node == s {
				return f.convert(p.env, v), nil
			}
		}
		c, why := p.env.Carried(v)
		if why != "" {
			return nil, errors.New(why)
		}
		return c, nil
	}
	var err error
	switch typeser.KindOf(s) {
	case "Pojo":
		m, _ := v.(map[string]any)
		out := make(map[string]any, len(m))
		for k, fv := range m {
			out[k] = fv
		}
		for i, n := range s.Nested {
			if i < len(s.Fields) {
				if out[s.Fields[i]], err = p.transform(n, m[s.Fields[i]]); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	case "List", "Tuple":
		vs, _ := v.([]any)
		out := make([]any, len(vs))
		for i, e := range vs {
			n := s.Nested[0]
			if typeser.KindOf(s) == "Tuple" {
				n = s.Nested[i]
			}
			if out[i], err = p.transform(n, e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case "Nullable":
		return p.transform(s.Nested[0], v)
	}
	return v, nil
}

// convert is a value of the field as its new serializer takes it: the
// elements without the class tags Kryo's JSON gives them.
func (f *collField) convert(env *Env, v any) any {
	if v == nil {
		return nil
	}
	plain := func(e any) any {
		_, p := env.ElementClass(e)
		return p
	}
	if f.kind == "Map" {
		keys, vals, _ := env.Entries(v)
		out := make(map[string]any, len(keys))
		for i, k := range keys {
			text, ok := plain(k).(string)
			if !ok {
				b, _ := json.Marshal(plain(k))
				text = string(b)
			}
			out[text] = plain(vals[i])
		}
		return out
	}
	elems, _ := env.Elements(v)
	out := make([]any, len(elems))
	for i, e := range elems {
		out[i] = plain(e)
	}
	return out
}
