// Package arena keeps copies of byte strings in blocks that never move.
//
// Readers that hold a key group's entries until it is written copy their
// bytes somewhere: a slice grown by append moves, so each entry must keep
// its old array alive beside the next, about five times the bytes held at
// append's growth rate for large slices. An Arena's copies stay where
// they were made, and its blocks are reused from key group to key group.
package arena

// BlockSize is the size of an arena's blocks; a longer string gets a
// block of its own.
const BlockSize = 1 << 20

// Arena holds copies of byte strings. The zero value is empty and ready.
type Arena struct {
	blocks [][]byte // in use, the last one being filled
	spare  [][]byte // emptied by Reset, for reuse
}

// Keep copies b into the arena and returns the copy, whose capacity ends
// with it. The copy stays valid until Reset.
func (a *Arena) Keep(b []byte) []byte {
	n := len(a.blocks)
	if n == 0 || cap(a.blocks[n-1])-len(a.blocks[n-1]) < len(b) {
		a.blocks = append(a.blocks, a.block(len(b)))
		n++
	}
	cur := a.blocks[n-1]
	start := len(cur)
	cur = append(cur, b...)
	a.blocks[n-1] = cur
	return cur[start:len(cur):len(cur)]
}

func (a *Arena) block(need int) []byte {
	if need <= BlockSize && len(a.spare) > 0 {
		b := a.spare[len(a.spare)-1]
		a.spare = a.spare[:len(a.spare)-1]
		return b
	}
	return make([]byte, 0, max(need, BlockSize))
}

// Reset empties the arena; what Keep returned before may be overwritten.
// Blocks of BlockSize are kept for reuse, larger ones are let go.
func (a *Arena) Reset() {
	for _, b := range a.blocks {
		if cap(b) == BlockSize {
			a.spare = append(a.spare, b[:0])
		}
	}
	clear(a.blocks)
	a.blocks = a.blocks[:0]
}
