package coretypes

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/internal/nonfinite"
)

// Flink's VariantSerializer writes a variant as the int length of its
// value, the int length of its metadata, then the value's bytes and the
// metadata's: the binary variant encoding (little-endian).
//
//   - The metadata: a header byte (version 1 in its low 4 bits, whether
//     the keys are sorted in bit 4, the size of its offsets minus one in
//     bits 6-7), the count of keys, count+1 offsets into the bytes that
//     follow, and the keys' UTF-8 there.
//   - A value: a header byte, whose low 2 bits are its basic type and the
//     other 6 its type info. A primitive (0): the type info is its type,
//     0 null, 1 true, 2 false, 3-6 an int of 1, 2, 4 or 8 bytes, 7 a
//     double, 8-10 a decimal of 4, 8 or 16 bytes after a scale byte, 11 a
//     date (days, 4 bytes), 12 a timestamp with local time zone and 13 one
//     without (microseconds, 8 bytes), 14 a float, 15 binary and 16 a
//     string (a 4-byte length, then the bytes). A short string (1): the
//     type info is its length, the UTF-8 follows. An object (2): the type
//     info holds the size of its offsets minus one (bits 0-1), of its key
//     ids minus one (bits 2-3) and whether its count takes 4 bytes, not 1
//     (bit 4); then the count, the key ids, count+1 offsets and the
//     fields' values. An array (3): the size of its offsets minus one
//     (bits 0-1), whether its count takes 4 bytes (bit 2), then the count,
//     count+1 offsets and the elements.
//
// A value shows as Flink's Variant.toJson shows it: ints, doubles, floats
// and decimals as JSON numbers, dates and timestamps as ISO text (a
// timestamp with local time zone at +00:00), binary as base64. That JSON
// does not keep which of these a value was, so it is not written back.

const (
	variantSizeLimit = 16 << 20 // Flink's SIZE_LIMIT
	variantMaxDepth  = 64
)

// readVariant reads one variant, decoded as its JSON where decode is set.
func readVariant(r *wire.Reader, decode bool) any {
	at := r.Pos()
	vn := r.Count32(1, "variant value length")
	mn := r.Count32(1, "variant metadata length")
	if r.Err == nil && vn+mn > r.Remaining() {
		r.FailAt(at, "variant of %d and %d bytes, %d left", vn, mn, r.Remaining())
	}
	if r.Err == nil && (vn > variantSizeLimit || mn > variantSizeLimit) {
		r.FailAt(at, "variant of %d and %d bytes, past Flink's limit of %d", vn, mn, variantSizeLimit)
	}
	vbase := r.Pos()
	value := r.Take(vn, "variant value")
	mbase := r.Pos()
	meta := r.Take(mn, "variant metadata")
	if r.Err != nil {
		return nil
	}
	vr := &variantReader{r: r, value: value, vbase: vbase}
	vr.keys = vr.metadata(meta, mbase)
	v, end := vr.read(0, 0, decode)
	if r.Err == nil && end != len(value) {
		vr.fail(end, "%d bytes after the variant's value", len(value)-end)
	}
	if !decode || r.Err != nil {
		return nil
	}
	return v
}

type variantReader struct {
	r     *wire.Reader
	value []byte
	vbase int64
	keys  []string
	// values counts the values read: no more than the value's bytes, so
	// that offsets sharing a value cannot make its JSON grow past them.
	values int
}

func (vr *variantReader) fail(at int, format string, args ...any) {
	vr.r.FailAt(vr.vbase+int64(at), "variant: "+format, args...)
}

// uint reads an unsigned little-endian int of n bytes at b[at:], or fails
// naming what at file offset base+at.
func uintAt(r *wire.Reader, b []byte, at, n int, base int64, what string) int {
	if r.Err != nil {
		return 0
	}
	if at < 0 || n > len(b)-at {
		r.FailAt(base+int64(max(at, 0)), "variant: truncated %s: need %d bytes, %d left", what, n, len(b)-at)
		return 0
	}
	v := 0
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | int(b[at+i])
	}
	return v
}

