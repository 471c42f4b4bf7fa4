package typeser

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/snapshot"
)

// flink-core's serializers of big numbers, java.time and the JDK's dates
// (org.apache.flink.api.common.typeutils.base):
//
//   - BigIntSerializer: an int, 0 for null, 1, 2 and 3 for the constants
//     ZERO, ONE and TEN, else 4 + the length of the two's-complement bytes
//     that follow. BigDecSerializer: the unscaled value so, then (unless
//     null) the scale as an int.
//   - InstantSerializer: the epoch second (long) and the nano (int); null
//     is both at their minimum.
//   - LocalDateSerializer: the year (int), month and day (bytes); null is
//     the year's minimum and a short. LocalTimeSerializer: hour, minute and
//     second (bytes) and the nano (int); null is the hour's minimum, a short
//     and an int. LocalDateTimeSerializer: a date, then a time.
//   - SqlTimestampSerializer: the milliseconds (long), then the nanos
//     (int); null is the long's minimum. SqlDateSerializer and
//     SqlTimeSerializer: the milliseconds, null the long's minimum;
//     DateSerializer (java.util.Date) the same with -1 for null.
//
// As JSON: big numbers are numbers (a BigDecimal with its scale's digits),
// java.time values ISO text with all nine fraction digits (an Instant in
// UTC, with a Z), a Timestamp [milliseconds, nanos], a Date its
// milliseconds.

// basePackage is where flink-core keeps its basic serializers.
const basePackage = "org.apache.flink.api.common.typeutils.base."

// temporalKinds are the kinds of these serializers by their class's
// simple name.
var temporalKinds = map[string]string{
	"BigIntSerializer": "BigInteger", "BigDecSerializer": "BigDecimal",
	"InstantSerializer": "Instant", "LocalDateSerializer": "LocalDate",
	"LocalTimeSerializer": "LocalTime", "LocalDateTimeSerializer": "LocalDateTime",
	"SqlTimestampSerializer": "SqlTimestamp", "DateSerializer": "Date",
	"SqlDateSerializer": "SqlDate", "SqlTimeSerializer": "SqlTime",
}

// temporalKind classifies a class name of these serializers or their
// snapshots.
func temporalKind(n string) string {
	simple, ok := strings.CutPrefix(n, basePackage)
	if !ok {
		return ""
	}
	simple, _, _ = strings.Cut(simple, "$")
	return temporalKinds[simple]
}

// temporalExprs are the type expressions of these kinds.
var temporalExprs = map[string]string{
	"BigInteger": "java.math.BigInteger", "BigDecimal": "java.math.BigDecimal",
	"Instant": "java.time.Instant", "LocalDate": "java.time.LocalDate",
	"LocalTime": "java.time.LocalTime", "LocalDateTime": "java.time.LocalDateTime",
	"SqlTimestamp": "java.sql.Timestamp", "Date": "java.util.Date",
	"SqlDate": "java.sql.Date", "SqlTime": "java.sql.Time",
}

// temporalWidths are the fixed widths (getLength) of these kinds.
var temporalWidths = map[string]int{
	"Instant": 12, "LocalDate": 6, "LocalTime": 7, "LocalDateTime": 13,
	"SqlTimestamp": 12, "Date": 8, "SqlDate": 8, "SqlTime": 8,
}

// The epoch seconds of Instant.MIN and Instant.MAX (years -1e9 and 1e9):
// Instant.ofEpochSecond refuses any other.
const (
	minInstantSecond = -31557014167219200
	maxInstantSecond = 31556889864403199
)

// Flink's null markers.
const (
	nullYear = math.MinInt32
	nullHour = math.MinInt8
)

