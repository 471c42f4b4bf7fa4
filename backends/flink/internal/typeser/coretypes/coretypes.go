package coretypes

import (
	"strings"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/snapshot"
)

// Family is flink-core's serializers of BITMAP and VARIANT values.
var Family = &typeser.Family{
	Name: "coretypes",
	Kind: kindOf,
	Exprs: map[string]typeser.ExprLeaf{
		"bitmap":  {Class: "org.apache.flink.api.common.typeutils.base.BitmapSerializer$BitmapSerializerSnapshot"},
		"variant": {Class: "org.apache.flink.api.common.typeutils.base.VariantSerializer$VariantSerializerSnapshot"},
	},
	Expr:   typeExpr,
	Walk:   walk,
	Sized:  func(*typeser.SerializerSnapshot, int) bool { return true },
	Encode: encode,
	Schema: schema,
	Notes: map[string]string{
		kindBitmap: "a bitmap of more than 1,048,576 values is not decoded; a run container that ties with its array in size is written back as the array, which Flink reads as the same bitmap",
		kindVariant: "shown as Flink's Variant.toJson shows it, which keeps neither the types of its numbers, dates, timestamps and binary nor its keys' order, " +
			"so a value is written back only as its bytes ({\"@class\", \"@bytes\"})",
	},
}

// Kinds of the family's serializers.
const (
	kindBitmap  = "Bitmap"
	kindVariant = "Variant"
)

func kindOf(n string) string {
	switch {
	case strings.HasPrefix(n, "org.apache.flink.api.common.typeutils.base.BitmapSerializer"):
		return kindBitmap
	case strings.HasPrefix(n, "org.apache.flink.api.common.typeutils.base.VariantSerializer"):
		return kindVariant
	}
	return ""
}

func typeExpr(_ *typeser.SerializerSnapshot, kind string, _ func() string) (string, bool) {
	return strings.ToLower(kind), kind == kindBitmap || kind == kindVariant
}

func walk(r *wire.Reader, s *typeser.SerializerSnapshot, _ int, decode bool) (any, bool) {
	switch typeser.KindOf(s) {
	case kindBitmap:
		return readBitmap(r, s, decode), true
	case kindVariant:
		return readVariant(r, decode), true
	}
	return nil, false
}

func encode(b []byte, s *typeser.SerializerSnapshot, v any, _ int) ([]byte, bool, error) {
	if typeser.KindOf(s) == kindBitmap {
		b, err := appendBitmap(b, v)
		return b, true, err
	}
	return nil, false, nil
}

func schema(s *typeser.SerializerSnapshot, _ int) (snapshot.Schema, bool) {
	if typeser.KindOf(s) == kindBitmap {
		elem := snapshot.Schema{Kind: snapshot.SchemaInt32}
		return snapshot.Schema{Kind: snapshot.SchemaList, Elem: &elem}, true
	}
	return snapshot.Schema{}, false
}
