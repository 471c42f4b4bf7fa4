package snapshot

import "github.com/stateutil/stateutil/storage"

// Description is what a snapshot's metadata says, read without a byte of
// its state: for listing many snapshots at once (stateutil ls).
type Description struct {
	// Snapshot is the metadata-level model. A format that names state
	// descriptors only inside its state files (Flink) leaves them out, and
	// its figures unknown.
	Snapshot *Snapshot
	// Metadata is the file the description was read from, a path in the
	// storage Describe was given: a _metadata file, or the snapshot itself
	// for a one-file format.
	Metadata string
	// Files are the other files the metadata references, each once.
	Files []DescribedFile
}

// DescribedFile is one file a snapshot's metadata references, located
// without being opened.
type DescribedFile struct {
	// Ref is the reference as the metadata records it.
	Ref string
	// Storage and Path say where the file is. Storage is nil when the
	// reference cannot be located (a storage no registry knows, an
	// absolute path of another machine); Err says why.
	Storage storage.Storage
	Path    string
	Err     error
	// Unmapped marks an absolute path recorded where the snapshot was
	// written, which no path mapping rewrote: when it is missing, the
	// snapshot was most likely moved.
	Unmapped bool
	// MinSize is the least the file holds, by the metadata: its recorded
	// size, or the size of the part of it a handle reads; 0 when the
	// metadata records none.
	MinSize int64
}
