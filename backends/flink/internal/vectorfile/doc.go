// Package vectorfile reads the byte vectors real Flink writes for the codec
// tests: one JSON-lines file per Flink version, DIR/<version>.jsonl, each
// line one serializer with its snapshot and values as hex.
//
// Its readers are for tests: they fail the test on what they cannot read.
package vectorfile
