package snapshot

import (
	"errors"
	"fmt"

	"github.com/stateutil/stateutil/storage"
)

// ErrCorrupt reports a snapshot whose bytes are damaged or inconsistent:
// bad magic, bad checksum, truncation, impossible lengths or references.
var ErrCorrupt = errors.New("corrupt snapshot")

// ErrUnsupportedVersion reports a snapshot in a format version or format
// stateutil does not read.
var ErrUnsupportedVersion = errors.New("unsupported version")

// ErrNotFound reports a snapshot, file, operator or state that does not
// exist. It is storage.ErrNotFound, so one errors.Is serves both (and
// fs.ErrNotExist matches it too).
var ErrNotFound = storage.ErrNotFound

// ErrTooLarge reports state that exceeds a configured cap.
var ErrTooLarge = errors.New("state too large")

// ErrUnknownFormat reports a format name no registered format has.
var ErrUnknownFormat = errors.New("unknown snapshot format")

// ErrBadValue reports a key or namespace, as a user wrote it, that is not
// a value of its type (or not UTF-8 text).
var ErrBadValue = errors.New("bad value")

// ErrReadOnly reports a format that stateutil reads but does not write.
var ErrReadOnly = errors.New("read-only format")

// CorruptError locates damage: the file and, when known, the byte offset.
type CorruptError struct {
	File   string
	Offset int64 // -1 when the damage has no single offset
	Reason string
}

func (e *CorruptError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("%q at offset %d: %s", e.File, e.Offset, e.Reason)
	}
	return fmt.Sprintf("%q: %s", e.File, e.Reason)
}

// Unwrap makes every CorruptError match ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Corrupt builds a CorruptError; pass offset -1 when there is none.
func Corrupt(file string, offset int64, format string, args ...any) error {
	return &CorruptError{File: file, Offset: offset, Reason: fmt.Sprintf(format, args...)}
}
