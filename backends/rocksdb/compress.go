package rocksdb

import "compress/flate"

// compressible reports whether LZ4 would pay on blocks like sample.
// RocksDB stores a block that compression shrinks by less than an eighth
// uncompressed, after spending the time to find out; a state whose data
// will not compress (random, encrypted or already compressed values) is
// better written uncompressed from the start. DEFLATE at its fastest
// stands in for LZ4: it compresses at least as well, so data it cannot
// shrink by an eighth LZ4 cannot either.
func compressible(sample []byte) bool {
	const enough = 4 << 10
	if len(sample) < enough {
		return true // too little to judge: RocksDB decides block by block
	}
	sample = sample[:min(len(sample), compressionSample)]
	var out byteCounter
	fw, err := flate.NewWriter(&out, flate.BestSpeed)
	if err != nil {
		return true
	}
	fw.Write(sample)
	fw.Close()
	return int(out) < len(sample)-len(sample)/8
}

// compressionSample is the most data compressible looks at.
const compressionSample = 256 << 10

type byteCounter int

func (c *byteCounter) Write(p []byte) (int, error) {
	*c += byteCounter(len(p))
	return len(p), nil
}
