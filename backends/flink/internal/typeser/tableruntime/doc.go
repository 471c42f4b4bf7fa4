// Package tableruntime is the serializer family of the Table runtime
// (flink-table-runtime): RowData as BinaryRowData with its logical types,
// and the other serializers SQL operators keep state with (external,
// StringData, sorted maps) (FLINK-FORMATS.md §9).
package tableruntime
