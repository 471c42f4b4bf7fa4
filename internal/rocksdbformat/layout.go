package rocksdbformat

import (
	"encoding/binary"
	"fmt"

	"github.com/stateutil/stateutil/snapshot"
)

// MaxValueSize is the largest stored value (or merged list) accepted, in
// bytes: RocksDB's Java bridge, which Flink reads through, is byte[]-based.
// A variable so tests can lower it instead of allocating 2 GiB.
var MaxValueSize int64 = 1<<31 - 1

// ttlBytes is the last-access timestamp stored before a TTL'd value.
const ttlBytes = 8

// ListDelimiter joins list elements, as Flink's string-append merge does.
const ListDelimiter = ','

// PrefixWidth is the key-group prefix length for a max parallelism.
func PrefixWidth(maxParallelism int) int {
	if maxParallelism <= 128 {
		return 1
	}
	return 2
}

// widthOf is the fixed serialized width of a type, or -1 if variable.
// The void namespace is one 0x00 byte, like Flink's VoidNamespace.
func widthOf(t snapshot.Type) int {
	switch t.Name {
	case snapshot.TypeInt32:
		return 4
	case snapshot.TypeInt64:
		return 8
	case snapshot.TypeVoid:
		return 1
	}
	return -1
}

// Codec lays out one keyed state's keys and values.
type Codec struct {
	State  string
	Kind   snapshot.StateKind
	prefix int
	keyW   int
	nsW    int
	void   bool
	// hasTTL: values carry Flink's 8-byte last-access time. ttl is the
	// TTL, added to it to give an entry's expiry; 0 where the snapshot
	// does not record it (snapshot.TTL.Unknown: ExpiresAt is then the
	// last access itself).
	hasTTL bool
	ttl    int64
}

func newCodec(ks *snapshot.KeyedState, maxParallelism int) *Codec {
	c := &Codec{
		State:  ks.Name,
		Kind:   ks.Kind,
		prefix: PrefixWidth(maxParallelism),
		keyW:   widthOf(ks.KeyType),
		nsW:    widthOf(ks.NamespaceType),
		void:   ks.NamespaceType.Name == snapshot.TypeVoid,
	}
	if c.keyW == 1 { // a void key makes no sense; treat as bytes
		c.keyW = -1
	}
	if ks.TTL != nil {
		c.hasTTL, c.ttl = true, ks.TTL.TTLMillis
	}
	return c
}

// Codecs builds the codecs of an operator's keyed states.
func Codecs(op *snapshot.Operator) map[string]*Codec {
	m := make(map[string]*Codec, len(op.KeyedStates))
	for i := range op.KeyedStates {
		m[op.KeyedStates[i].Name] = newCodec(&op.KeyedStates[i], op.MaxParallelism)
	}
	return m
}

// KeyGroupPrefix is the key-group prefix of kg.
func (c *Codec) KeyGroupPrefix(kg int) []byte {
	if c.prefix == 1 {
		return []byte{byte(kg)}
	}
	return []byte{byte(kg >> 8), byte(kg)}
}

// KeyGroupOf is the key group whose prefix key k begins with (k holds
// at least the prefix).
func (c *Codec) KeyGroupOf(k []byte) int {
	if c.prefix == 1 {
		return int(k[0])
	}
	return int(binary.BigEndian.Uint16(k))
}

// UpperBound is the first key after key group kg, or nil past the last.
func (c *Codec) UpperBound(kg int) []byte {
	if kg+1 >= 1<<(8*c.prefix) {
		return nil
	}
	return c.KeyGroupPrefix(kg + 1)
}

func appendPart(dst, b []byte, width int, void bool) []byte {
	switch {
	case void:
		return append(dst, 0)
	case width < 0:
		dst = binary.AppendUvarint(dst, uint64(len(b)))
	}
	return append(dst, b...)
}

