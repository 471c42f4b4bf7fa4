// Package sstcheck verifies a RocksDB block-based table (an SST file) in
// Go before RocksDB opens it: the footer, then every block the table
// reaches from it (meta index, properties and other meta blocks, the index
// and its partitions, every data block) against the checksum in the block's
// trailer. RocksDB builds with assertions on abort the process on some
// damaged blocks it reads without checking them first; a table that passes
// here holds the bytes its writer checksummed.
package sstcheck

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/cespare/xxhash/v2"
	"github.com/golang/snappy"
	"github.com/pierrec/lz4/v4"
	"github.com/zeebo/xxh3"

	"github.com/stateutil/stateutil/snapshot"
)

const (
	legacyMagic     = 0xdb4775248b80fb57
	magic           = 0x88e241b785f4cff7
	legacyFooterLen = 48
	footerLen       = 53
	trailerLen      = 5 // compression type, then the checksum
	maxHandleLen    = 20
	// maxFormatVersion is the newest footer this package reads; format 6
	// mixes each block's offset into its checksum.
	maxFormatVersion = 5
	// maxBlock bounds what one block may claim before it is read.
	maxBlock = 256 << 20
)

// Checksum types by their stored code.
const (
	noChecksum = 0
	crc32c     = 1
	xxHash     = 2
	xxHash64   = 3
	xxh3Hash   = 4
)

// Index types (table property rocksdb.block.based.table.index.type).
const (
	indexBinary          = 0
	indexHash            = 1
	indexTwoLevel        = 2
	indexBinaryFirstKeys = 3
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Verify checks the table of size bytes in r. file and base name it in
// errors: the snapshot's own file, and where the table starts in it.
// Damage is a snapshot.CorruptError; a table newer than this package reads
// wraps snapshot.ErrUnsupportedVersion.
func Verify(r io.ReaderAt, size int64, file string, base int64) error {
	t := &table{r: r, size: size, file: file, base: base}
	if err := t.footer(); err != nil {
		return err
	}
	meta, err := t.block(t.metaIndex, "meta index block")
	if err != nil {
		return err
	}
	metas, err := t.entries(meta, t.metaIndex)
	if err != nil {
		return err
	}
	props := map[string][]byte{}
	for _, e := range metas {
		h, _, err := t.decodeHandle(e.value, int64(t.metaIndex.offset), nil)
		if err != nil {
			return err
		}
		what := fmt.Sprintf("meta block %q", e.key)
		b, err := t.block(h, what)
		if err != nil {
			return err
		}
		if string(e.key) == "rocksdb.properties" {
			ps, err := t.entries(b, h)
			if err != nil {
				return err
			}
			for _, p := range ps {
				props[string(p.key)] = p.value
			}
		}
	}
	it := &indexKind{delta: prop(props, "rocksdb.index.value.is.delta.encoded") == 1}
	switch k := prop(props, "rocksdb.block.based.table.index.type"); k {
	case indexBinary, indexHash, indexTwoLevel:
	case indexBinaryFirstKeys:
		it.firstKeys = true
	default:
		return t.unsupported(fmt.Sprintf("index type %d", k))
	}
	return t.index(t.index0, it, prop(props, "rocksdb.block.based.table.index.type") == indexTwoLevel)
}

// prop reads a numeric table property (a varint), 0 when absent.
func prop(props map[string][]byte, name string) uint64 {
	v, n := binary.Uvarint(props[name])
	if n <= 0 {
		return 0
	}
	return v
}

type handle struct{ offset, size uint64 }

type table struct {
	r                 io.ReaderAt
	size              int64
	file              string
	base              int64
	checksum          byte
	version           uint32
	metaIndex, index0 handle
	// blocksEnd is where the footer starts: no block may reach past it.
	blocksEnd int64
}

func (t *table) corrupt(off int64, format string, args ...any) error {
	return &snapshot.CorruptError{File: t.file, Offset: t.base + off, Reason: "RocksDB table: " + fmt.Sprintf(format, args...)}
}

func (t *table) unsupported(what string) error {
	return fmt.Errorf("%q at offset %d: RocksDB table with %s, which stateutil does not check: %w", t.file, t.base, what, snapshot.ErrUnsupportedVersion)
}

func (t *table) read(off int64, n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := t.r.ReadAt(b, off); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		if errors.Is(err, io.EOF) {
			return nil, t.corrupt(off, "truncated: %d bytes wanted at offset %d of %d", n, off, t.size)
		}
		return nil, fmt.Errorf("%q: %w", t.file, err)
	}
	return b, nil
}

