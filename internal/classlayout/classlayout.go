// Package classlayout reads what a user says about Java classes that a
// snapshot names but does not describe: the fields of a class (their names
// and Java types, generics included) and the constants of an enum, written
// as Java declarations (stateutil's --kryo-classes file):
//
//	# the fields Kryo's FieldSerializer writes, inherited ones too
//	class com.acme.Gadget {
//	    private final String name;
//	    private final long[] values;
//	    private final Map<String, Integer> attrs;
//	}
//	final class com.acme.Order$Line { String sku; int quantity; }
//	enum com.acme.Level { LOW, MEDIUM, HIGH }
//
// A class is named by its binary name (com.acme.Order$Line, as the JVM and
// Kryo write it). A field's type may name a class by its binary name, by
// the simple name of a class the file declares (Line), or by the simple
// name of a java.lang class or of a java.util collection, map or
// Optional. Modifiers are ignored but static and transient, whose fields
// are not written; `final` before `class` says the class has no
// subclasses, which decides how a field of that type is written.
package classlayout

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
)

// Set is the classes of one file, by binary name.
type Set struct {
	classes map[string]*Class
}

// Class is one declared class or enum.
type Class struct {
	// Name is the binary name.
	Name string
	// Final says no subclass exists (a final class, an enum).
	Final bool
	// Fields are the instance fields written, in the order declared.
	Fields []Field
	// ByName are Fields in the order Kryo's FieldSerializer writes them:
	// by name as Java orders Strings, in declared order among equals.
	ByName []Field
	// Constants are an enum's constants by ordinal (nil: not an enum).
	Constants []string
	// Written says a serializer of the user's own writes the class: its
	// Fields are that serializer's writes, in order. WrittenBy is the
	// serializer's binary name, "" where the user does not name it.
	Written   bool
	WrittenBy string
}

// Field is one instance field, or one write of a Written class.
type Field struct {
	Name string
	Type Type
	// Write is the call that writes a Written class's member ("" in
	// any other class); Type is the class of an object that
	// WriteObject and WriteObjectOrNull write.
	Write Write
}

// Write is one call of a Kryo serializer's write method, named as Kryo
// names it.
type Write string

// The writes a Written class's members name.
const (
	WriteBoolean        Write = "writeBoolean"
	WriteByte           Write = "writeByte"
	WriteShort          Write = "writeShort"
	WriteChar           Write = "writeChar"
	WriteInt            Write = "writeInt"
	WriteLong           Write = "writeLong"
	WriteFloat          Write = "writeFloat"
	WriteDouble         Write = "writeDouble"
	WriteVarInt         Write = "writeVarInt(v, true)"
	WriteVarIntZigzag   Write = "writeVarInt(v, false)"
	WriteVarLong        Write = "writeVarLong(v, true)"
	WriteVarLongZigzag  Write = "writeVarLong(v, false)"
	WriteString         Write = "writeString"
	WriteObject         Write = "kryo.writeObject"
	WriteObjectOrNull   Write = "kryo.writeObjectOrNull"
	WriteClassAndObject Write = "kryo.writeClassAndObject"
)

// primitiveWrites are the writes a primitive member names.
var primitiveWrites = map[string]Write{"boolean": WriteBoolean, "byte": WriteByte, "short": WriteShort, "char": WriteChar,
	"int": WriteInt, "long": WriteLong, "float": WriteFloat, "double": WriteDouble}

// Type is a Java type: a primitive ("int"), a class by binary name with
// its type arguments, or an array by its binary name ("[J",
// "[Lcom.acme.Line;"). Class is "" for a type variable or wildcard, which
// stands for any class.
type Type struct {
	Class string
	Args  []Type
}

// Class is the class declared with binary name name.
func (s *Set) Class(name string) (*Class, bool) {
	if s == nil {
		return nil, false
	}
	c, ok := s.classes[name]
	return c, ok
}

