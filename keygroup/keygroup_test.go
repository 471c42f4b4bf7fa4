package keygroup

import (
	"errors"
	"math"
	"testing"
	"testing/quick"
	"unicode/utf16"
)

// Vectors from FLINK-FORMATS.md §1 (Java 17 hashCode + Flink's murmurHash).
var vectors = []struct {
	name             string
	hash             int32
	murmur           int32
	kg128, kg4096, k int
}{
	{"Integer 0", HashInt32(0), 593689054, 94, 2526, 31198},
	{"Integer 42", HashInt32(42), 1134849565, 29, 3613, 28189},
	{"Long 1", HashInt64(1), 68075478, 86, 4054, 16342},
	{"Long 1<<32", HashInt64(1 << 32), 68075478, 86, 4054, 16342},
	{"Long -1", HashInt64(-1), 593689054, 94, 2526, 31198},
	{"hello", HashString("hello"), 1715862179, 35, 2723, 31395},
	{"user-1", HashString("user-1"), 1662039673, 121, 1657, 13945},
	{"Flink", HashString("Flink"), 688019071, 127, 1663, 22143},
	{"héllo", HashString("héllo"), 162369042, 18, 3602, 3602},
	{"😀", HashString("😀"), 1934073014, 54, 3254, 7350},
	{"Integer.MIN_VALUE", HashInt32(math.MinInt32), 1718298732, 108, 2156, 10348},
}

func TestFlinkVectors(t *testing.T) {
	hashes := map[string]int32{
		"hello": 99162322, "user-1": -836031825, "Flink": 67968320, "héllo": 103094734, "😀": 1772899,
		"Long 1": 1, "Long 1<<32": 1, "Long -1": 0, "Integer 42": 42, "Integer 0": 0, "Integer.MIN_VALUE": math.MinInt32,
	}
	for _, v := range vectors {
		if want := hashes[v.name]; v.hash != want {
			t.Errorf("%s: hashCode %d, want %d", v.name, v.hash, want)
		}
		if got := Murmur(v.hash); got != v.murmur {
			t.Errorf("%s: murmur %d, want %d", v.name, got, v.murmur)
		}
		for _, c := range []struct{ maxP, want int }{{128, v.kg128}, {4096, v.kg4096}, {32768, v.k}} {
			if got := OfHash(v.hash, c.maxP); got != c.want {
				t.Errorf("%s: key group @%d = %d, want %d", v.name, c.maxP, got, c.want)
			}
		}
	}
}

// Max parallelisms that are no power of two take the remainder, not a mask.
func TestKeyGroupOfOtherMaxParallelism(t *testing.T) {
	for _, v := range vectors {
		for _, maxP := range []int{1, 3, 384, 1000, 32767} {
			if got, want := OfHash(v.hash, maxP), int(v.murmur)%maxP; got != want {
				t.Errorf("%s: key group @%d = %d, want murmur %d mod %d = %d", v.name, maxP, got, v.murmur, maxP, want)
			}
		}
	}
}

func TestEmptyStringHashesToZero(t *testing.T) {
	if HashString("") != 0 {
		t.Fatal(`"".hashCode() must be 0`)
	}
}

func TestHashTextMatchesTypedHash(t *testing.T) {
	for _, c := range []struct {
		typ  KeyType
		text string
		want int32
	}{
		{String, "user-1", -836031825},
		{Int32, "42", 42},
		{Int32, "-2147483648", math.MinInt32},
		{Int64, "4294967296", 1},
		{Int64, "-1", 0},
		{Bytes, "ab", 31*(31*1+97) + 98},
	} {
		got, err := HashText(c.typ, c.text)
		if err != nil || got != c.want {
			t.Errorf("HashText(%s, %q) = %d, %v; want %d", c.typ, c.text, got, err, c.want)
		}
	}
	if _, err := HashText(Int32, "2147483648"); err == nil {
		t.Error("an int out of range must be refused")
	}
	if _, err := ParseKeyType("pojo"); !errors.Is(err, ErrUnknownKeyType) {
		t.Errorf("ParseKeyType(pojo) = %v, want ErrUnknownKeyType", err)
	}
}

