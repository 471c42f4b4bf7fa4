// Command gentestdata writes stateutil's checked-in fixtures: example
// snapshots and deliberately damaged copies of them (`make testdata`).
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stateutil/stateutil/backends/memory"
	"github.com/stateutil/stateutil/snapshot"
	"github.com/stateutil/stateutil/snapshot/generate"
	"github.com/stateutil/stateutil/storage"
)

func main() {
	dir := flag.String("dir", "testdata", "where to write the fixtures")
	flag.Parse()
	if err := write(context.Background(), *dir); err != nil {
		fmt.Fprintln(os.Stderr, "gentestdata:", err)
		os.Exit(1)
	}
}

func write(ctx context.Context, dir string) error {
	mem := filepath.Join(dir, "memory")
	if err := os.RemoveAll(mem); err != nil {
		return err
	}
	if err := os.MkdirAll(mem, 0o755); err != nil {
		return err
	}
	example := filepath.Join(mem, "example.dump")
	if err := generateTo(ctx, example, generate.Default()); err != nil {
		return err
	}
	wide := generate.Default()
	wide.MaxParallelism, wide.Parallelism, wide.Keys = 4096, 4, 60
	if err := generateTo(ctx, filepath.Join(mem, "maxp4096.dump"), wide); err != nil {
		return err
	}
	good, err := os.ReadFile(example)
	if err != nil {
		return err
	}
	bad, err := invalid(good)
	if err != nil {
		return err
	}
	maps.Copy(bad, damaged(good))
	for name, b := range bad {
		if err := os.WriteFile(filepath.Join(mem, name), b, 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(mem, "example-edits.jsonl"), []byte(exampleEdits), 0o644); err != nil {
		return err
	}
	// A directory where a file is expected.
	d := filepath.Join(mem, "directory.dump")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d, "README"), []byte("a directory, not a memory dump\n"), 0o644)
}

// exampleEdits are records for stateutil load of example.dump, in dump's
// schema: of word-counter, a value changed, a key added, a list and a map
// replaced (the map keeps one entry as it was), two keys deleted (one that
// no state holds), a blank line.
const exampleEdits = `{"operator":"word-counter","state":"count","key":"word-10","key_group":1,"subtask":0,"value":1234}
{"operator":"word-counter","state":"count","key":"word-new","value":7}

{"operator":"word-counter","state":"recent","kind":"list","key":"word-18","value":[1,2,3]}
{"operator":"word-counter","state":"by-source","key":"word-10","value":{"web":13,"app":4}}
{"operator":"word-counter","state":"total-length","key":"word-28","delete":true}
{"operator":"word-counter","state":"total-length","key":"no-such-word","delete":true}
`

func generateTo(ctx context.Context, path string, c generate.Config) error {
	w, err := memory.Create(ctx, storage.Local(), path, snapshot.WriteOptions{Force: true})
	if err != nil {
		return err
	}
	_, err = generate.Write(ctx, w, c)
	return err
}

// damaged derives one broken file per kind of bad input a reader must
// refuse. Offsets follow the envelope: magic 0-7, version 8-11, body
// length 12-19, body, CRC32C.
func damaged(good []byte) map[string][]byte {
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	return map[string][]byte{
		"empty.dump":        {},
		"truncated.dump":    good[:len(good)/2],
		"short-header.dump": good[:10],
		"bad-magic.dump":    edit(func(b []byte) []byte { b[0] = 'X'; return b }),
		"unknown-version.dump": edit(func(b []byte) []byte { // framed as a newer version
			binary.BigEndian.PutUint32(b[8:], 99)
			binary.BigEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], castagnoli))
			return b
		}),
		// In the head (metadata and index): no reader gets past it.
		"bad-checksum.dump": edit(func(b []byte) []byte { b[30] ^= 0x01; return b }),
		// In the last key group: only reading it finds the damage.
		"bad-key-group.dump": edit(func(b []byte) []byte { b[len(b)-8] ^= 0x01; return b }),
		"huge-length.dump": edit(func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[12:], 1<<62)
			return b
		}),
		"trailing-garbage.dump": edit(func(b []byte) []byte { return append(b, "garbage"...) }),
	}
}

