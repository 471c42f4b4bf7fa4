package kryo

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stateutil/stateutil/backends/flink/internal/typeser"
	"github.com/stateutil/stateutil/backends/flink/internal/wire"
	"github.com/stateutil/stateutil/snapshot"
)

// A heap snapshot's values carry no length: each is walked (skip mode) to
// find where it ends. The walk builds no value, yet it must refuse
// exactly what decoding refuses, for the same reason (not decoded or
// damage), and end exactly where decoding ends.

// skipSerializers are what the walk is checked under, by pick: FuzzKryo's
// serializer (no declared class, a registration of each kind), one that
// declares Object, and the zoo job's serializers with their schemas
// (FuzzKryoSchemas' classes); then the same in Kryo 5.
func skipSerializers(t testing.TB) []*typeser.SerializerSnapshot {
	schemas := zooSchemas(t)
	regs := []typeser.KryoRegistration{{Class: "java.util.TreeMap", Kind: 0}, {Class: "com.acme.Custom", Kind: 1}}
	var out []*typeser.SerializerSnapshot
	for _, v5 := range []bool{false, true} {
		out = append(out,
			testTable.Bind(&typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", Kryo5: v5, KryoRegistrations: regs}),
			testTable.Bind(&typeser.SerializerSnapshot{Class: "org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializerSnapshot", TypeClass: "java.lang.Object", Kryo5: v5}),
			allSerializer(t, v5).S)
		for _, class := range []string{kryoOptional, "stateutil.flink.jobs.ZooJob$Gadget", "stateutil.flink.proto.Measurement", "java.util.Map", "java.util.List", zooToken} {
			out = append(out, zooSerializer(class, v5, schemas))
		}
	}
	return out
}

// kryoErrorKind is what a failure is: not decoded or damage.
func kryoErrorKind(err error) string {
	if errors.Is(err, snapshot.ErrNotDecoded) {
		return "not decoded"
	}
	return "damage"
}

// checkSkipAgrees fails t where walking b under s does not do what
// decoding b does. A Protobuf message is walked by its length alone
// (whether it decodes is the decoder's to tell), so where decoding stops
// at a message that does not decode, the walk is not held to it.
func checkSkipAgrees(t *testing.T, s *typeser.SerializerSnapshot, b []byte) {
	t.Helper()
	dec := wire.NewReader(b, "value", 0)
	decodeKryo(dec, s, false)
	walk := wire.NewReader(b, "value", 0)
	readKryo(newKryoIn(walk, s, false, true))
	// skipKryo takes its reader from a pool: what the values walked
	// before it left there must not change where it ends.
	skipped := wire.NewReader(b, "value", 0)
	if ok := skipKryo(skipped, s); ok != (walk.Err == nil) || ok && skipped.Off != walk.Off {
		t.Fatalf("0x%x under %s: skipKryo says %v and ends at %d, the walk's error is %v, its end %d", b, s.TypeClass, ok, skipped.Off, walk.Err, walk.Off)
	}
	var nd *snapshot.NotDecodedError
	if errors.As(dec.Err, &nd) {
		if _, proto := protoSet(s.Schemas()).Message(nd.ValueClass); proto {
			return
		}
	}
	switch {
	case dec.Err == nil && walk.Err == nil:
		if dec.Off != walk.Off {
			t.Fatalf("0x%x under %s (Kryo 5 %v): decoding ends at %d, the walk at %d", b, s.TypeClass, s.Kryo5, dec.Off, walk.Off)
		}
	case dec.Err == nil || walk.Err == nil || kryoErrorKind(dec.Err) != kryoErrorKind(walk.Err):
		t.Fatalf("0x%x under %s (Kryo 5 %v): decoding fails with %v, the walk with %v", b, s.TypeClass, s.Kryo5, dec.Err, walk.Err)
	}
}

// skipSeeds are every value the package's tests and fuzz corpora hold,
// each with the serializers it is meant for (pick into skipSerializers).
func skipSeeds(t testing.TB) []skipSeed {
	var out []skipSeed
	kryo5 := len(skipSerializers(t)) / 2
	add := func(v5 bool, picks []int, b []byte) {
		for _, p := range picks {
			if v5 {
				p += kryo5
			}
			out = append(out, skipSeed{uint8(p), b})
		}
	}
	plain := []int{0, 1}
	for _, file := range []string{"kryo2.txt", "kryo5.txt"} {
		for _, b := range kryoVectors(t, file) {
			add(file == "kryo5.txt", plain, b)
		}
	}
	for _, c := range flinkJDKCases {
		add(c.v5, plain, spacedHex(t, c.b))
	}
	for _, c := range kryoKnownCases {
		add(c.v5, plain, spacedHex(t, c.b))
	}
	for _, v5 := range []bool{false, true} {
		rng := rand.New(rand.NewSource(7))
		for i := 0; i < 8; i++ {
			b, err := allSerializer(t, v5).Encode(randomAll(rng))
			if err != nil {
				t.Fatal(err)
			}
			add(v5, []int{2}, b)
		}
	}
	zoo := []int{3, 4, 5, 6, 7, 8}
	for _, c := range zooVectors {
		b, _ := hex.DecodeString(c.hex)
		add(c.v5, zoo, b)
	}
	for _, dir := range []string{"FuzzKryo", "FuzzKryoSchemas", "FuzzKryoSkip"} {
		files, _ := filepath.Glob(filepath.Join("testdata/fuzz", dir, "*"))
		for _, f := range files {
			v5, pick, b := fuzzCorpusFile(t, f)
			if dir == "FuzzKryoSkip" {
				out = append(out, skipSeed{pick, b})
				continue
			}
			picks := plain
			if dir == "FuzzKryoSchemas" {
				picks = []int{zoo[int(pick)%len(zoo)]}
			}
			add(v5, picks, b)
		}
	}
	return out
}

type skipSeed struct {
	pick uint8
	b    []byte
}

// fuzzCorpusFile reads a file of Go's fuzz corpus ("go test fuzz v1"):
// its bool, its byte or uint8 if any, its []byte.
func fuzzCorpusFile(t testing.TB, file string) (v5 bool, pick uint8, b []byte) {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		kind, arg, ok := strings.Cut(strings.TrimSuffix(sc.Text(), ")"), "(")
		if !ok {
			continue
		}
		switch kind {
		case "bool":
			v5 = arg == "true"
		case "byte", "uint8":
			if n, err := strconv.ParseUint(arg, 0, 8); err == nil {
				pick = uint8(n)
			} else if r, err := strconv.Unquote(arg); err == nil && len(r) == 1 {
				pick = r[0]
			} else if r, _, _, err := strconv.UnquoteChar(strings.Trim(arg, "'"), '\''); err == nil {
				pick = uint8(r)
			} else {
				t.Fatalf("%s: %s", file, sc.Text())
			}
		case "[]byte":
			s, err := strconv.Unquote(arg)
			if err != nil {
				t.Fatalf("%s: %s: %v", file, sc.Text(), err)
			}
			b = []byte(s)
		}
	}
	return v5, pick, b
}