func decodeTemporal(r *wire.Reader, kind string) any {
	switch kind {
	case "BigInteger":
		if n := readBigInteger(r); n != nil {
			return json.Number(n.String())
		}
	case "BigDecimal":
		if n := readBigInteger(r); n != nil {
			return json.Number(plainDecimal(n, r.I32("BigDecimal scale")))
		}
	case "Instant":
		at := r.Pos()
		sec, nano := r.I64("instant seconds"), r.I32("instant nanos")
		if sec == math.MinInt64 && nano == math.MinInt32 || r.Err != nil {
			return nil
		}
		sec, nano64 := sec+int64(nano)/1e9, int64(nano)%1e9 // Instant.ofEpochSecond's adjustment
		if nano64 < 0 {
			sec, nano64 = sec-1, nano64+1e9
		}
		if sec < minInstantSecond || sec > maxInstantSecond {
			r.FailAt(at, "instant of second %d: past the years Java's Instant holds", sec)
			return nil
		}
		t := time.Unix(sec, 0).UTC()
		var b [48]byte
		return string(append(appendClockText(append(appendDateText(b[:0], t), 'T'), t, int(nano64)), 'Z'))
	case "LocalDate":
		if d, ok := readLocalDate(r); ok {
			var b [16]byte
			return string(appendDateText(b[:0], d))
		}
	case "LocalTime":
		if t, nano, ok := readLocalTime(r); ok {
			var b [24]byte
			return string(appendClockText(b[:0], t, nano))
		}
	case "LocalDateTime":
		at := r.Pos()
		d, dateOK := readLocalDate(r)
		t, nano, timeOK := readLocalTime(r)
		switch {
		case r.Err != nil:
		case dateOK && timeOK:
			var b [48]byte
			return string(appendClockText(append(appendDateText(b[:0], d), 'T'), t, nano))
		case dateOK != timeOK:
			r.FailAt(at, "LocalDateTime: exactly one of its date and time is null")
		}
	case "SqlTimestamp":
		ms := r.I64("timestamp milliseconds")
		at := r.Pos()
		nanos := r.I32("timestamp nanos")
		switch {
		case ms == math.MinInt64 || r.Err != nil:
		case nanos < 0 || nanos > 999_999_999:
			r.FailAt(at, "timestamp nanos %d: Timestamp.setNanos takes 0 to 999999999", nanos)
		default:
			return []any{ms, int64(nanos)}
		}
	case "Date", "SqlDate", "SqlTime":
		if ms := r.I64("date milliseconds"); ms != nullMillis(kind) && r.Err == nil {
			return ms
		}
	}
	return nil
}

// nullMillis is the milliseconds that stand for a null date.
func nullMillis(kind string) int64 {
	if kind == "Date" {
		return -1
	}
	return math.MinInt64
}

