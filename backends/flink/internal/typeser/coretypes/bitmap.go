package coretypes

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// Flink's BitmapSerializer writes a bitmap as an int length, then the
// RoaringBitmap's portable serialization, taken after runOptimize. Unlike
// Flink's own ints, it is little-endian:
//
//   - a cookie: the uint32 12346 and the uint32 count of containers, or,
//     where some container is a run container, the uint16 12347 and the
//     uint16 count minus one, then a bitset of which containers are runs;
//   - per container, ascending: its uint16 key (its values' high 16 bits)
//     and its uint16 cardinality minus one;
//   - per container a uint32 offset of its data, from the start of the
//     cookie (left out with the 12347 cookie below 4 containers);
//   - per container its data: a run container, a uint16 count of runs,
//     then each run's uint16 start and uint16 length minus one; else, of
//     at most 4096 values, each value's uint16 low bits; else 1024 uint64
//     words, bit i of word j standing for the low bits 64j+i.
//
// A value shows as the JSON array of the bitmap's values as Flink's
// Bitmap.toArray gives them: Java ints, in the unsigned order of their
// bits. runOptimize keeps a container as it is, unless a run container
// is smaller than the array (at most 4096 values) or bitmap it is, so that
// is how one is written; a run container that ties with its array, which
// Flink keeps where it had one (a bitmap built from a range), is written
// back as the array, which Flink reads as the same bitmap.

const (
	cookieNoRuns    = 12346
	cookieRuns      = 12347
	arrayMax        = 4096 // the most values of an array container
	bitmapBytes     = 8192
	noOffsetsBelow  = 4 // containers, where the runs cookie leaves out the offsets
	maxBitmapValues = 1 << 20
)

// bitmapReader reads the little-endian portable form at b, reporting
// damage through r at file offset base.
type bitmapReader struct {
	r    *wire.Reader
	b    []byte
	off  int
	base int64
	// offsets are the containers' offsets, where the bitmap records them.
	offsets []uint32
}

func (br *bitmapReader) fail(at int, format string, args ...any) {
	br.r.FailAt(br.base+int64(at), "bitmap: "+format, args...)
}

func (br *bitmapReader) take(n int, what string) []byte {
	if br.r.Err != nil {
		return nil
	}
	if n > len(br.b)-br.off {
		br.fail(br.off, "truncated %s: need %d bytes, %d left", what, n, len(br.b)-br.off)
		return nil
	}
	out := br.b[br.off : br.off+n]
	br.off += n
	return out
}

func (br *bitmapReader) u16(what string) int {
	if b := br.take(2, what); b != nil {
		return int(binary.LittleEndian.Uint16(b))
	}
	return 0
}

