// Package releases is what each Flink release line writes and reads, for
// --flink-version: the `_metadata` version, the operator state header
// version, and which serializer snapshots a savepoint may carry to it.
// Every figure is one real Flink showed: what the real-Flink harness's
// savepoints of 1.15.4 to 2.3.0 carry and restore
// (backends/flink/releases_test.go, cmd/flinkversion_test.go), and for
// 1.15 to 1.17 the savepoints Flink's own test resources hold too
// (../shared/fixtures/flink). The flink format writes by it: its
// checkWrite refuses, with a RestoreError, a savepoint whose serializer
// snapshots the line asked for would not restore (WhyNot).
package releases
