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
		{"id", Type{Class: "java.lang.String"}},
		{"lines", Type{Class: "java.util.Map", Args: []Type{{Class: "java.lang.String"}, {Class: "java.util.List", Args: []Type{{Class: "com.acme.Order$Line"}}}}}},
		{"a", Type{Class: "int"}},
		{"b", Type{Class: "int"}},
		{"stamps", Type{Class: "[J"}},
		{"grid", Type{Class: "[[Lcom.acme.Order$Line;"}},
		{"odd", Type{Class: "java.util.Map", Args: []Type{{Class: "java.lang.Number"}, {}}}},
		{"maybe", Type{Class: "java.util.Optional", Args: []Type{{}}}},
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
		{"name", Type{Class: "java.lang.String"}},
		{"values", Type{Class: "[J"}},
		{"attrs", Type{Class: "java.util.Map", Args: []Type{{Class: "java.lang.String"}, {Class: "java.lang.Integer"}}}},
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
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse([]byte(src), "f")
		if err != nil {
			return
		}
		for name, c := range s.classes {
			for _, fl := range c.Fields {
				if strings.ContainsAny(fl.Type.Class, " <>,") {
					t.Fatalf("class %s field %s: type %q", name, fl.Name, fl.Type.Class)
				}
			}
		}
	})
}