// readBigInteger reads BigIntSerializer's form; nil is null.
func readBigInteger(r *wire.Reader) *big.Int {
	at := r.Pos()
	n := r.I32("BigInteger length")
	switch {
	case r.Err != nil || n == 0:
		return nil
	case n < 0:
		r.FailAt(at, "BigInteger length %d", n)
		return nil
	case n < 4:
		return big.NewInt([]int64{0, 1, 10}[n-1])
	}
	b := r.Take(int(n)-4, "BigInteger bytes")
	if r.Err != nil {
		return nil
	}
	if len(b) == 0 {
		r.FailAt(at, "BigInteger of no bytes")
		return nil
	}
	v := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 { // two's complement
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

// skipBigNumber passes a BigInteger or a BigDecimal as decodeTemporal
// reads it, without writing out its digits.
func skipBigNumber(r *wire.Reader, kind string) {
	if readBigInteger(r) != nil && kind == "BigDecimal" {
		r.I32("BigDecimal scale")
	}
}

// maxPlainZeros bounds the zeros plainDecimal pads with; past it a
// decimal is written with an exponent.
const maxPlainZeros = 64

// plainDecimal is BigDecimal.toPlainString of unscaled × 10^-scale, or,
// where that would need more than maxPlainZeros zeros, the unscaled digits
// with an exponent (a JSON number either way).
func plainDecimal(unscaled *big.Int, scale int32) string {
	digits := new(big.Int).Abs(unscaled).String()
	sign := ""
	if unscaled.Sign() < 0 {
		sign = "-"
	}
	if int64(scale) < -maxPlainZeros || int64(scale)-int64(len(digits)) > maxPlainZeros {
		return sign + digits + "E" + strconv.FormatInt(-int64(scale), 10)
	}
	switch {
	case scale <= 0:
		if unscaled.Sign() == 0 {
			return "0"
		}
		return sign + digits + strings.Repeat("0", int(-scale))
	case int(scale) >= len(digits):
		return sign + "0." + strings.Repeat("0", int(scale)-len(digits)) + digits
	}
	cut := len(digits) - int(scale)
	return sign + digits[:cut] + "." + digits[cut:]
}

func readLocalDate(r *wire.Reader) (time.Time, bool) {
	at := r.Pos()
	year := r.I32("date year")
	if year == nullYear {
		r.Take(2, "null date")
		return time.Time{}, false
	}
	month, day := r.U8("date month"), r.U8("date day")
	if r.Err != nil {
		return time.Time{}, false
	}
	d := time.Date(int(year), time.Month(month), int(day), 0, 0, 0, 0, time.UTC)
	if month < 1 || month > 12 || d.Day() != int(day) {
		r.FailAt(at, "date %d-%d-%d: no such day", year, month, day)
		return time.Time{}, false
	}
	return d, true
}

func readLocalTime(r *wire.Reader) (t time.Time, nano int, ok bool) {
	at := r.Pos()
	hour := int8(r.U8("time hour"))
	if hour == nullHour {
		r.Take(6, "null time")
		return time.Time{}, 0, false
	}
	minute, second, n := r.U8("time minute"), r.U8("time second"), r.I32("time nanos")
	if r.Err != nil {
		return time.Time{}, 0, false
	}
	if hour < 0 || hour > 23 || minute > 59 || second > 59 || n < 0 || n > 999_999_999 {
		r.FailAt(at, "time %d:%d:%d.%d: out of range", hour, minute, second, n)
		return time.Time{}, 0, false
	}
	return time.Date(1970, 1, 1, int(hour), int(minute), int(second), 0, time.UTC), int(n), true
}

// appendDateText appends a date as Java's LocalDate.toString writes it: a
// year past 9999 with a sign, one before year 0 with a minus, four digits
// at least.
func appendDateText(b []byte, t time.Time) []byte {
	switch y := t.Year(); {
	case y > 9999:
		b = strconv.AppendInt(append(b, '+'), int64(y), 10)
	case y < 0:
		b = appendPadded(append(b, '-'), -y, 4)
	default:
		b = appendPadded(b, y, 4)
	}
	b = appendPadded(append(b, '-'), int(t.Month()), 2)
	return appendPadded(append(b, '-'), t.Day(), 2)
}

// appendClockText appends a time of day with nano nanoseconds, all nine
// digits of them.
func appendClockText(b []byte, t time.Time, nano int) []byte {
	b = appendPadded(b, t.Hour(), 2)
	b = appendPadded(append(b, ':'), t.Minute(), 2)
	b = appendPadded(append(b, ':'), t.Second(), 2)
	return appendPadded(append(b, '.'), nano, 9)
}

// appendPadded appends v (not negative) in decimal, zero-padded to width
// digits.
func appendPadded(b []byte, v, width int) []byte {
	var d [20]byte
	digits := strconv.AppendInt(d[:0], int64(v), 10)
	for range width - len(digits) {
		b = append(b, '0')
	}
	return append(b, digits...)
}

func encodeTemporal(b []byte, kind string, v any) ([]byte, error) {
	if v == nil {
		return appendTemporalNull(b, kind), nil
	}
	switch kind {
	case "BigInteger":
		n, ok := bigIntOf(v)
		if !ok {
			return nil, fmt.Errorf("want an integer, not %v", v)
		}
		return appendBigInteger(b, n), nil
	case "BigDecimal":
		unscaled, scale, ok := decimalOf(v)
		if !ok {
			return nil, fmt.Errorf("want a decimal number, not %v", v)
		}
		return binary.BigEndian.AppendUint32(appendBigInteger(b, unscaled), uint32(scale)), nil
	case "Instant":
		text, _ := v.(string)
		t, nano, ok := parseDateTime(strings.TrimSuffix(text, "Z"))
		if !ok || !strings.HasSuffix(text, "Z") {
			return nil, fmt.Errorf(`want an instant as "2023-11-14T22:16:23.183000549Z", not %v`, v)
		}
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(b, uint64(t.Unix())), uint32(nano)), nil
	case "LocalDate":
		text, _ := v.(string)
		d, ok := parseDate(text)
		if !ok {
			return nil, fmt.Errorf(`want a date as "2019-10-14", not %v`, v)
		}
		return appendDate(b, d), nil
	case "LocalTime":
		text, _ := v.(string)
		t, nano, ok := parseClock(text)
		if !ok {
			return nil, fmt.Errorf(`want a time as "00:03:03.000001281", not %v`, v)
		}
		return appendClock(b, t, nano), nil
	case "LocalDateTime":
		text, _ := v.(string)
		t, nano, ok := parseDateTime(text)
		if !ok {
			return nil, fmt.Errorf(`want a date and time as "2020-09-21T03:26:40.000001281", not %v`, v)
		}
		return appendClock(appendDate(b, t), t, nano), nil
	case "SqlTimestamp":
		pair, ok := v.([]any)
		if !ok || len(pair) != 2 {
			return nil, fmt.Errorf("want [milliseconds, nanos], not %v", v)
		}
		ms, err := Integer(pair[0], 64)
		if err != nil {
			return nil, fmt.Errorf("timestamp milliseconds: %w", err)
		}
		nanos, err := Integer(pair[1], 32)
		if err != nil || nanos < 0 || nanos > 999_999_999 {
			return nil, fmt.Errorf("timestamp nanos: want 0 to 999999999, not %v", pair[1])
		}
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(b, uint64(ms)), uint32(nanos)), nil
	case "Date", "SqlDate", "SqlTime":
		ms, err := Integer(v, 64)
		if err != nil {
			return nil, err
		}
		if ms == nullMillis(kind) {
			return nil, fmt.Errorf("%d milliseconds is how Flink writes a null %s", ms, temporalExprs[kind])
		}
		return binary.BigEndian.AppendUint64(b, uint64(ms)), nil
	}
	return nil, fmt.Errorf("values of %s %w", kind, ErrNoEncoder)
}

