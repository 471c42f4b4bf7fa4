package filesystem

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/stateutil/stateutil/internal/envelope"
	"github.com/stateutil/stateutil/snapshot"
)

// Elements streams the subtask's operator-state elements, state by state in
// descriptor order. The blob's checksum is checked before the first element
// when it is at most verifyLimit bytes, else in a first pass over the file.
func (r *Reader) Elements(ctx context.Context, op *snapshot.Operator, subtask int) snapshot.Elements {
	return func(yield func(snapshot.Element, error) bool) {
		sub, l, err := r.subtask(op, subtask)
		if err != nil {
			yield(snapshot.Element{}, err)
			return
		}
		o := l.Operator
		if o == nil {
			return
		}
		var all []byte
		var f *blobFile
		if o.Data.Size <= verifyLimit {
			all, err = r.readBlob(ctx, &o.Data, "operator state")
		} else if f, err = r.openBlob(ctx, &o.Data, "operator state"); err == nil {
			defer f.close()
			err = verifyStream(ctx, f, o.Data.Size, o.Data.CRC32C)
		}
		if err != nil {
			yield(snapshot.Element{}, err)
			return
		}
		for _, st := range o.States {
			for i, off := range st.Offsets {
				n := st.Lengths[i]
				var v []byte
				if all != nil {
					v = all[off : off+n : off+n]
				} else {
					v = make([]byte, n)
					if _, err := f.ReadAt(v, off); err != nil && err != io.EOF {
						yield(snapshot.Element{}, fmt.Errorf("%q at offset %d: %w", f.name, off, err))
						return
					}
				}
				if !yield(snapshot.Element{State: st.Name, Subtask: sub.Index, Value: v}, nil) {
					return
				}
			}
		}
	}
}

// verifyStream checks the CRC32C of a blob of the given size in chunks.
func verifyStream(ctx context.Context, f *blobFile, size int64, want uint32) error {
	buf := make([]byte, readChunk)
	var crc uint32
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(int64(len(buf)), size-off)
		k, err := f.ReadAt(buf[:n], off)
		if int64(k) < n {
			if err == nil || err == io.EOF {
				return snapshot.Corrupt(f.name, off+int64(k), "truncated operator state")
			}
			return fmt.Errorf("%q at offset %d: %w", f.name, off+int64(k), err)
		}
		crc = crc32.Update(crc, envelope.Castagnoli, buf[:n])
		off += n
	}
	if crc != want {
		return snapshot.Corrupt(f.name, -1, "operator state checksum mismatch: recorded crc32c %08x, computed %08x", want, crc)
	}
	return nil
}