// kryoMutations are b changed as damage changes bytes: a byte changed, a
// byte dropped or added, the bytes cut short.
func kryoMutations(rng *rand.Rand, b []byte, n int) [][]byte {
	out := make([][]byte, 0, n)
	for i := 0; i < n; i++ {
		m := bytes.Clone(b)
		at := 0
		if len(m) > 0 {
			at = rng.Intn(len(m))
		}
		switch op := rng.Intn(4); {
		case op == 0 && len(m) > 0:
			m[at] = byte(rng.Intn(256))
		case op == 1 && len(m) > 0:
			m = append(m[:at], m[at+1:]...)
		case op == 2:
			m = append(m[:at], append([]byte{byte(rng.Intn(256))}, m[at:]...)...)
		default:
			m = m[:at]
		}
		out = append(out, m)
	}
	return out
}

func TestKryoSkipAgreesWithDecoding(t *testing.T) {
	serializers := skipSerializers(t)
	rng := rand.New(rand.NewSource(42))
	seeds := skipSeeds(t)
	if len(seeds) < 200 {
		t.Fatalf("%d seeds: the vectors or corpora were not found", len(seeds))
	}
	for _, seed := range seeds {
		s := serializers[int(seed.pick)%len(serializers)]
		checkSkipAgrees(t, s, seed.b)
		for _, m := range kryoMutations(rng, seed.b, 40) {
			checkSkipAgrees(t, s, m)
		}
	}
}

func FuzzKryoSkip(f *testing.F) {
	for _, seed := range skipSeeds(f) {
		f.Add(seed.pick, seed.b)
	}
	serializers := skipSerializers(f)
	f.Fuzz(func(t *testing.T, pick uint8, b []byte) {
		checkSkipAgrees(t, serializers[int(pick)%len(serializers)], b)
	})
}

// BenchmarkKryoZooValues walks and decodes the zoo job's values (the
// skip walk should allocate next to nothing).
func BenchmarkKryoZooValues(b *testing.B) {
	schemas := zooSchemas(b)
	for _, c := range zooVectors {
		v, _ := hex.DecodeString(c.hex)
		s := zooSerializer(c.class, c.v5, schemas)
		name := strings.ReplaceAll(c.name, " ", "-") + map[bool]string{false: "/kryo2", true: "/kryo5"}[c.v5]
		b.Run("skip/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !skipKryo(wire.NewReader(v, "value", 0), s) {
					b.Fatal("not walked")
				}
			}
		})
		b.Run("decode/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				decodeKryo(wire.NewReader(v, "value", 0), s, false)
			}
		})
	}
}
