package typeser

import (
	"encoding/binary"
	"fmt"

	"github.com/stateutil/stateutil/backends/flink/internal/wire"
)

// CopyOptionalMap appends to out the LinkedOptionalMap that r is at (in
// r.Buf), each entry's value frame replaced by what value returns for it
// (its index, name and frame; nil frames stay absent): what writing a
// serializer snapshot again with some of its entries changed takes.
func CopyOptionalMap(r *wire.Reader, out []byte, what string, value func(i int, name string, frame []byte) ([]byte, error)) ([]byte, error) {
	from := r.Off
	at := r.Pos()
	if h := r.I64(what + " header"); r.Err == nil && h != optionalMapHeader {
		r.FailAt(at, "%s: header 0x%x, want 0x%x", what, h, optionalMapHeader)
	}
	n := r.Count32(4, what+" size")
	out = append(out, r.Buf[from:r.Off]...)
	for i := 0; i < n && r.Err == nil; i++ {
		from = r.Off
		name := r.UTF(what + " name")
		if r.Bool(what + " key flag") {
			r.Bytes32(what + " key")
		}
		out = append(out, r.Buf[from:r.Off]...)
		if !r.Bool(what + " value flag") {
			out = append(out, 0)
			continue
		}
		frame := r.Bytes32(what + " value")
		if r.Err != nil {
			break
		}
		nf, err := value(i, name, frame)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", what, name, err)
		}
		out = append(out, 1)
		out = binary.BigEndian.AppendUint32(out, uint32(len(nf)))
		out = append(out, nf...)
	}
	return out, r.Err
}