func appendTemporalNull(b []byte, kind string) []byte {
	switch kind {
	case "BigInteger", "BigDecimal":
		return binary.BigEndian.AppendUint32(b, 0)
	case "Instant":
		b = binary.BigEndian.AppendUint64(b, 1<<63)
		return binary.BigEndian.AppendUint32(b, 1<<31)
	case "LocalDate":
		return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint32(b, 1<<31), 1<<15)
	case "LocalTime":
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(append(b, 0x80), 1<<15), 1<<31)
	case "LocalDateTime":
		return appendTemporalNull(appendTemporalNull(b, "LocalDate"), "LocalTime")
	case "SqlTimestamp":
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(b, 1<<63), 0)
	}
	return binary.BigEndian.AppendUint64(b, uint64(nullMillis(kind))) // Date, SqlDate, SqlTime
}

// appendBigInteger writes a non-null BigInteger with BigIntSerializer's
// general form (the constants' short forms depend on which instance Java
// held, which its value does not tell).
func appendBigInteger(b []byte, n *big.Int) []byte {
	tc := twosComplement(n)
	b = binary.BigEndian.AppendUint32(b, uint32(len(tc)+4))
	return append(b, tc...)
}

// twosComplement is BigInteger.toByteArray: the shortest big-endian
// two's-complement bytes, at least one.
func twosComplement(n *big.Int) []byte {
	if n.Sign() >= 0 {
		b := n.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -n-1 in magnitude, complemented.
	m := new(big.Int).Sub(new(big.Int).Neg(n), big.NewInt(1)).Bytes()
	if len(m) == 0 || m[0]&0x80 != 0 {
		m = append([]byte{0}, m...)
	}
	for i := range m {
		m[i] = ^m[i]
	}
	return m
}

func bigIntOf(v any) (*big.Int, bool) {
	text, ok := snapshot.TextOf(v)
	if !ok {
		return nil, false
	}
	return new(big.Int).SetString(text, 10)
}

// decimalOf parses a decimal number (digits, a point, an exponent) into
// its unscaled value and scale, as new BigDecimal(String) does.
func decimalOf(v any) (*big.Int, int32, bool) {
	text, ok := snapshot.TextOf(v)
	if !ok || text == "" {
		return nil, 0, false
	}
	mantissa, exp := text, int64(0)
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		e, err := strconv.ParseInt(text[i+1:], 10, 32)
		if err != nil {
			return nil, 0, false
		}
		mantissa, exp = text[:i], e
	}
	whole, frac, _ := strings.Cut(mantissa, ".")
	digits := whole + frac
	if strings.ContainsAny(digits[min(1, len(digits)):], "+-") {
		return nil, 0, false
	}
	n, ok := new(big.Int).SetString(digits, 10)
	scale := int64(len(frac)) - exp
	if !ok || scale < math.MinInt32 || scale > math.MaxInt32 {
		return nil, 0, false
	}
	return n, int32(scale), true
}

func appendDate(b []byte, t time.Time) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(int32(t.Year())))
	return append(b, byte(t.Month()), byte(t.Day()))
}

func appendClock(b []byte, t time.Time, nano int) []byte {
	b = append(b, byte(t.Hour()), byte(t.Minute()), byte(t.Second()))
	return binary.BigEndian.AppendUint32(b, uint32(nano))
}