func TestDefaultMaxParallelism(t *testing.T) {
	for p, want := range map[int]int{1: 128, 85: 128, 86: 256, 1000: 2048, 21845: 32768, 30000: 32768} {
		if got := DefaultMaxParallelism(p); got != want {
			t.Errorf("DefaultMaxParallelism(%d) = %d, want %d", p, got, want)
		}
	}
}

func TestRangeVectors(t *testing.T) {
	check := func(maxP, p int, want []Range) {
		got := ranges(maxP, p)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("maxP=%d p=%d subtask %d: %v, want %v", maxP, p, i, got[i], want[i])
			}
		}
	}
	check(128, 3, []Range{{0, 42}, {43, 85}, {86, 127}})
	check(10, 4, []Range{{0, 2}, {3, 4}, {5, 7}, {8, 9}})
}

// Ranges partition [0, maxP) exactly, in order, and SubtaskOf agrees with them.
func TestRangesPartitionAndAgreeWithSubtaskOf(t *testing.T) {
	for maxP := 1; maxP <= 1024; maxP++ {
		for p := 1; p <= maxP; p++ {
			next := 0
			for i, r := range ranges(maxP, p) {
				if r.Start != next {
					t.Fatalf("maxP=%d p=%d subtask %d starts at %d, want %d", maxP, p, i, r.Start, next)
				}
				if r.Len() == 0 {
					t.Fatalf("maxP=%d p=%d subtask %d has no key group", maxP, p, i)
				}
				for kg := r.Start; kg <= r.End; kg++ {
					if s := SubtaskOf(kg, maxP, p); s != i {
						t.Fatalf("maxP=%d p=%d: SubtaskOf(%d) = %d, range says %d", maxP, p, kg, s, i)
					}
				}
				next = r.End + 1
			}
			if next != maxP {
				t.Fatalf("maxP=%d p=%d: ranges end at %d", maxP, p, next)
			}
		}
	}
}

func TestKeyGroupAlwaysInBounds(t *testing.T) {
	f := func(code int32, m uint16) bool {
		maxP := int(m)%UpperBoundMaxParallelism + 1
		kg := OfHash(code, maxP)
		return Murmur(code) >= 0 && kg >= 0 && kg < maxP
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 20000}); err != nil {
		t.Fatal(err)
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct{ p, maxP int }{{0, 128}, {-1, 128}, {129, 128}, {1, 0}, {1, 32769}} {
		if err := Check(c.p, c.maxP); !errors.Is(err, ErrInvalidParallelism) {
			t.Errorf("Check(%d, %d) = %v, want ErrInvalidParallelism", c.p, c.maxP, err)
		}
	}
	for _, c := range []struct{ p, maxP int }{{1, 1}, {128, 128}, {32768, 32768}} {
		if err := Check(c.p, c.maxP); err != nil {
			t.Errorf("Check(%d, %d) = %v", c.p, c.maxP, err)
		}
	}
}

// ranges is RangeOf for every subtask.
func ranges(maxParallelism, parallelism int) []Range {
	out := make([]Range, parallelism)
	for i := range out {
		out[i] = RangeOf(maxParallelism, parallelism, i)
	}
	return out
}

// HashString is Java's String.hashCode over the UTF-16 code units of the
// string as Go converts it, surrogate pairs and U+FFFD for invalid UTF-8
// included.
func FuzzHashStringIsOverUTF16(f *testing.F) {
	for _, s := range []string{"", "hello", "héllo", "😀", "a😀b\U0010FFFF", "\xff\xfe", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want int32
		for _, u := range utf16.Encode([]rune(s)) {
			want = 31*want + int32(u)
		}
		if got := HashString(s); got != want {
			t.Fatalf("HashString(%q) = %d, want %d", s, got, want)
		}
	})
}
