// Package avro is the serializer family of flink-avro's AvroSerializer:
// values walked by the writer schema the serializer snapshot holds, in
// Flink's own DataOutputEncoder encoding, not Avro binary
// (FLINK-FORMATS.md §9).
package avro
