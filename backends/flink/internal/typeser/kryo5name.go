package typeser

import "strings"

// kryo5Mark ends the name of a type whose Kryo serializers read Kryo 5
// where its expression does not show them (the fields of a POJO): the
// bytes of a KryoSerializerSnapshot are the same in Flink 1 and 2, so
// only the name can carry the Kryo version of the snapshot it came from
// to the codecs that rebuild it.
const kryo5Mark = "|kryo5"

// typeName is the type expression of s, marked where it hides Kryo 5.
func typeName(s *SerializerSnapshot) string {
	e := typeExpr(s)
	if !strings.Contains(e, "kryo5") && hasKryo5(s) {
		e += kryo5Mark
	}
	return e
}

func hasKryo5(s *SerializerSnapshot) bool {
	if s == nil {
		return false
	}
	if s.Kryo5 && KindOf(s) == "Kryo" {
		return true
	}
	for _, n := range s.Nested {
		if hasKryo5(n) {
			return true
		}
	}
	return false
}
