package classlayout

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseJavaDeclarations(t *testing.T) {
	src := `
# a comment
class com.acme.Order {
    private static final long serialVersionUID = 1L;
    @Deprecated private final String id;
    protected transient Object cache;
    public Map<String, List<Line>> lines;
    int a, b;
    long[] stamps;
    Line[][] grid;
    Map<? extends Number, ?> odd;
    java.util.Optional<T> maybe;
}
// Java's own comments too
final class com.acme.Order$Line { String sku; int quantity; }
enum com.acme.Level { LOW, MEDIUM, HIGH; }
enum com.acme.Empty {}
`
	// The initializer above is refused: a layout lists declarations only.
	if _, err := Parse([]byte(src), "x"); err == nil || !strings.Contains(err.Error(), "x:4: field serialVersionUID: leave out its initializer") {
		t.Fatalf("an initializer: %v", err)
	}
	s, err := Parse([]byte(strings.Replace(src, " = 1L", "", 1)), "x")
	if err != nil {
		t.Fatal(err)
	}
	order, ok := s.Class("com.acme.Order")
	if !ok || order.Final || order.Constants != nil {
		t.Fatalf("Order: %+v", order)
	}
	want := []Field{
		{Name: "id", Type: Type{Class: "java.lang.String"}},
		{Name: "lines", Type: Type{Class: "java.util.Map", Args: []Type{{Class: "java.lang.String"}, {Class: "java.util.List", Args: []Type{{Class: "com.acme.Order$Line"}}}}}},
		{Name: "a", Type: Type{Class: "int"}},
		{Name: "b", Type: Type{Class: "int"}},
		{Name: "stamps", Type: Type{Class: "[J"}},
		{Name: "grid", Type: Type{Class: "[[Lcom.acme.Order$Line;"}},
		{Name: "odd", Type: Type{Class: "java.util.Map", Args: []Type{{Class: "java.lang.Number"}, {}}}},
		{Name: "maybe", Type: Type{Class: "java.util.Optional", Args: []Type{{}}}},
	}
	if !reflect.DeepEqual(order.Fields, want) {
		t.Errorf("Order's fields:\n%+v\nwant\n%+v", order.Fields, want)
	}
	line, _ := s.Class("com.acme.Order$Line")
	if !line.Final || len(line.Fields) != 2 {
		t.Errorf("Line: %+v", line)
	}
	level, _ := s.Class("com.acme.Level")
	if !level.Final || !reflect.DeepEqual(level.Constants, []string{"LOW", "MEDIUM", "HIGH"}) {
		t.Errorf("Level: %+v", level)
	}
	if empty, _ := s.Class("com.acme.Empty"); empty.Constants == nil || len(empty.Constants) != 0 {
		t.Errorf("an enum without constants: %+v", empty)
	}
	if s.Len() != 4 {
		t.Errorf("%d classes, want 4", s.Len())
	}
}

// The zoo witness job's layout file parses to what ZooJob.java declares.
func TestParseTheWitnessLayout(t *testing.T) {
	b, err := os.ReadFile("../../testenv/flink/witness/zoo.kryo-classes")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(b, "zoo.kryo-classes")
	if err != nil {
		t.Fatal(err)
	}
	g, _ := s.Class("stateutil.flink.jobs.ZooJob$Gadget")
	want := []Field{
		{Name: "name", Type: Type{Class: "java.lang.String"}},
		{Name: "values", Type: Type{Class: "[J"}},
		{Name: "attrs", Type: Type{Class: "java.util.Map", Args: []Type{{Class: "java.lang.String"}, {Class: "java.lang.Integer"}}}},
	}
	if g == nil || !g.Final || !reflect.DeepEqual(g.Fields, want) {
		t.Errorf("Gadget: %+v", g)
	}
}