// metadata reads the keys of the metadata at file offset base.
func (vr *variantReader) metadata(m []byte, base int64) []string {
	r := vr.r
	if len(m) == 0 {
		r.FailAt(base, "variant: metadata without its header")
		return nil
	}
	if m[0]&0x0F != 1 {
		r.FailAt(base, "variant: metadata version %d, Flink writes 1", m[0]&0x0F)
		return nil
	}
	size := int(m[0]>>6) + 1
	n := uintAt(r, m, 1, size, base, "metadata key count")
	if r.Err == nil && n > (len(m)-1-size)/size {
		r.FailAt(base+1, "variant: %d keys in %d bytes of metadata", n, len(m))
		return nil
	}
	offsets := 1 + size
	start := offsets + (n+1)*size
	keys := make([]string, 0, n)
	prev := 0
	for i := 0; i <= n && r.Err == nil; i++ {
		o := uintAt(r, m, offsets+i*size, size, base, "metadata offset")
		if r.Err == nil && (o < prev || start+o > len(m)) {
			r.FailAt(base+int64(offsets+i*size), "variant: metadata offset %d outside its %d bytes of keys", o, len(m)-start)
			return nil
		}
		if i > 0 {
			key := m[start+prev : start+o]
			if !utf8.Valid(key) {
				r.FailAt(base+int64(start+prev), "variant: metadata key %d is not UTF-8", i-1)
				return nil
			}
			keys = append(keys, string(key))
		}
		prev = o
	}
	return keys
}

// read reads the value at pos, nested depth deep, and returns it
// (decoded) and where it ends.
func (vr *variantReader) read(pos, depth int, decode bool) (any, int) {
	r, b := vr.r, vr.value
	if depth > variantMaxDepth {
		vr.fail(pos, "nested deeper than %d", variantMaxDepth)
		return nil, pos
	}
	h := uintAt(r, b, pos, 1, vr.vbase, "value header")
	if vr.values++; r.Err == nil && vr.values > len(b) {
		vr.fail(pos, "more values than its %d bytes: its offsets share values", len(b))
	}
	if r.Err != nil {
		return nil, pos
	}
	info := h >> 2
	switch h & 3 {
	case 1: // a short string
		return vr.text(pos+1, info)
	case 2:
		return vr.object(pos, info, depth, decode)
	case 3:
		return vr.array(pos, info, depth, decode)
	}
	p := pos + 1
	fixed := func(n int) int { return uintAt(r, b, p, n, vr.vbase, "variant primitive") }
	switch info {
	case 0:
		return nil, p
	case 1, 2:
		return info == 1, p
	case 3, 4, 5, 6:
		n := 1 << (info - 3)
		u := fixed(n)
		shift := 64 - 8*n
		return int64(uint64(u)<<shift) >> shift, p + n
	case 7:
		return json64(math.Float64frombits(uint64(fixed(8)))), p + 8
	case 14:
		return json32(math.Float32frombits(uint32(fixed(4)))), p + 4
	case 8, 9, 10:
		n := 4 << (info - 8)
		scale := fixed(1)
		if r.Err == nil && scale > 38 {
			vr.fail(p, "decimal scale %d, past 38", scale)
		}
		return vr.decimal(p+1, n, scale), p + 1 + n
	case 11:
		return isoDate(int64(int32(uint32(fixed(4))))), p + 4
	case 12, 13:
		t := time.UnixMicro(int64(uint64(fixed(8)))).UTC()
		text := isoDateOf(t) + "T" + isoTime(t)
		if info == 12 {
			text += "+00:00"
		}
		return text, p + 8
	case 15:
		n := fixed(4)
		raw, end := vr.bytes(p+4, n, "binary")
		return base64.StdEncoding.EncodeToString(raw), end
	case 16:
		return vr.text(p+4, fixed(4))
	}
	vr.fail(pos, "primitive type %d is none of Flink's (0 to 16)", info)
	return nil, pos
}

func (vr *variantReader) bytes(at, n int, what string) ([]byte, int) {
	if vr.r.Err != nil {
		return nil, at
	}
	if n > len(vr.value)-at {
		vr.fail(at, "truncated %s: need %d bytes, %d left", what, n, len(vr.value)-at)
		return nil, at
	}
	return vr.value[at : at+n], at + n
}

func (vr *variantReader) text(at, n int) (any, int) {
	b, end := vr.bytes(at, n, "string")
	if vr.r.Err == nil && !utf8.Valid(b) {
		vr.fail(at, "string is not UTF-8")
	}
	return string(b), end
}

