package flink

import (
	"testing"
)

// fuzzScalaStates are the states of the scala job whose values are Flink
// 1.x's Scala API serializers: case classes, Option, Either, Try, Unit,
// an Enumeration, a Scala collection, and Scala classes under Kryo (chill).
var fuzzScalaStates = map[string][]string{
	"1.20.5/scala-hashmap-canonical": {"tuple2", "caseclass", "option", "either", "try", "unit", "enum", "seq", "kryo"},
}

// FuzzScalaValues mutates real values of the Scala API's serializers as
// FuzzBuiltinValues does those of Flink's composite serializers.
func FuzzScalaValues(f *testing.F) {
	fuzzCorpusValues(f, fuzzScalaStates)
}