func (c *Codec) checkPart(what string, b []byte, width int) error {
	if c.void && what == "namespace" {
		if len(b) != 0 {
			return fmt.Errorf("rocksdb: state %q: void namespace has %d bytes", c.State, len(b))
		}
		return nil
	}
	if width >= 0 && len(b) != width {
		return fmt.Errorf("rocksdb: state %q: %s of %d bytes, its type is %d bytes wide", c.State, what, len(b), width)
	}
	return nil
}

// EncodeKey appends the RocksDB key of e to dst.
func (c *Codec) EncodeKey(dst []byte, e *snapshot.Entry) ([]byte, error) {
	if e.KeyGroup < 0 || e.KeyGroup >= 1<<(8*c.prefix) {
		return nil, fmt.Errorf("rocksdb: state %q: key group %d does not fit a %d-byte prefix", c.State, e.KeyGroup, c.prefix)
	}
	if err := c.checkPart("key", e.Key, c.keyW); err != nil {
		return nil, err
	}
	if err := c.checkPart("namespace", e.Namespace, c.nsW); err != nil {
		return nil, err
	}
	if c.Kind != snapshot.Map && len(e.UserKey) > 0 {
		return nil, fmt.Errorf("rocksdb: state %q is %s state, entry has a user key", c.State, c.Kind)
	}
	if !c.hasTTL && e.ExpiresAt != 0 {
		return nil, fmt.Errorf("rocksdb: state %q has no TTL, entry expires at %d", c.State, e.ExpiresAt)
	}
	dst = append(dst, c.KeyGroupPrefix(e.KeyGroup)...)
	dst = appendPart(dst, e.Key, c.keyW, false)
	dst = appendPart(dst, e.Namespace, c.nsW, c.void)
	switch c.Kind {
	case snapshot.Map:
		dst = append(dst, e.UserKey...)
	case snapshot.Timer:
		// A key has many timers: the timer itself is part of what
		// identifies the entry, as Flink's own layout has it.
		dst = append(dst, e.Value...)
	}
	return dst, nil
}

func (c *Codec) corrupt(key []byte, format string, args ...any) error {
	return fmt.Errorf("%w: rocksdb state %q key %x: %s", snapshot.ErrCorrupt, c.State, key, fmt.Sprintf(format, args...))
}

func takePart(b []byte, width int) (part, rest []byte, ok bool) {
	if width < 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, nil, false
		}
		b = b[k:]
		width = int(n)
	}
	if width > len(b) {
		return nil, nil, false
	}
	return b[:width], b[width:], true
}

// DecodeKey splits a RocksDB key into e's key group, key, namespace and
// user key (slices of k).
func (c *Codec) DecodeKey(k []byte, e *snapshot.Entry) error {
	if len(k) < c.prefix {
		return c.corrupt(k, "shorter than the key-group prefix")
	}
	e.State = c.State
	e.KeyGroup = c.KeyGroupOf(k)
	rest := k[c.prefix:]
	var ok bool
	if e.Key, rest, ok = takePart(rest, c.keyW); !ok {
		return c.corrupt(k, "truncated key")
	}
	if e.Namespace, rest, ok = takePart(rest, c.nsW); !ok {
		return c.corrupt(k, "truncated namespace")
	}
	if c.void {
		e.Namespace = nil
	}
	e.UserKey = nil
	switch {
	case c.Kind == snapshot.Map:
		e.UserKey = rest
	case c.Kind == snapshot.Timer:
		// The timer again, as the stored value holds it.
	case len(rest) > 0:
		return c.corrupt(k, "%d trailing bytes", len(rest))
	}
	return nil
}

// CheckSize refuses a stored value larger than MaxValueSize.
func (c *Codec) CheckSize(e *snapshot.Entry, n int64) error {
	if n > MaxValueSize {
		return fmt.Errorf("%w: rocksdb state %q key %x (key group %d): value of %d bytes exceeds the %d-byte limit of RocksDB's Java API",
			snapshot.ErrTooLarge, c.State, e.Key, e.KeyGroup, n, MaxValueSize)
	}
	return nil
}