func (t *table) footer() error {
	if t.size < legacyFooterLen {
		return t.corrupt(0, "%d bytes, shorter than a table footer", t.size)
	}
	tail, err := t.read(t.size-8, 8)
	if err != nil {
		return err
	}
	var handles []byte
	switch m := binary.LittleEndian.Uint64(tail); m {
	case legacyMagic:
		t.checksum, t.blocksEnd = crc32c, t.size-legacyFooterLen
		if handles, err = t.read(t.blocksEnd, 2*maxHandleLen); err != nil {
			return err
		}
	case magic:
		if t.size < footerLen {
			return t.corrupt(0, "%d bytes, shorter than a table footer", t.size)
		}
		t.blocksEnd = t.size - footerLen
		f, err := t.read(t.blocksEnd, footerLen)
		if err != nil {
			return err
		}
		t.checksum, handles = f[0], f[1:1+2*maxHandleLen]
		t.version = binary.LittleEndian.Uint32(f[1+2*maxHandleLen:])
		switch {
		case t.version == 0 || t.version > 64:
			return t.corrupt(t.size-12, "footer format version %d", t.version)
		case t.version > maxFormatVersion:
			return t.unsupported(fmt.Sprintf("format version %d", t.version))
		}
		switch t.checksum {
		case crc32c, xxHash, xxHash64, xxh3Hash:
		case noChecksum:
			return t.corrupt(t.blocksEnd, "footer declares no block checksums, so its blocks cannot be verified")
		default:
			return t.corrupt(t.blocksEnd, "unknown checksum type %d", t.checksum)
		}
	default:
		return t.corrupt(t.size-8, "bad magic number %#016x", m)
	}
	at := t.blocksEnd
	if t.version > 0 {
		at++
	}
	var n int
	if t.metaIndex, n, err = t.decodeHandle(handles, at, nil); err != nil {
		return err
	}
	t.index0, _, err = t.decodeHandle(handles[n:], at+int64(n), nil)
	return err
}

// decodeHandle reads an offset and size (varints); after prev, a delta
// encoded handle: the size's signed difference, the offset implied.
func (t *table) decodeHandle(b []byte, at int64, prev *handle) (handle, int, error) {
	if prev != nil {
		d, n := binary.Varint(b)
		if n <= 0 {
			return handle{}, 0, t.corrupt(at, "bad delta-encoded block handle")
		}
		return handle{offset: prev.offset + prev.size + trailerLen, size: uint64(int64(prev.size) + d)}, n, nil
	}
	off, n := binary.Uvarint(b)
	if n <= 0 {
		return handle{}, 0, t.corrupt(at, "bad block handle offset")
	}
	size, m := binary.Uvarint(b[n:])
	if m <= 0 {
		return handle{}, 0, t.corrupt(at, "bad block handle size")
	}
	return handle{offset: off, size: size}, n + m, nil
}

// raw reads a block and checks the checksum in its trailer, which covers
// the contents and the compression type.
func (t *table) raw(h handle, what string) ([]byte, byte, error) {
	if h.size > maxBlock || h.offset > uint64(t.blocksEnd) || h.size+trailerLen > uint64(t.blocksEnd)-h.offset {
		return nil, 0, t.corrupt(int64(min(h.offset, uint64(t.blocksEnd))), "%s of %d bytes at offset %d does not fit before the footer at %d", what, h.size, h.offset, t.blocksEnd)
	}
	off := int64(h.offset)
	b, err := t.read(off, int(h.size)+trailerLen)
	if err != nil {
		return nil, 0, err
	}
	if got, want := t.sum(b[:h.size+1]), binary.LittleEndian.Uint32(b[h.size+1:]); got != want {
		return nil, 0, t.corrupt(off, "%s at offset %d: checksum %#08x, trailer says %#08x", what, off, got, want)
	}
	return b[:h.size], b[h.size], nil
}

// block is a checked block's contents, decompressed to be parsed.
func (t *table) block(h handle, what string) ([]byte, error) {
	b, kind, err := t.raw(h, what)
	if err != nil {
		return nil, err
	}
	return t.decompress(b, kind, int64(h.offset), what)
}

