package flinkwitness

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stateutil/stateutil/internal/classlayout"
	"github.com/stateutil/stateutil/internal/flinkharness"
)

// byWrites is the job's dump with each value that is wholly an object of
// a class the entry's --kryo-classes file marks @WrittenBy (the job dumps
// it as the bytes its serializer wrote after the class: {"@class": C,
// "@bytes": "0x.."}) replaced by what those bytes hold by the declared
// writes: the members by name. The bytes are read here, by how Kryo's
// Output writes each call (Kryo 2 in Flink 1.x, Kryo 5 in 2.x), not by
// stateutil's decoder, so that the real bytes stay the witness.
func byWrites(t testing.TB, e flinkharness.Entry, want []flinkharness.Line) []flinkharness.Line {
	b, err := os.ReadFile(e.File("kryo-classes.txt"))
	if os.IsNotExist(err) {
		return want
	}
	if err != nil {
		t.Fatal(err)
	}
	classes, err := classlayout.Parse(b, e.File("kryo-classes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	v5 := !strings.HasPrefix(e.Manifest.FlinkVersion, "1.")
	out := make([]flinkharness.Line, len(want))
	for i, l := range want {
		out[i] = l
		var kept struct {
			Class string `json:"@class"`
			Bytes string `json:"@bytes"`
		}
		if json.Unmarshal(l.Value, &kept) != nil || kept.Bytes == "" {
			continue
		}
		c, ok := classes.Class(kept.Class)
		if !ok || !c.Written {
			continue
		}
		raw, err := hex.DecodeString(strings.TrimPrefix(kept.Bytes, "0x"))
		if err != nil {
			t.Fatalf("%s: %s: %v", e.Name, l.Raw, err)
		}
		v, err := readWrites(c, raw, v5)
		if err != nil {
			t.Fatalf("%s: %s: the witness reads no value of %s by its writes: %v", e.Name, l.Raw, c.Name, err)
		}
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(l.Raw))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		m["value"] = v
		if out[i], err = line(m); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// witnessBytes reads what Kryo's Output wrote.
type witnessBytes struct {
	b  []byte
	v5 bool
}

func (w *witnessBytes) next() (byte, error) {
	if len(w.b) == 0 {
		return 0, fmt.Errorf("truncated")
	}
	c := w.b[0]
	w.b = w.b[1:]
	return c, nil
}

// varlong is writeVarLong/writeVarInt's: 7 bits a byte, low first, a
// ninth byte of 8.
func (w *witnessBytes) varlong() (uint64, error) {
	var v uint64
	for i := 0; i < 9; i++ {
		c, err := w.next()
		if err != nil {
			return 0, err
		}
		if i == 8 {
			return v | uint64(c)<<56, nil
		}
		v |= uint64(c&0x7F) << (7 * i)
		if c < 0x80 {
			return v, nil
		}
	}
	return v, nil
}

// fixed is writeShort … writeDouble's: big-endian in Kryo 2, little-endian
// in Kryo 5.
func (w *witnessBytes) fixed(n int) (uint64, error) {
	var v uint64
	for i := 0; i < n; i++ {
		c, err := w.next()
		if err != nil {
			return 0, err
		}
		if w.v5 {
			v |= uint64(c) << (8 * i)
		} else {
			v = v<<8 | uint64(c)
		}
	}
	return v, nil
}

// str is writeString's: ASCII with the last byte's high bit set, or the
// character count plus one (0 for null; bit 8 of the first byte set, bit
// 7 for more bytes, 6 bits, then 7 a byte) and the characters in UTF-8.
func (w *witnessBytes) str() (any, error) {
	if len(w.b) == 0 {
		return nil, fmt.Errorf("truncated")
	}
	if w.b[0]&0x80 == 0 {
		var s []byte
		for {
			c, err := w.next()
			if err != nil {
				return nil, err
			}
			s = append(s, c&0x7F)
			if c&0x80 != 0 {
				return string(s), nil
			}
		}
	}
	first, _ := w.next()
	n := uint64(first & 0x3F)
	if first&0x40 != 0 {
		rest, err := w.varlong()
		if err != nil {
			return nil, err
		}
		n |= rest << 6
	}
	if n == 0 {
		return nil, nil
	}
	var units []uint16
	for i := uint64(1); i < n; i++ {
		c, err := w.next()
		if err != nil {
			return nil, err
		}
		u := uint16(c)
		switch c >> 4 {
		case 12, 13:
			c2, err := w.next()
			if err != nil {
				return nil, err
			}
			u = uint16(c&0x1F)<<6 | uint16(c2&0x3F)
		case 14:
			c2, err := w.next()
			if err != nil {
				return nil, err
			}
			c3, err := w.next()
			if err != nil {
				return nil, err
			}
			u = uint16(c&0x0F)<<12 | uint16(c2&0x3F)<<6 | uint16(c3&0x3F)
		}
		units = append(units, u)
	}
	return string(utf16.Decode(units)), nil
}

// readWrites reads an object of c from the bytes after its class: its
// reference marker, then its members' writes.
func readWrites(c *classlayout.Class, b []byte, v5 bool) (map[string]any, error) {
	w := &witnessBytes{b: b, v5: v5}
	if m, err := w.next(); err != nil || m != 1 {
		return nil, fmt.Errorf("want the reference marker of a new object, 1")
	}
	out := map[string]any{}
	for _, f := range c.Fields {
		var v any
		var err error
		var n uint64
		switch f.Write {
		case classlayout.WriteBoolean:
			n, err = w.fixed(1)
			v = n != 0
		case classlayout.WriteByte:
			n, err = w.fixed(1)
			v = int8(n)
		case classlayout.WriteShort:
			n, err = w.fixed(2)
			v = int16(n)
		case classlayout.WriteChar:
			n, err = w.fixed(2)
			v = string(rune(n))
		case classlayout.WriteInt:
			n, err = w.fixed(4)
			v = int32(n)
		case classlayout.WriteLong:
			n, err = w.fixed(8)
			v = int64(n)
		case classlayout.WriteFloat:
			n, err = w.fixed(4)
			v = math.Float32frombits(uint32(n))
		case classlayout.WriteDouble:
			n, err = w.fixed(8)
			v = math.Float64frombits(n)
		case classlayout.WriteVarInt:
			n, err = w.varlong()
			v = int32(n)
		case classlayout.WriteVarLong:
			n, err = w.varlong()
			v = int64(n)
		case classlayout.WriteVarIntZigzag, classlayout.WriteVarLongZigzag:
			n, err = w.varlong()
			v = int64(n>>1) ^ -int64(n&1)
		case classlayout.WriteString:
			v, err = w.str()
		default:
			return nil, fmt.Errorf("member %s: %s, which this witness does not read", f.Name, f.Write)
		}
		if err != nil {
			return nil, fmt.Errorf("member %s: %v", f.Name, err)
		}
		out[f.Name] = v
	}
	if len(w.b) > 0 {
		return nil, fmt.Errorf("%d bytes after the writes", len(w.b))
	}
	return out, nil
}

// The witness reader above reads the zoo job's Tokens as the job made
// them: new Token(r * 7, "token-" + r), r being the record that state
// "record" holds (its field n) for the same key.
func TestWitnessTokensAreTheJobs(t *testing.T) {
	for _, e := range zooEntries(t) {
		want, err := flinkharness.ReadDump(e.File("dump.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		records := map[string]int64{}
		for _, l := range want {
			if l.State == "record" {
				var s struct{ N int64 }
				if err := json.Unmarshal(l.Value, &s); err != nil {
					t.Fatal(err)
				}
				records[string(l.Key)] = s.N
			}
		}
		tokens := 0
		for _, l := range byWrites(t, e, want) {
			if l.State != "custom" {
				continue
			}
			var tok struct {
				ID   int64
				Text string
			}
			if err := json.Unmarshal(l.Value, &tok); err != nil {
				t.Fatalf("%s: %s: %v", e.Name, l.Value, err)
			}
			r, ok := records[string(l.Key)]
			if !ok || tok.ID != 7*r || tok.Text != "token-"+strconv.FormatInt(r, 10) {
				t.Errorf("%s: key %s: %s; want the Token of record %d", e.Name, l.Key, l.Value, r)
			}
			tokens++
		}
		if tokens == 0 {
			t.Errorf("%s: no Token in the job's dump", e.Name)
		}
	}
}
