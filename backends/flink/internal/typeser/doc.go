// Package typeser reads Flink's serializer snapshots, the descriptions of
// each state's key, namespace and value serializers in a state file's
// header, and decodes, walks, hashes and encodes the values they describe
// (FLINK-FORMATS.md §6 and §9).
//
// It knows flink-core's own serializers: the boxed primitives, String,
// byte[], arrays, enums, tuples, POJOs, Row, Either, List, Map, Set,
// NullableSerializer, TTL wrappers (TtlSerializer, TtlAwareSerializer),
// timers and window namespaces. Every other module's serializers come as
// a Family, each in a package of its own below this one (kryo, avro,
// tableruntime, scala, connectors, cep, streaming, coretypes, javaserial);
// backends/flink assembles them into the Table a snapshot is read with. A
// Family names its serializers' kinds, parses its snapshot classes, and
// walks, sizes, encodes and hashes its values; adding one is a package and
// a row in that table, not a case in a switch here.
//
// Every serializer snapshot keeps the table it was read with, so its values
// walk by it wherever the snapshot is carried. A value no serializer here
// can walk is "not decoded" (snapshot.NotDecodedError), never damage.
package typeser
