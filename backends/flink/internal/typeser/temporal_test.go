package typeser

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/formattest"
)

func baseCodec(simple string) Codec {
	return Codec{S: coreTable.Bind(&SerializerSnapshot{Class: basePackage + simple + "$" + simple + "Snapshot"})}
}

// Values Flink 2.3.0 wrote in the zoo witness job's RocksDB savepoint
// (testdata/flink-witness/2.3.0/zoo-rocksdb-native, key "z-1"), with the
// JSON of the job's own dump and the Java hashCode Java 17 computes of
// the value.
var temporalFlinkValues = []struct {
	serializer string
	hex        string
	json       string
	hash       int32
}{
	{"BigIntSerializer", "0000000d3ffffffffe0027961f", `1180591620708823963167`, 2654816},
	{"BigDecSerializer", "0000000902c9c8b4f000000006", `11975.308528`, 1867378840},
	{"InstantSerializer", "000000006553f16105c81b63", `"2023-11-14T22:14:57.097000291Z"`, -1942919654},
	{"LocalDateSerializer", "000007e30714", `"2019-07-20"`, 4135380},
	{"LocalDateTimeSerializer", "000007e409110d1a28000002a7", `"2020-09-17T13:26:40.000000679"`, 15838451},
	{"LocalTimeSerializer", "000125000002a7", `"00:01:37.000000679"`, -1784247119},
	{"SqlTimestampSerializer", "000001802ba9f46105c81a40", `[1650000000097,97000000]`, 732558817},
}

func TestTemporalValuesOfFlink(t *testing.T) {
	for _, c := range temporalFlinkValues {
		codec := baseCodec(c.serializer)
		b, _ := hex.DecodeString(c.hex)
		v, err := codec.Decode(b)
		got, _ := json.Marshal(v)
		if err != nil || string(got) != c.json {
			t.Errorf("%s: %s, %v; the job held %s", c.serializer, got, err, c.json)
			continue
		}
		enc, err := codec.Encode(jsonValue(t, c.json))
		if err != nil || !bytes.Equal(enc, b) {
			t.Errorf("%s: %s encodes to %x, %v; Flink wrote %x", c.serializer, c.json, enc, err, b)
		}
		if h, err := codec.HashCode(b); err != nil || h != c.hash {
			t.Errorf("%s: hash %d, %v; Java's hashCode is %d", c.serializer, h, err, c.hash)
		}
	}
}

