package statefile

import (
	"fmt"
	"io"
	"slices"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/internal/arena"
)

// windowBytes is how much of a canonical key group is read at a time
// when it is read as a stream; a window grows only to hold one entry
// larger than that.
const windowBytes = 1 << 20

// canonicalParser splits canonical key-group data (a state id, then
// key/value pairs, the last of each state's flagged in its key's first
// byte and followed by the next state id or the end mark) into entries.
// It can stop where its bytes stop and go on with more.
type canonicalParser struct {
	hdr     *KeyedHeader
	state   string
	started bool // the first state id is read
	ended   bool // the end mark is read
	// keep gives the key whose first byte's flag is cleared: a copy, or
	// the bytes themselves where they may change.
	keep func([]byte) []byte
}

// parse calls fn with each whole entry of r's bytes and returns how many
// of them it took; reading stops at r's first failure (which may be only
// the end of what r holds), or when fn says stop.
func (p *canonicalParser) parse(r *wire.Reader, fn func(KeyedEntry) (bool, error)) (taken int, stop bool, err error) {
	for r.Err == nil && !p.ended {
		if !p.started {
			p.state = p.name(r, int(r.U16("state id")))
			if r.Err != nil {
				break
			}
			p.started = true
			taken = r.Off
		}
		k := r.Bytes32("key")
		v := r.Bytes32("value")
		if r.Err != nil {
			break
		}
		if len(k) == 0 {
			r.Fail("empty key")
			break
		}
		// Nothing changes before the entry is whole: an entry cut by the
		// end of r's bytes is parsed again from its start.
		next, ended := p.state, false
		if k[0]&0x80 != 0 {
			id := int(r.U16("state id"))
			if r.Err != nil {
				break
			}
			if id == EndOfKeyGroupMark {
				ended = true
			} else if next = p.name(r, id); r.Err != nil {
				break
			}
		}
		key := p.keep(k)
		key[0] &^= 0x80
		state := p.state
		p.state, p.ended = next, ended
		taken = r.Off
		cont, err := fn(KeyedEntry{State: state, Key: key, Value: v})
		if err != nil || !cont {
			return taken, true, err
		}
	}
	return taken, false, nil
}

func (p *canonicalParser) name(r *wire.Reader, id int) string {
	if id >= 0 && id < len(p.hdr.States) {
		return p.hdr.States[id].Name
	}
	r.Fail("state id %d, but the header has %d states", id, len(p.hdr.States))
	return ""
}

// canonicalEntries splits canonical key-group data into entries, b itself
// left as it is (it may be parsed again). When the data was decompressed,
// offsets in errors are in the decompressed data.
func canonicalEntries(b []byte, file string, base int64, hdr *KeyedHeader, compressed bool) ([]KeyedEntry, error) {
	var keys arena.Arena
	r := canonicalReader(b, file, base, compressed)
	p := canonicalParser{hdr: hdr, keep: keys.Keep}
	var out []KeyedEntry
	p.parse(r, func(e KeyedEntry) (bool, error) {
		out = append(out, e)
		return true, nil
	})
	return out, canonicalEnd(r, &p)
}

// canonicalReader reads canonical data b: offsets in errors are in the
// file, or, for decompressed data, in the data itself, whose file says
// where its compressed form starts.
func canonicalReader(b []byte, file string, base int64, compressed bool) *wire.Reader {
	if compressed {
		return wire.NewReader(b, fmt.Sprintf("%s (decompressed key group at offset %d)", file, base), 0)
	}
	return wire.NewReader(b, file, base)
}

// canonicalEnd is the error of canonical data that r held whole.
func canonicalEnd(r *wire.Reader, p *canonicalParser) error {
	if r.Err == nil && r.Remaining() > 0 {
		r.Fail("%d bytes after the end-of-key-group mark", r.Remaining())
	}
	return r.Err
}

// canonicalEach calls fn with the entries of canonical key-group data
// read from src as they are read, holding a window of it rather than all
// of it; an entry's bytes are valid until fn returns. compressed data is
// at most maxDecompressed bytes. win is the window's memory, returned for
// reuse.
func canonicalEach(src io.Reader, file string, base int64, hdr *KeyedHeader, compressed bool, win []byte, fn func(KeyedEntry) (bool, error)) ([]byte, error) {
	p := canonicalParser{hdr: hdr, keep: func(k []byte) []byte { return k }}
	buf := win[:0]
	var at int64 // the offset in the data of buf[0]
	eof := false
	for {
		if !eof {
			// A window's worth past what is held; twice what is held when
			// that holds no whole entry.
			buf = slices.Grow(buf, max(windowBytes, 2*len(buf))-len(buf))
			n, err := io.ReadFull(src, buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			switch {
			case err == io.EOF || err == io.ErrUnexpectedEOF:
				eof = true
			case err != nil && compressed:
				return buf, &wire.CorruptError{File: file, Offset: base, Reason: "snappy framed stream: " + err.Error()}
			case err != nil:
				return buf, fmt.Errorf("%s: key group at offset %d: %w", file, base, err)
			}
			if compressed && at+int64(len(buf)) > maxDecompressed {
				return buf, &wire.CorruptError{File: file, Offset: base, Reason: "snappy key group decompresses to more than 1 GiB"}
			}
		}
		r := canonicalReader(buf, file, base, compressed)
		r.Base += at
		taken, stop, err := p.parse(r, fn)
		switch {
		case stop || err != nil:
			return buf, err
		case p.ended && !eof && r.Remaining() == 0:
			// Whatever follows the end mark is still to be read.
			n, err := io.Copy(io.Discard, src)
			if err == nil && n > 0 {
				r.Fail("%d bytes after the end-of-key-group mark", n)
			}
			return buf, r.Err
		case eof || p.ended:
			return buf, canonicalEnd(r, &p)
		}
		n := copy(buf, buf[taken:])
		buf, at = buf[:n], at+int64(taken)
	}
}
