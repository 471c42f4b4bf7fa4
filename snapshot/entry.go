package snapshot

import (
	"bytes"
	"iter"
)

// Entry is one keyed-state entry. A list state has one Entry per element,
// in list order; a map state one per user key. Byte slices may be reused by
// the iterator that yields them: copy what you keep (Entry.Clone).
type Entry struct {
	KeyGroup  int
	State     string
	Key       []byte
	Namespace []byte
	UserKey   []byte // map state only
	Value     []byte
	// ExpiresAt is the TTL expiry in Unix milliseconds; 0 means no TTL.
	ExpiresAt int64
}

// Size is the bytes of the entry's key, namespace, user key and value.
func (e *Entry) Size() int64 {
	return int64(len(e.Key) + len(e.Namespace) + len(e.UserKey) + len(e.Value))
}

// Clone returns a copy that owns its bytes.
func (e Entry) Clone() Entry {
	e.Key = bytes.Clone(e.Key)
	e.Namespace = bytes.Clone(e.Namespace)
	e.UserKey = bytes.Clone(e.UserKey)
	e.Value = bytes.Clone(e.Value)
	return e
}

// Equal reports whether two entries are identical.
func (e *Entry) Equal(o *Entry) bool {
	return e.KeyGroup == o.KeyGroup && e.State == o.State && e.ExpiresAt == o.ExpiresAt &&
		bytes.Equal(e.Key, o.Key) && bytes.Equal(e.Namespace, o.Namespace) &&
		bytes.Equal(e.UserKey, o.UserKey) && bytes.Equal(e.Value, o.Value)
}

// Element is one element of an operator list state.
type Element struct {
	State   string
	Subtask int
	Value   []byte
}

// Entries is a stream of keyed entries. A non-nil error ends the stream.
type Entries = iter.Seq2[Entry, error]

// Elements is a stream of operator-state elements. A non-nil error ends
// the stream.
type Elements = iter.Seq2[Element, error]

// FailedEntries is a stream that yields only err.
func FailedEntries(err error) Entries {
	return func(yield func(Entry, error) bool) { yield(Entry{}, err) }
}

// FailedElements is a stream that yields only err.
func FailedElements(err error) Elements {
	return func(yield func(Element, error) bool) { yield(Element{}, err) }
}