// invalid derives one well-framed dump per kind of metadata no reader can
// make sense of (snapshot.Validate), and one that verify finds fault with:
// the example's msgpack body, edited and framed again. Operators of the example: 0 kafka-source (p=2, split
// and union state), 1 word-counter (p=3, five keyed states), 2 rules
// (p=2), 3 sink (p=1); max parallelism 128.
func invalid(good []byte) (map[string][]byte, error) {
	edits := map[string]func(s map[string]any){
		"parallelism-zero.dump":      func(s map[string]any) { operator(s, 1)["parallelism"] = 0 },
		"max-parallelism-zero.dump":  func(s map[string]any) { operator(s, 1)["max_parallelism"] = 0 },
		"max-parallelism-huge.dump":  func(s map[string]any) { operator(s, 1)["max_parallelism"] = 40000 },
		"parallelism-above-max.dump": func(s map[string]any) { operator(s, 1)["max_parallelism"] = 2 },
		"subtask-missing.dump":       func(s map[string]any) { operator(s, 3)["parallelism"] = 2 },
		"key-groups-not-flinks.dump": func(s map[string]any) {
			subtask := operator(s, 1)["subtasks"].([]any)[1].(map[string]any)
			subtask["key_groups"].(map[string]any)["s"] = 44
		},
		"duplicate-operator.dump": func(s map[string]any) { operator(s, 2)["id"] = operator(s, 1)["id"] },
		"duplicate-state.dump": func(s map[string]any) {
			states := operator(s, 1)["keyed_states"].([]any)
			states[1].(map[string]any)["name"] = states[0].(map[string]any)["name"]
		},
		"unknown-state-kind.dump": func(s map[string]any) {
			operator(s, 1)["keyed_states"].([]any)[0].(map[string]any)["kind"] = "valve"
		},
		"unknown-state-mode.dump": func(s map[string]any) {
			operator(s, 0)["operator_states"].([]any)[0].(map[string]any)["mode"] = "SPLIT_DISTRIBUTE"
		},
		"long-name.dump": func(s map[string]any) {
			operator(s, 1)["name"] = strings.Repeat("n", snapshot.MaxStringBytes+1)
		},
	}
	out := map[string][]byte{}
	for name, edit := range edits {
		b, err := edited(good, edit)
		if err != nil {
			return nil, err
		}
		out["invalid-"+name] = b
	}
	// Valid, but with a finding for verify: the metadata names another
	// format than the one the dump is.
	b, err := edited(good, func(s map[string]any) { s["format"] = "filesystem" })
	out["wrong-format.dump"] = b
	return out, err
}

// edited is the dump good with edit applied to its snapshot metadata,
// framed again. The body of a version 2 dump: a 4-byte head length, the
// msgpack head, its CRC32C (of the file up to there), the key groups.
func edited(good []byte, edit func(s map[string]any)) ([]byte, error) {
	headLen := int(binary.BigEndian.Uint32(good[20:]))
	groups := good[24+headLen+4 : len(good)-4]
	var doc map[string]any
	if err := msgpack.Unmarshal(good[24:24+headLen], &doc); err != nil {
		return nil, err
	}
	edit(doc["snapshot"].(map[string]any))
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true) // deterministic, as the memory writer
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	head := buf.Bytes()
	out := append([]byte(nil), good[:20]...)
	binary.BigEndian.PutUint64(out[12:], uint64(4+len(head)+4+len(groups)))
	out = binary.BigEndian.AppendUint32(out, uint32(len(head)))
	out = append(out, head...)
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
	out = append(out, groups...)
	return binary.BigEndian.AppendUint32(out, crc32.Checksum(out, castagnoli)), nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func operator(s map[string]any, i int) map[string]any {
	return s["operators"].([]any)[i].(map[string]any)
}
