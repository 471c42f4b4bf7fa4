package wire

import (
	"fmt"

	"github.com/stateutil/stateutil/snapshot"
)

// ErrCorrupt is matched (errors.Is) by every error caused by bytes that do not
// follow the format: bad magic, truncation, impossible lengths or counts. It
// is snapshot.ErrCorrupt, so commands map it to the "corrupt" exit code.
var ErrCorrupt = snapshot.ErrCorrupt

// ErrUnsupportedVersion is matched by errors about a well-formed file whose
// format version this package does not read. It is
// snapshot.ErrUnsupportedVersion.
var ErrUnsupportedVersion = snapshot.ErrUnsupportedVersion

// CorruptError says where a file stopped making sense: it is
// snapshot.CorruptError, the one type every format reports damage with.
type CorruptError = snapshot.CorruptError

// UnknownVersion is the error for a format version this package does not
// read, at offset in file: unsupported when a later (or earlier) Flink
// could have written it, damage when no Flink could.
func UnknownVersion(file string, offset int64, what string, version int) error {
	if version < 1 || version > maxPlausibleVersion {
		return &CorruptError{File: file, Offset: offset, Reason: fmt.Sprintf("%s version %d is no version Flink could write", what, version)}
	}
	return &VersionError{File: file, What: what, Version: version}
}

// maxPlausibleVersion bounds the format versions a later Flink may write
// (_metadata has used 1 to 6 in ten years): a version past it is damage.
const maxPlausibleVersion = 64

// VersionError reports a format version this package cannot read.
type VersionError struct {
	File    string
	What    string // e.g. "_metadata", "keyed backend header"
	Version int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%q: unsupported %s version %d", e.File, e.What, e.Version)
}

// Unwrap lets errors.Is(err, ErrUnsupportedVersion) succeed.
func (e *VersionError) Unwrap() error { return ErrUnsupportedVersion }