// Written is the set of the classes of s that a serializer of the
// user's own writes (nil when none).
func (s *Set) Written() *Set {
	if s == nil {
		return nil
	}
	out := &Set{classes: map[string]*Class{}}
	for name, c := range s.classes {
		if c.Written {
			out.classes[name] = c
		}
	}
	if len(out.classes) == 0 {
		return nil
	}
	return out
}

// Len is the number of classes declared.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.classes)
}

// Primitives are Java's primitive types with their array descriptors.
var Primitives = map[string]string{"boolean": "Z", "byte": "B", "char": "C", "short": "S", "int": "I", "long": "J", "float": "F", "double": "D"}

// known are the simple names a field's type may use for JDK classes.
var known = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{"Object", "String", "Integer", "Long", "Short", "Byte", "Character", "Boolean", "Float", "Double", "Number", "Enum", "Class", "CharSequence"} {
		m[n] = "java.lang." + n
	}
	for _, n := range []string{"Collection", "List", "ArrayList", "LinkedList", "Set", "HashSet", "LinkedHashSet", "TreeSet", "SortedSet", "NavigableSet",
		"Map", "HashMap", "LinkedHashMap", "TreeMap", "SortedMap", "NavigableMap", "Optional", "Queue", "Deque", "ArrayDeque", "PriorityQueue",
		"Vector", "Hashtable", "UUID", "Date", "Locale", "BitSet"} {
		m[n] = "java.util." + n
	}
	m["BigInteger"], m["BigDecimal"] = "java.math.BigInteger", "java.math.BigDecimal"
	return m
}()

// Parse reads a layout file; file names it in errors, which give the line.
func Parse(data []byte, file string) (*Set, error) {
	p := &parser{file: file, src: string(data), line: 1}
	decls, err := p.decls()
	if err != nil {
		return nil, err
	}
	s := &Set{classes: map[string]*Class{}}
	simple := map[string][]string{}
	for _, d := range decls {
		if _, dup := s.classes[d.class.Name]; dup {
			return nil, fmt.Errorf("%s:%d: class %s declared twice", file, d.line, d.class.Name)
		}
		s.classes[d.class.Name] = d.class
		n := d.class.Name[strings.LastIndexAny(d.class.Name, ".$")+1:]
		simple[n] = append(simple[n], d.class.Name)
	}
	for _, d := range decls {
		seen := map[string]bool{}
		for i, f := range d.fields {
			if seen[f.name] {
				return nil, fmt.Errorf("%s:%d: class %s: field %s declared twice (a JSON object cannot hold both)", file, f.line, d.class.Name, f.name)
			}
			seen[f.name] = true
			if d.class.Written {
				fl, err := resolveWrite(f, simple)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: class %s, member %s: %v", file, f.line, d.class.Name, f.name, err)
				}
				d.class.Fields[i] = fl
				continue
			}
			if f.typ.arg != "" {
				return nil, fmt.Errorf("%s:%d: class %s, field %s: %s(%s) is a write of a class marked @WrittenBy", file, f.line, d.class.Name, f.name, f.typ.name, f.typ.arg)
			}
			t, err := resolve(f.typ, simple)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: class %s, field %s: %v", file, f.line, d.class.Name, f.name, err)
			}
			d.class.Fields[i] = Field{Name: f.name, Type: t}
		}
		d.class.ByName = slices.Clone(d.class.Fields)
		slices.SortStableFunc(d.class.ByName, func(a, b Field) int { return javaCompare(a.Name, b.Name) })
	}
	return s, nil
}

