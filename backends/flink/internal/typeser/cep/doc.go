// Package cep is the serializer family of flink-cep: the NFA state of a
// CEP operator (and of SQL's MATCH_RECOGNIZE), its shared buffer's event
// and node ids, Dewey numbers, edges, nodes and lock counts.
package cep