func jsonValue(t testing.TB, text string) any {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Java's text and arithmetic at the edges: toByteArray's shortest two's
// complement, toPlainString of negative scales and of fractions,
// LocalDate.toString of years before 0 and past 9999, hashCodes of
// negative numbers (all from Java 17).
func TestTemporalEdges(t *testing.T) {
	for _, c := range []struct {
		serializer, json string
		wantHex          string
		hash             int32
	}{
		{"BigIntSerializer", `-128`, "0000000580", 0},
		{"BigIntSerializer", `-129`, "00000006ff7f", 0},
		{"BigIntSerializer", `255`, "0000000600ff", 0},
		{"BigIntSerializer", `-1180591620708823963167`, "", -2654816},
		{"BigIntSerializer", `-5`, "", -5},
		{"BigDecSerializer", `12000`, "", 0},
		{"BigDecSerializer", `-0.000123`, "", -3807},
		{"BigDecSerializer", `12E100`, "000000050c" + "ffffff9c", 0}, // too many zeros to write out
		{"LocalDateSerializer", `"-0005-02-28"`, "", 8348},
		{"LocalDateSerializer", `"+12345-02-28"`, "", 0},
		{"InstantSerializer", `"-0001-12-31T00:00:00.000000000Z"`, "", 0},
	} {
		codec := baseCodec(c.serializer)
		b, err := codec.Encode(jsonValue(t, c.json))
		if err != nil {
			t.Fatalf("%s %s: %v", c.serializer, c.json, err)
		}
		if c.wantHex != "" && hex.EncodeToString(b) != c.wantHex {
			t.Errorf("%s %s: %x, want %s", c.serializer, c.json, b, c.wantHex)
		}
		v, err := codec.Decode(b)
		if got, _ := json.Marshal(v); err != nil || string(got) != c.json {
			t.Errorf("%s: %s decodes back to %s, %v", c.serializer, c.json, got, err)
		}
		if h, _ := codec.HashCode(b); c.hash != 0 && h != c.hash {
			t.Errorf("%s %s: hash %d, Java's is %d", c.serializer, c.json, h, c.hash)
		}
	}
	// new BigDecimal(new BigInteger("12"), -3) is 12000 to toPlainString.
	if got := plainDecimal(bigIntOfString(t, "12"), -3); got != "12000" {
		t.Errorf("12E+3 plain: %s", got)
	}
	if got := plainDecimal(bigIntOfString(t, "-12"), 5); got != "-0.00012" {
		t.Errorf("-12E-5 plain: %s", got)
	}
}

func bigIntOfString(t testing.TB, s string) *big.Int {
	n, ok := bigIntOf(s)
	if !ok {
		t.Fatal(s)
	}
	return n
}

// Nulls are what Flink writes for them, and decode to null.
func TestTemporalNulls(t *testing.T) {
	for simple, want := range map[string]string{
		"BigIntSerializer": "00000000", "BigDecSerializer": "00000000",
		"InstantSerializer": "800000000000000080000000", "LocalDateSerializer": "800000008000",
		"LocalTimeSerializer": "80800080000000", "LocalDateTimeSerializer": "80000000800080800080000000",
		"SqlTimestampSerializer": "800000000000000000000000", "DateSerializer": "ffffffffffffffff",
		"SqlDateSerializer": "8000000000000000", "SqlTimeSerializer": "8000000000000000",
	} {
		codec := baseCodec(simple)
		b, err := codec.Encode(nil)
		if err != nil || hex.EncodeToString(b) != want {
			t.Errorf("%s null: %x, %v; want %s", simple, b, err, want)
		}
		if v, err := codec.Decode(b); v != nil || err != nil {
			t.Errorf("%s: %x decodes to %v, %v", simple, b, v, err)
		}
	}
}

func TestTemporalDamage(t *testing.T) {
	for _, c := range []struct{ serializer, hex string }{
		{"LocalDateSerializer", "000007e30230"},                        // February 48th
		{"LocalDateSerializer", "000007e30d01"},                        // month 13
		{"LocalTimeSerializer", "180000000002a7"},                      // hour 24
		{"LocalTimeSerializer", "0001253b9aca00"},                      // a billion nanos
		{"LocalDateTimeSerializer", "800000008000" + "0d1a28000002a7"}, // a null date with a time
		{"BigIntSerializer", "fffffffe"},
		{"BigIntSerializer", "0000000a0102"}, // 6 bytes said, 2 there
		{"BigIntSerializer", "00000004"},     // no bytes at all
	} {
		b, _ := hex.DecodeString(c.hex)
		if _, err := baseCodec(c.serializer).Decode(b); !errors.Is(err, snapshot.ErrCorrupt) {
			t.Errorf("%s %s: %v, want damage", c.serializer, c.hex, err)
		}
	}
}

func FuzzTemporal(f *testing.F) {
	simples := []string{"BigIntSerializer", "BigDecSerializer", "InstantSerializer", "LocalDateSerializer",
		"LocalDateTimeSerializer", "LocalTimeSerializer", "SqlTimestampSerializer", "DateSerializer", "SqlTimeSerializer"}
	for _, c := range temporalFlinkValues {
		b, _ := hex.DecodeString(c.hex)
		for j, s := range simples {
			if s == c.serializer {
				f.Add(uint8(j), b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		c := baseCodec(simples[int(which)%len(simples)])
		formattest.CodecRoundTrip(t, c, b)
		// Walking agrees with decoding on where a value ends, and, where
		// the walk reads the value (its width is not fixed), on what is
		// damage.
		_, decodeErr := c.Decode(b)
		n, ok, spanErr := Span(c.S, b)
		whole := spanErr == nil && ok && n == len(b)
		if decodeErr == nil && !whole || widthOf(c.S) == 0 && whole && decodeErr != nil {
			t.Fatalf("%x decodes with %v but spans %d, %v, %v", b, decodeErr, n, ok, spanErr)
		}
	})
}

// A Row's kind is its mask's first two bits (RowKind.toByteValue(), bit 0
// first): a Row Flink 2.3.0 wrote as UPDATE_AFTER in the zoo witness job
// (key "z-1") shows its kind as the job's own dump does, and writes back.
func TestRowKeepsItsKind(t *testing.T) {
	fields := []*SerializerSnapshot{{Class: basePackage + "LongSerializer$LongSerializerSnapshot"},
		{Class: basePackage + "StringSerializer$StringSerializerSnapshot"},
		{Class: basePackage + "BigDecSerializer$BigDecSerializerSnapshot"},
		{Class: basePackage + "InstantSerializer$InstantSerializerSnapshot"}}
	c := Codec{S: coreTable.Bind(&SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.RowSerializer$RowSerializerSnapshot",
		OuterVersion: 3, Nested: fields})}
	b, _ := hex.DecodeString("40000000000000006107726f772d393700000007017b4200000003000000006553f16105c81b63")
	v, err := c.Decode(b)
	got, _ := json.Marshal(v)
	const want = `{"@row":[97,"row-97",97.090,"2023-11-14T22:14:57.097000291Z"],"@rowkind":"UPDATE_AFTER"}`
	if err != nil || string(got) != want {
		t.Fatalf("%s, %v; the job held %s", got, err, want)
	}
	back, err := c.Encode(jsonValue(t, want))
	if err != nil || !bytes.Equal(back, b) {
		t.Fatalf("encodes to %x, %v; Flink wrote %x", back, err, b)
	}
	legacy := Codec{S: coreTable.Bind(&SerializerSnapshot{Class: c.S.Class, OuterVersion: 2, Nested: fields})}
	if _, err := legacy.Encode(jsonValue(t, want)); err == nil {
		t.Error("a Row serializer that writes no kind took an UPDATE_AFTER row")
	}
}

// Dates and times read as Java's LocalDate and LocalTime toString write
// them, for any year Java holds and any nanosecond.
func TestDateAndClockText(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		year := []int{rng.IntN(10000), -1 - rng.IntN(1_000_000_000), 10000 + rng.IntN(1_000_000_000), rng.IntN(3) - 1}[rng.IntN(4)]
		d := time.Date(year, time.Month(1+rng.IntN(12)), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60), 0, time.UTC)
		nano := []int{rng.IntN(1_000_000_000), rng.IntN(10), 999_999_999}[rng.IntN(3)]
		var want string
		switch y := d.Year(); {
		case y > 9999:
			want = fmt.Sprintf("+%d", y)
		case y < 0:
			want = fmt.Sprintf("-%04d", -y)
		default:
			want = fmt.Sprintf("%04d", y)
		}
		want += fmt.Sprintf("-%02d-%02dT%02d:%02d:%02d.%09d", int(d.Month()), d.Day(), d.Hour(), d.Minute(), d.Second(), nano)
		if got := string(appendClockText(append(appendDateText(nil, d), 'T'), d, nano)); got != want {
			t.Fatalf("%v with %d ns: %q, want %q", d, nano, got, want)
		}
	}
}