// javaCompare is String.compareTo: by UTF-16 units.
func javaCompare(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

// rawType is a type as written: a name, its arguments, its array depth,
// and the argument of varint(false) or varlong(false).
type rawType struct {
	name string
	args []rawType
	dims int
	arg  string
}

type rawField struct {
	name     string
	typ      rawType
	line     int
	nullable bool // annotated @Nullable
}

type decl struct {
	class  *Class
	fields []rawField
	line   int
}

// resolve turns a type as written into binary names.
func resolve(t rawType, simple map[string][]string) (Type, error) {
	name := t.name
	switch {
	case name == "?" || isTypeVariable(name, simple):
		name = ""
	case Primitives[name] != "":
		if len(t.args) > 0 {
			return Type{}, fmt.Errorf("%s takes no type arguments", name)
		}
	case !strings.Contains(name, "."):
		if cands := simple[name]; len(cands) == 1 {
			name = cands[0]
		} else if len(cands) > 1 {
			return Type{}, fmt.Errorf("%s names %s: write the binary name", name, strings.Join(cands, " and "))
		} else if k, ok := known[name]; ok {
			name = k
		}
	}
	out := Type{Class: name}
	for _, a := range t.args {
		ra, err := resolve(a, simple)
		if err != nil {
			return Type{}, err
		}
		out.Args = append(out.Args, ra)
	}
	if t.dims == 0 {
		return out, nil
	}
	elem := "Ljava.lang.Object;"
	switch {
	case Primitives[name] != "":
		elem = Primitives[name]
	case name != "":
		elem = "L" + name + ";"
	}
	return Type{Class: strings.Repeat("[", t.dims) + elem}, nil
}

// resolveWrite is the write a member of a Written class names.
func resolveWrite(f rawField, simple map[string][]string) (Field, error) {
	t := f.typ
	out := Field{Name: f.name}
	switch {
	case t.arg != "":
		if t.name != "varint" && t.name != "varlong" || t.dims > 0 {
			return Field{}, fmt.Errorf("%s(%s): only varint and varlong take (true) or (false), their optimizePositive", t.name, t.arg)
		}
		out.Write = map[string]Write{"varint true": WriteVarInt, "varint false": WriteVarIntZigzag,
			"varlong true": WriteVarLong, "varlong false": WriteVarLongZigzag}[t.name+" "+t.arg]
	case t.dims == 0 && (t.name == "varint" || t.name == "varlong"):
		out.Write = map[string]Write{"varint": WriteVarInt, "varlong": WriteVarLong}[t.name]
	case t.dims == 0 && primitiveWrites[t.name] != "":
		out.Write = primitiveWrites[t.name]
	case t.dims == 0 && (t.name == "String" || t.name == "java.lang.String"):
		out.Write = WriteString
	case t.dims == 0 && (t.name == "Object" || t.name == "java.lang.Object"):
		out.Write = WriteClassAndObject
	case len(t.args) > 0:
		return Field{}, fmt.Errorf("%s<...>: kryo.writeObject hands the serializer no type arguments: leave them out", t.name)
	case t.name == "?" || isTypeVariable(t.name, simple):
		return Field{}, fmt.Errorf("%s is no class: write Object for kryo.writeClassAndObject", t.name)
	default:
		rt, err := resolve(t, simple)
		if err != nil {
			return Field{}, err
		}
		out.Type, out.Write = rt, WriteObject
		if f.nullable {
			out.Write = WriteObjectOrNull
		}
		return out, nil
	}
	if f.nullable && out.Write != WriteString && out.Write != WriteClassAndObject {
		return Field{}, fmt.Errorf("@Nullable %s: %s writes no null", t.name, out.Write)
	}
	return out, nil
}

// isTypeVariable says a bare name is no class: one the file does not
// declare, no JDK class known, not qualified, and in upper case (T, K, V).
func isTypeVariable(name string, simple map[string][]string) bool {
	_, isKnown := known[name]
	return len(simple[name]) == 0 && !isKnown && !strings.Contains(name, ".") && strings.ToUpper(name) == name && Primitives[name] == ""
}

type parser struct {
	file string
	src  string
	pos  int
	line int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.file, p.line, fmt.Sprintf(format, args...))
}

