package rocksdb

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stateutil/stateutil/internal/rocksdbformat/rockstest"
)

func TestCompressible(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	text := bytes.Repeat([]byte(`{"user":"user-17","clicks":42,"page":"/checkout"}`), 2000)
	for _, c := range []struct {
		name   string
		sample []byte
		want   bool
	}{
		{"random bytes", rockstest.RandBytes(rng, 300<<10), false},
		{"repetitive JSON", text, true},
		{"half random, half zeros", append(rockstest.RandBytes(rng, 64<<10), make([]byte, 64<<10)...), true},
		{"too small to judge", rockstest.RandBytes(rng, 1000), true},
	} {
		if got := compressible(c.sample); got != c.want {
			t.Errorf("%s: compressible = %v, want %v", c.name, got, c.want)
		}
	}
}