func TestParseErrorsNameFileAndLine(t *testing.T) {
	for src, want := range map[string]string{
		"class a.B { int x; }\nclass a.B { }":                     "f:2: class a.B declared twice",
		"class a.B {\n int x;\n long x; }":                        "f:3: class a.B: field x declared twice (a JSON object cannot hold both)",
		"class a.B { int x }":                                     "f:1: want ';', not '}'",
		"class a.B { int x;":                                      "f:1: want a type, not '\\x00'",
		"record a.B(int x) {}":                                    `f:1: want a class or enum declaration, not "record" (records, interfaces and superclasses are not written here: list inherited fields in the class)`,
		"class a.B extends a.C { }":                               `f:1: want '{', not 'e'`,
		"class .B { }":                                            `f:1: class wants a binary class name (com.acme.Outer$Inner), not ".B"`,
		"enum a.E { A, A }":                                       "f:1: enum a.E: constant A twice",
		"class a.B { int<String> x; }":                            "f:1: class a.B, field x: int takes no type arguments",
		"class a.B { Line x; }\nclass a.Line {}\nclass b.Line {}": "f:1: class a.B, field x: Line names a.Line and b.Line: write the binary name",
		"class a.B { List<List<List<List<List<List<List<List<List<List<List<List<List<List<List<List<List<List<int>>>>>>>>>>>>>>>>>> x; }": "f:1: type arguments nested deeper than 16",
	} {
		if _, err := Parse([]byte(src), "f"); err == nil || err.Error() != want {
			t.Errorf("%q: %v\nwant %s", src, err, want)
		}
	}
}

// FuzzParse checks that no text makes the parser panic or hang, and that
// what parses names every field's class by a binary name or none.
func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile("../../testenv/flink/witness/zoo.kryo-classes"); err == nil {
		f.Add(string(b))
	}
	f.Add("class a.B { Map<String, List<a.C[]>> m; int[][] x; }\nenum a.E { X, Y }")
	f.Add("final class a.B$C { ? x; }")
	f.Add("@WrittenBy(a.S.class) final class a.T { varlong id; String text; varint(false) d; @Nullable a.T next; Object any; }")
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse([]byte(src), "f")
		if err != nil {
			return
		}
		for name, c := range s.classes {
			for _, fl := range c.Fields {
				if (fl.Write != "") != c.Written {
					t.Fatalf("class %s (written %v) member %s: write %q", name, c.Written, fl.Name, fl.Write)
				}
				if (fl.Write == WriteObject || fl.Write == WriteObjectOrNull) != (fl.Type.Class != "") && c.Written {
					t.Fatalf("class %s member %s: %s of class %q", name, fl.Name, fl.Write, fl.Type.Class)
				}
				if strings.ContainsAny(fl.Type.Class, " <>,") {
					t.Fatalf("class %s field %s: type %q", name, fl.Name, fl.Type.Class)
				}
			}
		}
	})
}

// A class marked @WrittenBy lists its serializer's writes, in the order
// written, by the calls Kryo names.
func TestParseWrittenBy(t *testing.T) {
	src := `
// out.writeVarLong(t.id, true); out.writeString(t.text); ...
@WrittenBy(com.acme.TokenSerializer.class)
public final class com.acme.Token {
    varlong id;
    String text;
    varint(false) delta;
    varlong(true) big;
    varint size, count;
    int fixed;
    long stamp;
    boolean on; byte b; short s; char c; float f; double d;
    Line line;
    @Nullable Line maybe;
    @javax.annotation.Nullable long[] stamps;
    Object any;
    Integer boxed;
}
@WrittenBy class com.acme.Empty {}
final class com.acme.Line { String sku; }
`
	s, err := Parse([]byte(src), "x")
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := s.Class("com.acme.Token")
	if tok == nil || !tok.Written || tok.WrittenBy != "com.acme.TokenSerializer" || !tok.Final {
		t.Fatalf("Token: %+v", tok)
	}
	want := []Field{
		{Name: "id", Write: WriteVarLong},
		{Name: "text", Write: WriteString},
		{Name: "delta", Write: WriteVarIntZigzag},
		{Name: "big", Write: WriteVarLong},
		{Name: "size", Write: WriteVarInt},
		{Name: "count", Write: WriteVarInt},
		{Name: "fixed", Write: WriteInt},
		{Name: "stamp", Write: WriteLong},
		{Name: "on", Write: WriteBoolean},
		{Name: "b", Write: WriteByte},
		{Name: "s", Write: WriteShort},
		{Name: "c", Write: WriteChar},
		{Name: "f", Write: WriteFloat},
		{Name: "d", Write: WriteDouble},
		{Name: "line", Type: Type{Class: "com.acme.Line"}, Write: WriteObject},
		{Name: "maybe", Type: Type{Class: "com.acme.Line"}, Write: WriteObjectOrNull},
		{Name: "stamps", Type: Type{Class: "[J"}, Write: WriteObjectOrNull},
		{Name: "any", Write: WriteClassAndObject},
		{Name: "boxed", Type: Type{Class: "java.lang.Integer"}, Write: WriteObject},
	}
	if !reflect.DeepEqual(tok.Fields, want) {
		t.Errorf("Token's writes:\n%+v\nwant\n%+v", tok.Fields, want)
	}
	empty, _ := s.Class("com.acme.Empty")
	if empty == nil || !empty.Written || empty.WrittenBy != "" || len(empty.Fields) != 0 {
		t.Errorf("Empty: %+v", empty)
	}
	if line, _ := s.Class("com.acme.Line"); line.Written || line.Fields[0].Write != "" {
		t.Errorf("Line is a FieldSerializer class: %+v", line)
	}
	w := s.Written()
	if w.Len() != 2 {
		t.Errorf("Written: %d classes, want Token and Empty", w.Len())
	}
	if _, ok := w.Class("com.acme.Line"); ok {
		t.Error("Written holds Line")
	}
	if none := (&Set{classes: map[string]*Class{"a.B": {Name: "a.B"}}}).Written(); none != nil {
		t.Errorf("Written of a set without one: %+v", none)
	}
}

