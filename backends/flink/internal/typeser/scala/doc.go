// Package scala is the serializer family of Flink 1.x's Scala API
// (flink-scala): Scala collections, Try, Unit and Enumeration values.
// Case classes, tuples, Option and Either are flink-core's walkers.
package scala
