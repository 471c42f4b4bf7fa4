// Package tableruntime is the serializer family of the Table runtime
// (flink-table-runtime, and flink-table-common's DataView serializers):
// RowData as BinaryRowData with its logical types, the internal data
// structures' own serializers, the planner's others (external, StringData,
// sorted maps), the accumulators' collections and DataViews, and the
// operators' windows and keys (FLINK-FORMATS.md §9), as Flink 1.15 to 2.3
// write them.
package tableruntime
