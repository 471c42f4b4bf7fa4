// Package connectors decodes the operator state that Flink's connectors
// keep as byte[] elements no serializer snapshot describes: the file and
// Kafka sources' splits, sink writers' states and committables, chosen by
// the state's name and accepted only where one layout parses an element
// whole and writes it back byte for byte.
package connectors