// skip passes white space and # or // comments.
func (p *parser) skip() {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '\n':
			p.line++
			p.pos++
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '#' || strings.HasPrefix(p.src[p.pos:], "//"):
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

// word reads a name: letters, digits, _, $ and dots ("" if none).
func (p *parser) word() string {
	p.skip()
	start := p.pos
	for p.pos < len(p.src) {
		r := rune(p.src[p.pos])
		if r >= 0x80 || unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '$' || r == '.' {
			p.pos++
			continue
		}
		break
	}
	return p.src[start:p.pos]
}

// peek is the next character after white space, 0 at the end.
func (p *parser) peek() byte {
	p.skip()
	if p.pos == len(p.src) {
		return 0
	}
	return p.src[p.pos]
}

func (p *parser) expect(c byte) error {
	if got := p.peek(); got != c {
		if got == 0 {
			return p.errorf("want %q, not the end of the file", c)
		}
		return p.errorf("want %q, not %q", c, got)
	}
	p.pos++
	return nil
}

// maxDecls bounds a file's declarations and fields.
const maxDecls = 1 << 16

func (p *parser) decls() ([]decl, error) {
	var out []decl
	for p.peek() != 0 {
		if len(out) == maxDecls {
			return nil, p.errorf("more than %d classes", maxDecls)
		}
		d, err := p.decl()
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// decl reads `[@WrittenBy[(SERIALIZER)]] [modifiers] class|enum NAME { ... }`.
func (p *parser) decl() (decl, error) {
	line := p.line
	final, written, by := false, false, ""
	for {
		if p.peek() == '@' {
			p.pos++
			if a := p.word(); a != "WrittenBy" {
				return decl{}, p.errorf("@%s: a class declaration takes only @WrittenBy, which marks a class a serializer of the user's own writes", a)
			}
			if written {
				return decl{}, p.errorf("@WrittenBy twice")
			}
			written = true
			if p.peek() == '(' {
				p.pos++
				by = strings.TrimSuffix(p.word(), ".class")
				if !validBinaryName(by) {
					return decl{}, p.errorf("@WrittenBy wants the serializer's binary name (com.acme.TokenSerializer), not %q", by)
				}
				if err := p.expect(')'); err != nil {
					return decl{}, err
				}
			}
			continue
		}
		w := p.word()
		switch w {
		case "public", "private", "protected", "static", "abstract":
			continue
		case "final":
			final = true
			continue
		case "class", "enum":
			name := p.word()
			if !validBinaryName(name) {
				return decl{}, p.errorf("%s wants a binary class name (com.acme.Outer$Inner), not %q", w, name)
			}
			if err := p.expect('{'); err != nil {
				return decl{}, err
			}
			if w == "enum" {
				if written {
					return decl{}, p.errorf("enum %s: @WrittenBy marks a class", name)
				}
				c, err := p.constants(name)
				return decl{class: c, line: line}, err
			}
			fields, err := p.fields(written)
			return decl{class: &Class{Name: name, Final: final, Fields: make([]Field, len(fields)), Written: written, WrittenBy: by},
				fields: fields, line: line}, err
		case "":
			return decl{}, p.errorf("want a class or enum declaration, not %q", p.peek())
		default:
			return decl{}, p.errorf("want a class or enum declaration, not %q (records, interfaces and superclasses are not written here: list inherited fields in the class)", w)
		}
	}
}

func validBinaryName(name string) bool {
	if name == "" || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
		return false
	}
	r := rune(name[0])
	return r >= 0x80 || unicode.IsLetter(r) || r == '_' || r == '$'
}

// constants reads an enum's constants up to its closing brace.
func (p *parser) constants(name string) (*Class, error) {
	c := &Class{Name: name, Final: true, Constants: []string{}}
	for {
		if p.peek() == '}' {
			p.pos++
			return c, nil
		}
		w := p.word()
		if w == "" || strings.Contains(w, ".") {
			return nil, p.errorf("enum %s: want a constant name, not %q", name, w)
		}
		if slices.Contains(c.Constants, w) {
			return nil, p.errorf("enum %s: constant %s twice", name, w)
		}
		if len(c.Constants) == maxDecls {
			return nil, p.errorf("enum %s: more than %d constants", name, maxDecls)
		}
		c.Constants = append(c.Constants, w)
		switch p.peek() {
		case ',', ';':
			p.pos++
		case '}':
		default:
			return nil, p.errorf("enum %s: want ',' or '}' after %s, not %q", name, w, p.peek())
		}
	}
}

// fields reads field declarations up to the class's closing brace: a
// Written class's members, its serializer's writes, are never static or
// transient.
func (p *parser) fields(written bool) ([]rawField, error) {
	var out []rawField
	for {
		if p.peek() == '}' {
			p.pos++
			return out, nil
		}
		line := p.line
		skipped, nullable := false, false
		var typ rawType
		for {
			if p.peek() == '@' {
				p.pos++
				if a := p.word(); a == "Nullable" || strings.HasSuffix(a, ".Nullable") {
					nullable = true
				}
				continue
			}
			save, saveLine := p.pos, p.line
			w := p.word()
			if (w == "static" || w == "transient") && written {
				return nil, p.errorf("a member of a class marked @WrittenBy is a write of its serializer, never %s", w)
			}
			if w == "static" || w == "transient" {
				skipped = true
				continue
			}
			if w == "private" || w == "public" || w == "protected" || w == "final" || w == "volatile" {
				continue
			}
			p.pos, p.line = save, saveLine
			var err error
			if typ, err = p.typ(0); err != nil {
				return nil, err
			}
			break
		}
		for {
			name := p.word()
			if name == "" || strings.Contains(name, ".") {
				return nil, p.errorf("want a field name, not %q", name)
			}
			if len(out) == maxDecls {
				return nil, p.errorf("more than %d fields", maxDecls)
			}
			if !skipped {
				out = append(out, rawField{name: name, typ: typ, line: line, nullable: nullable})
			}
			if p.peek() == '=' {
				return nil, p.errorf("field %s: leave out its initializer", name)
			}
			if p.peek() == ',' {
				p.pos++
				continue
			}
			if err := p.expect(';'); err != nil {
				return nil, err
			}
			break
		}
	}
}

// typ reads NAME[<TYPE, ...>][[]...], or ? [extends|super TYPE].
func (p *parser) typ(depth int) (rawType, error) {
	if depth > 16 {
		return rawType{}, p.errorf("type arguments nested deeper than 16")
	}
	var t rawType
	if p.peek() == '?' {
		p.pos++
		save, saveLine := p.pos, p.line
		switch p.word() {
		case "extends":
			return p.typ(depth + 1)
		case "super":
			if _, err := p.typ(depth + 1); err != nil {
				return rawType{}, err
			}
		default:
			p.pos, p.line = save, saveLine
		}
		return rawType{name: "?"}, nil
	}
	if t.name = p.word(); t.name == "" {
		return rawType{}, p.errorf("want a type, not %q", p.peek())
	}
	if p.peek() == '(' {
		// varint(false), varlong(true): a write's optimizePositive.
		p.pos++
		if t.arg = p.word(); t.arg != "true" && t.arg != "false" {
			return rawType{}, p.errorf("%s(%s): want (true) or (false), the write's optimizePositive", t.name, t.arg)
		}
		if err := p.expect(')'); err != nil {
			return rawType{}, err
		}
	}
	if p.peek() == '<' {
		p.pos++
		for {
			a, err := p.typ(depth + 1)
			if err != nil {
				return rawType{}, err
			}
			t.args = append(t.args, a)
			if p.peek() == ',' {
				p.pos++
				continue
			}
			if err := p.expect('>'); err != nil {
				return rawType{}, err
			}
			break
		}
	}
	for p.peek() == '[' {
		p.pos++
		if err := p.expect(']'); err != nil {
			return rawType{}, err
		}
		if t.dims++; t.dims > 255 {
			return rawType{}, p.errorf("an array of more than 255 dimensions")
		}
	}
	return t, nil
}
