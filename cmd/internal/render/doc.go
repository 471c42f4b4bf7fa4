// Package render holds how stateutil's commands print their results for
// people: ASCII tables, byte counts, the layouts of inspect, ls, diff, get,
// verify, run, rescale, shard, upgrade and surgery, and the table, CSV and
// JSON writers of SQL results. It also writes the JSON documents scripts
// read. Commands decide what to print; render decides how it looks.
package render
