package lookup

import (
	"encoding/hex"
	"testing"
)

// appendHexDigits writes what encoding/hex writes.
func FuzzAppendHexDigits(f *testing.F) {
	for _, s := range []string{"", "\x00", "\x09\x0a\x0f\x10", "\xff\xfe\xa0\x9f\x01", "0123456789abcdefghi"} {
		f.Add([]byte(s))
	}
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	f.Add(all)
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := string(appendHexDigits([]byte("x"), b)), "x"+hex.EncodeToString(b); got != want {
			t.Fatalf("%x:\n got %s\nwant %s", b, got, want)
		}
	})
}

func BenchmarkHex(b *testing.B) {
	src := make([]byte, 1000)
	for i := range src {
		src[i] = byte(i * 7)
	}
	dst := make([]byte, 0, 2100)
	b.Run("appendHexDigits", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for range b.N {
			dst = appendHexDigits(dst[:0], src)
		}
	})
	b.Run("encoding/hex", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for range b.N {
			dst = hex.AppendEncode(dst[:0], src)
		}
	})
}
