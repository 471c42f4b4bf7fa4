package statesql

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stateutil/stateutil/snapshot"
)

// Every value stateutil's own codecs decode fits the schema they
// describe, and converts to what a column of that type holds: the
// decoded value itself for scalars, JSON text for documents.
func TestBuiltinCodecValuesFitTheirSchema(t *testing.T) {
	codecs := snapshot.NewCodecs()
	rng := rand.New(rand.NewPCG(1, 2))
	text := func() string {
		b := make([]rune, rng.IntN(12))
		for i := range b {
			b[i] = rune(rng.IntN(0x2FFF) + 1)
		}
		return string(b)
	}
	gens := map[string]func() string{
		snapshot.TypeString: func() string { return strconv.Quote(text()) },
		snapshot.TypeInt32:  func() string { return strconv.Itoa(int(rng.Int32()) * (1 - 2*rng.IntN(2))) },
		snapshot.TypeInt64:  func() string { return strconv.FormatInt(rng.Int64()*int64(1-2*rng.IntN(2)), 10) },
		snapshot.TypeBytes:  func() string { return strconv.Quote(fmt.Sprintf("0x%016x", rng.Uint64())) },
		snapshot.TypeJSON: func() string {
			b, _ := json.Marshal(map[string]any{"a": []any{text(), rng.Int64(), nil, true}, "b": rng.Float64()})
			return string(b)
		},
		snapshot.TypeVoid: func() string { return "null" },
	}
	for name, gen := range gens {
		typ := snapshot.Type{Name: name}
		schema := codecs.Schema(typ)
		if schema.Kind == snapshot.SchemaJSON && name != snapshot.TypeJSON {
			t.Errorf("%s: described as JSON", name)
		}
		codec, err := codecs.Codec(typ)
		if err != nil {
			t.Fatal(err)
		}
		for range 200 {
			in := gen()
			b, err := codecs.EncodeKey(typ, in)
			if err != nil {
				t.Fatalf("%s: encode %s: %v", name, in, err)
			}
			v, err := codec.Decode(b)
			if err != nil {
				t.Fatalf("%s: decode %x: %v", name, b, err)
			}
			got, err := convert(&schema, v)
			if err != nil {
				t.Fatalf("%s: %v (%T) does not fit %s: %v", name, v, v, schema, err)
			}
			switch schema.Kind {
			case snapshot.SchemaJSON:
				var back any
				if err := json.Unmarshal(got.(json.RawMessage), &back); err != nil {
					t.Fatalf("%s: %s is not JSON: %v", name, got, err)
				}
			case snapshot.SchemaBytes:
				if h := "0x" + hex.EncodeToString(got.([]byte)); h != v {
					t.Fatalf("%s: %v converts to %s", name, v, h)
				}
			default:
				if got != v && !(v == nil && got == nil) {
					if n, ok := v.(int64); !ok || got != n {
						t.Fatalf("%s: %v converts to %v", name, v, got)
					}
				}
			}
		}
	}
}

// No decoded value, of any shape, makes convert panic, whatever the
// schema: it fits, or it is errMisfit.
func FuzzConvert(f *testing.F) {
	f.Add(`{"a":[1,"x",null],"b":{"c":true}}`, uint8(11))
	f.Add(`[1,2,3]`, uint8(12))
	f.Add(`"0xzz"`, uint8(10))
	f.Add(`{"1":2}`, uint8(13))
	f.Fuzz(func(t *testing.T, doc string, kind uint8) {
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			return
		}
		leaf := snapshot.Schema{Kind: snapshot.SchemaKind(kind % 11)}
		for _, s := range []snapshot.Schema{
			leaf,
			{Kind: snapshot.SchemaStruct, Fields: []snapshot.Field{{Name: "a", Schema: leaf}, {Name: "b", Schema: snapshot.Schema{Kind: snapshot.SchemaJSON}}}},
			{Kind: snapshot.SchemaList, Elem: &leaf},
			{Kind: snapshot.SchemaMap, Key: &leaf, Elem: &leaf},
			{Kind: snapshot.SchemaUndecoded},
		} {
			_, _ = convert(&s, v)
		}
	})
}