func (t *table) sum(data []byte) uint32 {
	switch t.checksum {
	case xxHash:
		return xxh32(data)
	case xxHash64:
		return uint32(xxhash.Sum64(data))
	case xxh3Hash:
		n := len(data) - 1
		return uint32(xxh3.Hash(data[:n])) ^ uint32(data[n])*0x6b9083d9
	}
	c := crc32.Checksum(data, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// decompress undoes a block's compression where its contents are parsed
// (meta and index blocks); data blocks are only checksummed.
func (t *table) decompress(b []byte, kind byte, off int64, what string) ([]byte, error) {
	switch kind {
	case 0:
		return b, nil
	case 1:
		out, err := snappy.Decode(nil, b)
		if err != nil {
			return nil, t.corrupt(off, "%s: Snappy: %v", what, err)
		}
		return out, nil
	case 2, 4, 5:
		if t.version < 2 {
			break
		}
		// From format version 2 on, the decompressed size comes first.
		n, m := binary.Uvarint(b)
		if m <= 0 || n > maxBlock {
			return nil, t.corrupt(off, "%s: bad decompressed size", what)
		}
		out := make([]byte, n)
		var err error
		var got int
		if kind == 2 {
			got, err = io.ReadFull(flate.NewReader(bytes.NewReader(b[m:])), out)
		} else {
			got, err = lz4.UncompressBlock(b[m:], out)
		}
		if err != nil || got != int(n) {
			return nil, t.corrupt(off, "%s: compression type %d: %d of %d bytes: %v", what, kind, got, n, err)
		}
		return out, nil
	}
	return nil, t.unsupported(fmt.Sprintf("%s compressed with compression type %d", what, kind))
}

type entry struct{ key, value []byte }

// entries splits a block into its entries (prefix-compressed keys, then
// restart points).
func (t *table) entries(b []byte, h handle) ([]entry, error) {
	at := int64(h.offset)
	if len(b) < 4 {
		return nil, t.corrupt(at, "block of %d bytes has no restart count", len(b))
	}
	restarts := int(binary.LittleEndian.Uint32(b[len(b)-4:]) &^ (1 << 31))
	if restarts < 1 || restarts > (len(b)-4)/4 {
		return nil, t.corrupt(at, "block of %d bytes says %d restart points", len(b), restarts)
	}
	end := len(b) - 4 - 4*restarts
	var out []entry
	var key []byte
	for p := 0; p < end; {
		shared, n1 := binary.Uvarint(b[p:end])
		nonShared, n2 := uvarintAfter(b[:end], p, n1)
		valueLen, n3 := uvarintAfter(b[:end], p, n1+n2)
		if n1 <= 0 || n2 <= 0 || n3 <= 0 {
			return nil, t.corrupt(at, "block entry at %d: bad lengths", p)
		}
		p += n1 + n2 + n3
		if shared > uint64(len(key)) || nonShared > uint64(end-p) || valueLen > uint64(end-p)-nonShared {
			return nil, t.corrupt(at, "block entry: lengths past the entries' end")
		}
		key = append(key[:shared:shared], b[p:p+int(nonShared)]...)
		p += int(nonShared)
		out = append(out, entry{key: key, value: b[p : p+int(valueLen)]})
		p += int(valueLen)
	}
	return out, nil
}

// uvarintAfter decodes a varint at b[p+skip:], reporting 0 bytes used
// when there is none.
func uvarintAfter(b []byte, p, skip int) (uint64, int) {
	if skip <= 0 || p+skip > len(b) {
		return 0, 0
	}
	return binary.Uvarint(b[p+skip:])
}

type indexKind struct{ delta, firstKeys bool }

// index checks every block an index block lists: data blocks, or for a
// two-level index its partitions, each an index of data blocks.
func (t *table) index(h handle, k *indexKind, twoLevel bool) error {
	b, err := t.block(h, "index block")
	if err != nil {
		return err
	}
	handles, err := t.indexHandles(b, h, k)
	if err != nil {
		return err
	}
	for _, c := range handles {
		if twoLevel {
			if err := t.index(c, k, false); err != nil {
				return err
			}
			continue
		}
		if _, _, err := t.raw(c, "data block"); err != nil {
			return err
		}
	}
	return nil
}

// indexHandles lists the handles of an index block's entries.
func (t *table) indexHandles(b []byte, h handle, k *indexKind) ([]handle, error) {
	if !k.delta {
		es, err := t.entries(b, h)
		if err != nil {
			return nil, err
		}
		out := make([]handle, 0, len(es))
		for _, e := range es {
			c, n, err := t.decodeHandle(e.value, int64(h.offset), nil)
			if err != nil {
				return nil, err
			}
			if k.firstKeys {
				if _, err := t.firstKey(e.value[n:], int64(h.offset)); err != nil {
					return nil, err
				}
			}
			out = append(out, c)
		}
		return out, nil
	}
	// Delta-encoded values carry no length: walk entry by entry.
	if len(b) < 4 {
		return nil, t.corrupt(int64(h.offset), "index block of %d bytes has no restart count", len(b))
	}
	restarts := int(binary.LittleEndian.Uint32(b[len(b)-4:]))
	if restarts < 1 || restarts > (len(b)-4)/4 {
		return nil, t.corrupt(int64(h.offset), "index block of %d bytes says %d restart points", len(b), restarts)
	}
	end := len(b) - 4 - 4*restarts
	var out []handle
	for p := 0; p < end; {
		shared, n1 := binary.Uvarint(b[p:end])
		nonShared, n2 := uvarintAfter(b[:end], p, n1)
		if n1 <= 0 || n2 <= 0 || nonShared > uint64(end-p-n1-n2) {
			return nil, t.corrupt(int64(h.offset), "index entry at %d: bad lengths", p)
		}
		p += n1 + n2 + int(nonShared)
		var prev *handle
		if shared != 0 && len(out) > 0 {
			prev = &out[len(out)-1]
		}
		c, n, err := t.decodeHandle(b[p:end], int64(h.offset), prev)
		if err != nil {
			return nil, err
		}
		p += n
		if k.firstKeys {
			m, err := t.firstKey(b[p:end], int64(h.offset))
			if err != nil {
				return nil, err
			}
			p += m
		}
		out = append(out, c)
	}
	return out, nil
}

// firstKey skips the length-prefixed first key of an index value.
func (t *table) firstKey(b []byte, at int64) (int, error) {
	n, m := binary.Uvarint(b)
	if m <= 0 || n > uint64(len(b)-m) {
		return 0, t.corrupt(at, "index entry: bad first key")
	}
	return m + int(n), nil
}