func TestParseWrittenByErrorsNameFileAndLine(t *testing.T) {
	for src, want := range map[string]string{
		"@Deprecated class a.B { }":                                          "f:1: @Deprecated: a class declaration takes only @WrittenBy, which marks a class a serializer of the user's own writes",
		"@WrittenBy @WrittenBy class a.B { }":                                "f:1: @WrittenBy twice",
		"@WrittenBy() class a.B { }":                                         `f:1: @WrittenBy wants the serializer's binary name (com.acme.TokenSerializer), not ""`,
		"@WrittenBy(a.S class a.B { }":                                       "f:1: want ')', not 'c'",
		"@WrittenBy\nenum a.E { X }":                                         "f:2: enum a.E: @WrittenBy marks a class",
		"@WrittenBy class a.B {\n  transient int x;\n}":                      "f:2: a member of a class marked @WrittenBy is a write of its serializer, never transient",
		"@WrittenBy class a.B {\n  int x;\n  varint(maybe) y;\n}":            "f:3: varint(maybe): want (true) or (false), the write's optimizePositive",
		"@WrittenBy class a.B {\n\n  long(false) y;\n}":                      "f:3: class a.B, member y: long(false): only varint and varlong take (true) or (false), their optimizePositive",
		"@WrittenBy class a.B {\n  List<String> names;\n}":                   "f:2: class a.B, member names: List<...>: kryo.writeObject hands the serializer no type arguments: leave them out",
		"@WrittenBy class a.B {\n  T value;\n}":                              "f:2: class a.B, member value: T is no class: write Object for kryo.writeClassAndObject",
		"@WrittenBy class a.B {\n  @Nullable varint n;\n}":                   "f:2: class a.B, member n: @Nullable varint: writeVarInt(v, true) writes no null",
		"@WrittenBy class a.B {\n  int n;\n  String n;\n}":                   "f:3: class a.B: field n declared twice (a JSON object cannot hold both)",
		"class a.B {\n  varlong(true) id;\n}":                                "f:2: class a.B, field id: varlong(true) is a write of a class marked @WrittenBy",
		"@WrittenBy class a.B { Line x; }\nclass a.Line {}\nclass b.Line {}": "f:1: class a.B, member x: Line names a.Line and b.Line: write the binary name",
	} {
		if _, err := Parse([]byte(src), "f"); err == nil || err.Error() != want {
			t.Errorf("%q: %v\nwant %s", src, err, want)
		}
	}
}

// ByName is the order Kryo's FieldSerializer writes fields in: Java's
// String order, by UTF-16 units, where a character beyond the BMP (a
// surrogate pair, from 0xD800) comes before U+FF42, though its UTF-8 is
// greater.
func TestFieldsByNameInJavaOrder(t *testing.T) {
	s, err := Parse([]byte("class com.acme.A { int ｂ; int \U0001D44E; int b; int a; }"), "a")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.Class("com.acme.A")
	var got []string
	for _, f := range c.ByName {
		got = append(got, f.Name)
	}
	if want := []string{"a", "b", "\U0001D44E", "ｂ"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ByName %q, want %q", got, want)
	}
	if c.Fields[0].Name != "ｂ" {
		t.Errorf("Fields reordered: %v", c.Fields)
	}
}