// decimal is the decimal of the n-byte little-endian unscaled value at
// at, as BigDecimal.toPlainString shows it.
func (vr *variantReader) decimal(at, n, scale int) any {
	b, _ := vr.bytes(at, n, "decimal")
	if vr.r.Err != nil {
		return nil
	}
	be := make([]byte, n)
	for i := range b {
		be[n-1-i] = b[i]
	}
	u := new(big.Int).SetBytes(be)
	if be[0]&0x80 != 0 {
		u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	digits := u.String()
	sign := ""
	if strings.HasPrefix(digits, "-") {
		sign, digits = "-", digits[1:]
	}
	if scale > 0 {
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	return jsonNumber(sign + digits)
}

// object reads an object's fields by their keys.
func (vr *variantReader) object(pos, info, depth int, decode bool) (any, int) {
	r, b := vr.r, vr.value
	offSize, idSize := info&3+1, info>>2&3+1
	countSize := 1
	if info>>4&1 == 1 {
		countSize = 4
	}
	n := uintAt(r, b, pos+1, countSize, vr.vbase, "object field count")
	ids := pos + 1 + countSize
	offsets := ids + n*idSize
	data := offsets + (n+1)*offSize
	if r.Err == nil && (n > len(b) || data > len(b)) {
		vr.fail(pos, "object of %d fields in %d bytes", n, len(b)-pos)
		return nil, pos
	}
	var out map[string]any
	if decode {
		out = make(map[string]any, n)
	}
	for i := 0; i < n && r.Err == nil; i++ {
		id := uintAt(r, b, ids+i*idSize, idSize, vr.vbase, "object key id")
		if r.Err == nil && id >= len(vr.keys) {
			vr.fail(ids+i*idSize, "object key id %d of %d keys", id, len(vr.keys))
			break
		}
		v, _ := vr.read(data+uintAt(r, b, offsets+i*offSize, offSize, vr.vbase, "object offset"), depth+1, decode)
		if decode {
			if _, dup := out[vr.keys[id]]; dup && r.Err == nil {
				vr.fail(ids+i*idSize, "object key %q twice", vr.keys[id])
			}
			out[vr.keys[id]] = v
		}
	}
	return out, data + uintAt(r, b, offsets+n*offSize, offSize, vr.vbase, "object end offset")
}

// array reads an array's elements.
func (vr *variantReader) array(pos, info, depth int, decode bool) (any, int) {
	r, b := vr.r, vr.value
	offSize := info&3 + 1
	countSize := 1
	if info>>2&1 == 1 {
		countSize = 4
	}
	n := uintAt(r, b, pos+1, countSize, vr.vbase, "array element count")
	offsets := pos + 1 + countSize
	data := offsets + (n+1)*offSize
	if r.Err == nil && (n > len(b) || data > len(b)) {
		vr.fail(pos, "array of %d elements in %d bytes", n, len(b)-pos)
		return nil, pos
	}
	var out []any
	if decode {
		out = make([]any, 0, n)
	}
	for i := 0; i < n && r.Err == nil; i++ {
		v, _ := vr.read(data+uintAt(r, b, offsets+i*offSize, offSize, vr.vbase, "array offset"), depth+1, decode)
		if decode {
			out = append(out, v)
		}
	}
	return out, data + uintAt(r, b, offsets+n*offSize, offSize, vr.vbase, "array end offset")
}

// jsonNumber is a number as its JSON text.
func jsonNumber(text string) any { return json.Number(text) }

// json64 and json32 are a double and a float as the shortest text that
// reads back as them (what Java's toString gives, in Go's spelling); one
// JSON cannot hold, which Flink's toJson refuses, as Java spells it.
func json64(f float64) any {
	return jsonFloat(f, strconv.FormatFloat(f, 'g', -1, 64))
}

func json32(f float32) any {
	return jsonFloat(float64(f), strconv.FormatFloat(float64(f), 'g', -1, 32))
}

func jsonFloat(f float64, text string) any {
	if s, ok := nonfinite.Text(f); ok {
		return s
	}
	return json.Number(text)
}

// isoDate is the day as ISO_LOCAL_DATE shows it.
func isoDate(days int64) string {
	return isoDateOf(time.Unix(days*86400, 0).UTC())
}

// isoDateOf is t's date as ISO_LOCAL_DATE shows it: four-digit years, a
// sign past 9999 and before 0.
func isoDateOf(t time.Time) string {
	y := t.Year()
	year := fmt.Sprintf("%04d", y)
	switch {
	case y > 9999:
		year = "+" + year
	case y < 0:
		year = fmt.Sprintf("-%04d", -y)
	}
	return fmt.Sprintf("%s-%02d-%02d", year, t.Month(), t.Day())
}

// isoTime is the time of day as ISO_LOCAL_TIME shows it: seconds always,
// then the fraction without its trailing zeros.
func isoTime(t time.Time) string {
	text := fmt.Sprintf("%02d:%02d:%02d", t.Hour(), t.Minute(), t.Second())
	if ns := t.Nanosecond(); ns != 0 {
		text += strings.TrimRight(fmt.Sprintf(".%09d", ns), "0")
	}
	return text
}