func (br *bitmapReader) u32(what string) uint32 {
	if b := br.take(4, what); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

// container is one container's key, cardinality and whether it is a run
// container.
type container struct {
	key, card int
	run       bool
}

// readBitmap reads one bitmap; decoded, its values (nil for one of more
// than maxBitmapValues, which is not decoded).
func readBitmap(r *wire.Reader, s *typeser.SerializerSnapshot, decode bool) any {
	base := r.Pos() + 4
	payload := r.Bytes32("bitmap")
	if r.Err != nil {
		return nil
	}
	br := &bitmapReader{r: r, b: payload, base: base}
	cs := br.header()
	total := 0
	for _, c := range cs {
		total += c.card
	}
	if decode && r.Err == nil && total > maxBitmapValues {
		typeser.NotDecoded(r, s)
		return nil
	}
	var values []any
	if decode {
		values = make([]any, 0, total)
	}
	for i, c := range cs {
		if br.offsets != nil && r.Err == nil && int(br.offsets[i]) != br.off {
			br.fail(br.off, "container %d is at %d, its offset says %d", i, br.off, br.offsets[i])
		}
		values = br.container(c, values)
	}
	if r.Err == nil && br.off != len(payload) {
		br.fail(br.off, "%d bytes after the last container", len(payload)-br.off)
	}
	if !decode || r.Err != nil {
		return nil
	}
	return values
}

// header reads the cookie, the containers' keys and cardinalities, and
// their offsets.
func (br *bitmapReader) header() []container {
	at := br.off
	cookie := br.u32("cookie")
	var n int
	var runs []byte
	switch {
	case br.r.Err != nil:
		return nil
	case cookie == cookieNoRuns:
		n = int(br.u32("container count"))
	case cookie&0xFFFF == cookieRuns:
		n = int(cookie>>16) + 1
		runs = br.take((n+7)/8, "run container bitset")
	default:
		br.fail(at, "cookie %d is neither %d nor %d", cookie&0xFFFF, cookieNoRuns, cookieRuns)
		return nil
	}
	if br.r.Err == nil && (n > 1<<16 || n*4 > len(br.b)-br.off) {
		br.fail(at, "%d containers in %d bytes", n, len(br.b)-br.off)
		return nil
	}
	cs := make([]container, 0, n)
	for i := 0; i < n && br.r.Err == nil; i++ {
		kat := br.off
		c := container{key: br.u16("container key"), card: br.u16("container cardinality") + 1}
		c.run = runs != nil && runs[i/8]&(1<<(i%8)) != 0
		if i > 0 && c.key <= cs[i-1].key && br.r.Err == nil {
			br.fail(kat, "container key %d after %d", c.key, cs[i-1].key)
		}
		cs = append(cs, c)
	}
	if runs == nil || n >= noOffsetsBelow {
		br.offsets = make([]uint32, 0, n)
		for i := 0; i < n && br.r.Err == nil; i++ {
			br.offsets = append(br.offsets, br.u32("container offset"))
		}
	}
	return cs
}

// container reads one container's data, appending its values where
// values is not nil.
func (br *bitmapReader) container(c container, values []any) []any {
	high := uint32(c.key) << 16
	add := func(low int) {
		if values != nil {
			values = append(values, int64(int32(high|uint32(low))))
		}
	}
	at := br.off
	switch {
	case c.run:
		n := br.u16("run count")
		data := br.take(4*n, "runs")
		card, next := 0, 0
		for i := 0; i < n && br.r.Err == nil; i++ {
			start, length := int(binary.LittleEndian.Uint16(data[4*i:])), int(binary.LittleEndian.Uint16(data[4*i+2:]))+1
			if start < next || start+length > 1<<16 {
				br.fail(at, "run %d of container %d, from %d for %d, overlaps the one before or passes 65536", i, c.key, start, length)
				return values
			}
			for v := start; v < start+length && values != nil; v++ {
				add(v)
			}
			card, next = card+length, start+length
		}
		if br.r.Err == nil && card != c.card {
			br.fail(at, "container %d's runs hold %d values, its header says %d", c.key, card, c.card)
		}
	case c.card <= arrayMax:
		data := br.take(2*c.card, "array container")
		prev := -1
		for i := 0; i < c.card && br.r.Err == nil; i++ {
			v := int(binary.LittleEndian.Uint16(data[2*i:]))
			if v <= prev {
				br.fail(at+2*i, "array container %d: value %d after %d", c.key, v, prev)
				return values
			}
			add(v)
			prev = v
		}
	default:
		data := br.take(bitmapBytes, "bitmap container")
		card := 0
		for j := 0; j < bitmapBytes/8 && br.r.Err == nil; j++ {
			w := binary.LittleEndian.Uint64(data[8*j:])
			card += bits.OnesCount64(w)
			for ; w != 0 && values != nil; w &= w - 1 {
				add(64*j + bits.TrailingZeros64(w))
			}
		}
		if br.r.Err == nil && card != c.card {
			br.fail(at, "bitmap container %d holds %d values, its header says %d", c.key, card, c.card)
		}
	}
	return values
}

// appendBitmap writes the values given as Flink writes the bitmap that
// holds them.
func appendBitmap(b []byte, v any) ([]byte, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a JSON array of ints, not %v", v)
	}
	values := make([]uint32, 0, len(list))
	for i, x := range list {
		n, err := typeser.Integer(x, 32)
		if err != nil {
			return nil, fmt.Errorf("bitmap value %d: %w", i, err)
		}
		values = append(values, uint32(int32(n)))
	}
	slices.Sort(values)
	values = slices.Compact(values)
	type built struct {
		key, card int
		run       bool
		data      []byte
	}
	var cs []built
	anyRun := false
	for len(values) > 0 {
		key := values[0] >> 16
		n := 1
		for n < len(values) && values[n]>>16 == key {
			n++
		}
		lows := values[:n]
		values = values[n:]
		var runs [][2]int
		for i, x := range lows {
			if i > 0 && x == lows[i-1]+1 {
				runs[len(runs)-1][1]++
				continue
			}
			runs = append(runs, [2]int{int(x & 0xFFFF), 1})
		}
		c := built{key: int(key), card: n}
		natural := bitmapBytes
		if n <= arrayMax {
			natural = 2 * n
		}
		switch {
		case 2+4*len(runs) < natural:
			c.run, anyRun = true, true
			c.data = binary.LittleEndian.AppendUint16(nil, uint16(len(runs)))
			for _, r := range runs {
				c.data = binary.LittleEndian.AppendUint16(c.data, uint16(r[0]))
				c.data = binary.LittleEndian.AppendUint16(c.data, uint16(r[1]-1))
			}
		case n <= arrayMax:
			for _, x := range lows {
				c.data = binary.LittleEndian.AppendUint16(c.data, uint16(x))
			}
		default:
			words := make([]uint64, bitmapBytes/8)
			for _, x := range lows {
				words[x&0xFFFF/64] |= 1 << (x % 64)
			}
			for _, w := range words {
				c.data = binary.LittleEndian.AppendUint64(c.data, w)
			}
		}
		cs = append(cs, c)
	}
	var p []byte
	if anyRun {
		p = binary.LittleEndian.AppendUint16(p, cookieRuns)
		p = binary.LittleEndian.AppendUint16(p, uint16(len(cs)-1))
		set := make([]byte, (len(cs)+7)/8)
		for i, c := range cs {
			if c.run {
				set[i/8] |= 1 << (i % 8)
			}
		}
		p = append(p, set...)
	} else {
		p = binary.LittleEndian.AppendUint32(p, cookieNoRuns)
		p = binary.LittleEndian.AppendUint32(p, uint32(len(cs)))
	}
	for _, c := range cs {
		p = binary.LittleEndian.AppendUint16(p, uint16(c.key))
		p = binary.LittleEndian.AppendUint16(p, uint16(c.card-1))
	}
	if !anyRun || len(cs) >= noOffsetsBelow {
		off := len(p) + 4*len(cs)
		for _, c := range cs {
			p = binary.LittleEndian.AppendUint32(p, uint32(off))
			off += len(c.data)
		}
	}
	for _, c := range cs {
		p = append(p, c.data...)
	}
	return typeser.AppendBytes32(b, p), nil
}
