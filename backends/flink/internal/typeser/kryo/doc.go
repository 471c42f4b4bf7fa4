// Package kryo is the serializer family of Flink's KryoSerializer, the
// fallback of generic types: Kryo 2.24 values in Flink 1.x, Kryo 5.6 in
// Flink 2.x (FLINK-FORMATS.md §9), with the JDK classes Kryo and Flink
// register and, in Kryo 2, chill's Scala classes.
package kryo
