// Package coretypes is the serializer family of flink-core's serializers
// of the SQL data types Flink 2.x added: BITMAP (BitmapSerializer, Flink
// 2.3: a RoaringBitmap in its portable serialization) and VARIANT
// (VariantSerializer, Flink 2.1: a binary variant's value and metadata,
// decoded only).
package coretypes
