package avro

import (
	"github.com/hamba/avro/v2"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/snapshot"
)

// avroValueSchema describes an Avro serializer's values (walkAvro's) by
// the snapshot's Avro schema.
func avroValueSchema(s *typeser.SerializerSnapshot, _ int) (snapshot.Schema, bool) {
	sch, err := avroSchema(s.Schema)
	if err != nil || s.Schema == "" {
		return snapshot.Schema{}, false
	}
	return schemaOfAvro(sch, 0), true
}

// avroKinds are the schemas of the primitives walkAvro gives as they are.
var avroKinds = map[avro.Type]snapshot.SchemaKind{
	avro.Boolean: snapshot.SchemaBool, avro.Int: snapshot.SchemaInt32, avro.Long: snapshot.SchemaInt64,
	avro.Float: snapshot.SchemaFloat32, avro.Double: snapshot.SchemaFloat64, avro.Bytes: snapshot.SchemaBytes,
	avro.String: snapshot.SchemaString,
}

// schemaOfAvro is the schema of walkAvro's values of sch: records as
// structs, a union of one type and null as that type, a union of more as a
// struct of its branches by name, enums as strings, logical types as text
// (dates and times in ISO form, or the number where the year is out of
// range; decimals exact; UUIDs); what nests deeper than walkAvro walks as
// JSON.
func schemaOfAvro(sch avro.Schema, depth int) snapshot.Schema {
	if depth > avroMaxDepth {
		return snapshot.Schema{Kind: snapshot.SchemaJSON}
	}
	switch s := sch.(type) {
	case *avro.NullSchema:
		return snapshot.Schema{Kind: snapshot.SchemaNull}
	case *avro.RefSchema:
		return schemaOfAvro(s.Schema(), depth+1)
	case *avro.RecordSchema:
		names := make([]string, len(s.Fields()))
		fields := make([]snapshot.Schema, len(s.Fields()))
		for i, f := range s.Fields() {
			names[i], fields[i] = f.Name(), schemaOfAvro(f.Type(), depth+1)
		}
		return typeser.Struct(names, fields)
	case *avro.UnionSchema:
		var names []string
		var branches []snapshot.Schema
		for _, t := range s.Types() {
			if t.Type() != avro.Null {
				names = append(names, avroBranchName(t))
				branches = append(branches, schemaOfAvro(t, depth+1))
			}
		}
		switch {
		case len(branches) == 0:
			return snapshot.Schema{Kind: snapshot.SchemaNull}
		case !avroTagged(s):
			return branches[0]
		}
		return typeser.Struct(names, branches)
	case *avro.EnumSchema:
		return snapshot.Schema{Kind: snapshot.SchemaString}
	case *avro.FixedSchema:
		if _, ok := s.Logical().(*avro.DecimalLogicalSchema); ok {
			return snapshot.Schema{Kind: snapshot.SchemaString}
		}
		return snapshot.Schema{Kind: snapshot.SchemaBytes}
	case *avro.ArraySchema:
		items := schemaOfAvro(s.Items(), depth+1)
		return snapshot.Schema{Kind: snapshot.SchemaList, Elem: &items, Partial: items.Partial}
	case *avro.MapSchema:
		key, values := snapshot.Schema{Kind: snapshot.SchemaString}, schemaOfAvro(s.Values(), depth+1)
		return snapshot.Schema{Kind: snapshot.SchemaMap, Key: &key, Elem: &values, Partial: values.Partial}
	case *avro.PrimitiveSchema:
		if s.Logical() != nil {
			return snapshot.Schema{Kind: snapshot.SchemaString}
		}
		if kind, ok := avroKinds[s.Type()]; ok {
			return snapshot.Schema{Kind: kind}
		}
	}
	return snapshot.Schema{Kind: snapshot.SchemaJSON}
}
