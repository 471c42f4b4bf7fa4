package serve

import "github.com/stateutil/stateutil/snapshot"

// What computing a view takes at most, estimated from the snapshots'
// metadata before it starts, for the views' budget: the report's structs,
// its JSON and the encoder's buffer as it grows. A view that turns out
// bigger is kept at its size, and the requests after it wait for that.
const (
	viewBytes    = 256 << 10 // any view's frame: the snapshot's metadata, the report's head
	rowBytes     = 1 << 10   // a row of a plan (a new subtask) or of a key-group distribution
	diffKeyRow   = 4 << 10   // a key a diff lists, with its old and new values
	recordBytes  = 256 << 10 // a record get answers with, or a page's last
	pageRowBytes = 1 << 10   // a record of a page, encoded
	// decodedElements is the operator-state view's values: every element
	// decoded, as much as a snapshot's operator state usually holds.
	decodedElements = 8 << 20
)

func summaryBytes(m *snapshot.Snapshot) int64 {
	var subtasks int
	for _, op := range m.Operators {
		subtasks += op.Parallelism
	}
	return viewBytes + int64(subtasks)*rowBytes
}

func keyGroupsBytes(m *snapshot.Snapshot) int64 {
	var groups int
	for _, op := range m.Operators {
		groups += op.MaxParallelism
	}
	return viewBytes + int64(groups)*rowBytes
}

func operatorStateBytes(m *snapshot.Snapshot) int64 { return summaryBytes(m) + decodedElements }

// planBytes is a rescale plan's to parallelism p: a row per new subtask
// of every operator.
func planBytes(m *snapshot.Snapshot, p int) int64 {
	return summaryBytes(m) + int64(len(m.Operators))*int64(p)*rowBytes
}

// diffBytes is a diff's: up to diffMaxKeys keys of every operator.
func diffBytes(a, b *snapshot.Snapshot) int64 {
	return summaryBytes(a) + summaryBytes(b) + int64(len(a.Operators)+len(b.Operators))*diffMaxKeys*diffKeyRow
}

// pageBytes is a page of up to limit records of about pageRowBytes: a
// page grows by doubling, up to maxPageBytes and one record past it.
func pageBytes(limit int) int64 {
	return 2*min(int64(limit)*pageRowBytes, maxPageBytes) + recordBytes
}
