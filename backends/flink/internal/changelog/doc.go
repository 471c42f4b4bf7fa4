// Package changelog applies the changes of Flink's changelog state backend
// (FLINK-FORMATS.md §5, handle types 8 to 10, 13 and 14) to the entries of
// their materialized base: SET, ADD, MERGE_NS, the element and timer
// operations and the METADATA changes that introduce states.
package changelog