// parseDate reads [+-]YYYY-MM-DD, the year of four digits at least.
func parseDate(text string) (time.Time, bool) {
	sign := 1
	switch {
	case strings.HasPrefix(text, "+"):
		text = text[1:]
	case strings.HasPrefix(text, "-"):
		sign, text = -1, text[1:]
	}
	parts := strings.Split(text, "-")
	if len(parts) != 3 || len(parts[0]) < 4 || len(parts[1]) != 2 || len(parts[2]) != 2 {
		return time.Time{}, false
	}
	y, e1 := strconv.ParseInt(parts[0], 10, 32)
	m, e2 := strconv.Atoi(parts[1])
	d, e3 := strconv.Atoi(parts[2])
	if e1 != nil || e2 != nil || e3 != nil || m < 1 || m > 12 {
		return time.Time{}, false
	}
	t := time.Date(sign*int(y), time.Month(m), d, 0, 0, 0, 0, time.UTC)
	return t, t.Day() == d
}

// parseClock reads HH:MM:SS with up to nine fraction digits.
func parseClock(text string) (time.Time, int, bool) {
	clock, frac, _ := strings.Cut(text, ".")
	parts := strings.Split(clock, ":")
	if len(parts) != 3 || len(frac) > 9 {
		return time.Time{}, 0, false
	}
	var hms [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || len(p) != 2 {
			return time.Time{}, 0, false
		}
		hms[i] = n
	}
	nano := 0
	if frac != "" {
		n, err := strconv.Atoi(frac + strings.Repeat("0", 9-len(frac)))
		if err != nil || n < 0 {
			return time.Time{}, 0, false
		}
		nano = n
	}
	if hms[0] > 23 || hms[1] > 59 || hms[2] > 59 {
		return time.Time{}, 0, false
	}
	return time.Date(1970, 1, 1, hms[0], hms[1], hms[2], 0, time.UTC), nano, true
}

func parseDateTime(text string) (time.Time, int, bool) {
	date, clock, ok := strings.Cut(text, "T")
	if !ok {
		return time.Time{}, 0, false
	}
	d, okDate := parseDate(date)
	t, nano, okClock := parseClock(clock)
	if !okDate || !okClock {
		return time.Time{}, 0, false
	}
	return time.Date(d.Year(), d.Month(), d.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC), nano, true
}

// hashTemporal is the Java hashCode of one key of these kinds.
func hashTemporal(r *wire.Reader, kind string) (int32, bool) {
	switch kind {
	case "BigInteger":
		if n := readBigInteger(r); n != nil {
			return bigIntegerHash(n), true
		}
	case "BigDecimal":
		if n := readBigInteger(r); n != nil {
			return 31*bigIntegerHash(n) + r.I32("BigDecimal scale"), true
		}
	case "Instant":
		sec, nano := r.I64("instant seconds"), r.I32("instant nanos")
		return int32(sec^int64(uint64(sec)>>32)) + 51*nano, r.Err == nil
	case "LocalDate":
		d, ok := readLocalDate(r)
		return localDateHash(d), ok
	case "LocalTime":
		t, nano, ok := readLocalTime(r)
		return localTimeHash(t, nano), ok
	case "LocalDateTime":
		d, dateOK := readLocalDate(r)
		t, nano, timeOK := readLocalTime(r)
		return localDateHash(d) ^ localTimeHash(t, nano), dateOK && timeOK
	case "Date", "SqlDate", "SqlTime", "SqlTimestamp":
		ms := r.I64("date milliseconds")
		if kind == "SqlTimestamp" {
			r.I32("timestamp nanos")
		}
		return int32(ms) ^ int32(ms>>32), r.Err == nil
	}
	return 0, false
}

// localDateHash is LocalDate.hashCode.
func localDateHash(d time.Time) int32 {
	y := int32(d.Year())
	return y&^0x7FF ^ (y<<11 + int32(d.Month())<<6 + int32(d.Day()))
}

// localTimeHash is LocalTime.hashCode: Long.hashCode of the nano of day.
func localTimeHash(t time.Time, nano int) int32 {
	nod := int64(t.Hour())*3600e9 + int64(t.Minute())*60e9 + int64(t.Second())*1e9 + int64(nano)
	return int32(nod ^ int64(uint64(nod)>>32))
}

// bigIntegerHash is BigInteger.hashCode: over the magnitude's big-endian
// ints, h = 31*h + int, times the sign.
func bigIntegerHash(n *big.Int) int32 {
	mag := new(big.Int).Abs(n).Bytes()
	if pad := len(mag) % 4; pad != 0 {
		mag = append(make([]byte, 4-pad), mag...)
	}
	var h int32
	for i := 0; i < len(mag); i += 4 {
		h = 31*h + int32(binary.BigEndian.Uint32(mag[i:]))
	}
	return h * int32(n.Sign())
}