func (c *Codec) appendTTL(dst []byte, e *snapshot.Entry) []byte {
	if !c.hasTTL {
		return dst
	}
	// Flink stores the last access; wrapping arithmetic inverts exactly.
	return binary.BigEndian.AppendUint64(dst, uint64(e.ExpiresAt-c.ttl))
}

// EncodeValue is the stored value of a value, reducing, aggregating or map
// entry: [8-byte last access if TTL] value.
func (c *Codec) EncodeValue(dst []byte, e *snapshot.Entry) ([]byte, error) {
	n := int64(len(e.Value))
	if c.hasTTL {
		n += ttlBytes
	}
	if err := c.CheckSize(e, n); err != nil {
		return nil, err
	}
	return append(c.appendTTL(dst, e), e.Value...), nil
}

// elementSize is the bytes e adds to a list value (delimiter included when
// the list is not empty).
func (c *Codec) elementSize(e *snapshot.Entry, listLen int) int64 {
	n := int64(len(e.Value)) + int64(uvarintLen(uint64(len(e.Value))))
	if c.hasTTL {
		n += ttlBytes
	}
	if listLen > 0 {
		n++
	}
	return n
}

// AppendElement appends e as one element to the list value whose listLen
// bytes end dst (all of dst, or the last record in a buffer): [',' unless
// the list is empty][8-byte last access if TTL][uvarint length][value].
// On error it returns dst as it was.
func (c *Codec) AppendElement(dst []byte, listLen int, e *snapshot.Entry) ([]byte, error) {
	if err := c.CheckSize(e, int64(listLen)+c.elementSize(e, listLen)); err != nil {
		return dst, err
	}
	if listLen > 0 {
		dst = append(dst, ListDelimiter)
	}
	dst = c.appendTTL(dst, e)
	dst = binary.AppendUvarint(dst, uint64(len(e.Value)))
	return append(dst, e.Value...), nil
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// TakeTTL sets e.ExpiresAt from the TTL timestamp that begins the stored
// value v of key k (0 when the state has no TTL) and returns the rest.
func (c *Codec) TakeTTL(k, v []byte, e *snapshot.Entry) ([]byte, error) {
	e.ExpiresAt = 0
	if !c.hasTTL {
		return v, nil
	}
	if len(v) < ttlBytes {
		return nil, c.corrupt(k, "value of %d bytes lacks the 8-byte TTL timestamp", len(v))
	}
	e.ExpiresAt = int64(binary.BigEndian.Uint64(v)) + c.ttl
	return v[ttlBytes:], nil
}

// DecodeValues calls fn for each entry the stored value v of key k holds:
// one for most kinds, one per element for list state. e carries the
// decoded key; its Value and ExpiresAt are set before each call.
func (c *Codec) DecodeValues(k, v []byte, e *snapshot.Entry, fn func(*snapshot.Entry) bool) (bool, error) {
	if c.Kind != snapshot.List {
		val, err := c.TakeTTL(k, v, e)
		if err != nil {
			return false, err
		}
		e.Value = val
		return fn(e), nil
	}
	for len(v) > 0 {
		rest, err := c.TakeTTL(k, v, e)
		if err != nil {
			return false, err
		}
		var ok bool
		if e.Value, v, ok = takePart(rest, -1); !ok {
			return false, c.corrupt(k, "truncated list element")
		}
		if !fn(e) {
			return false, nil
		}
		if len(v) > 0 {
			if v[0] != ListDelimiter {
				return false, c.corrupt(k, "list element not followed by ',' (found 0x%02x)", v[0])
			}
			if v = v[1:]; len(v) == 0 {
				return false, c.corrupt(k, "list ends with ','")
			}
		}
	}
	return true, nil
}
