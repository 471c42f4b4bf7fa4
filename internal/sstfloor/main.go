// Command sstfloor measures the floor of any conversion to RocksDB on a
// machine: the same sorted pairs a rocksdb snapshot holds, written
// straight into SST files by RocksDB's SstFileWriter with the options
// stateutil's writer uses (internal/rocksdb.NewSSTWriter: its block size
// and checksum, LZ4 where the snapshot's files have it, a new file past
// 4 MiB of pairs, as many subtasks at once as the writer writes), read
// from flat files of pairs, and synced. scripts/bench.sh reports
// `convert --to rocksdb` as a ratio to its time.
//
//	sstfloor extract SNAPSHOT PAIRS   every state's pairs of a rocksdb snapshot, in order, into directory PAIRS (untimed)
//	sstfloor write PAIRS OUT          PAIRS into SST files in OUT (timed)
//
// PAIRS holds a file per subtask: for each state, a header of the
// state's file name and compression ended by a zero byte, then its pairs,
// each as two little-endian uint32 lengths and the bytes; a zero key
// length ends the state.
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/stateutil/stateutil/internal/rocksdb"
)

// fileTarget is where a new SST file begins, as the rocksdb writer's.
const fileTarget = 4 << 20

// writers is how many subtasks are written at once, as migrate writes
// them (maxSubtaskWriters).
const writers = 2

func main() {
	if len(os.Args) != 4 || (os.Args[1] != "extract" && os.Args[1] != "write") {
		fmt.Fprintln(os.Stderr, "usage: sstfloor extract SNAPSHOT PAIRS | sstfloor write PAIRS OUT")
		os.Exit(1)
	}
	var err error
	if os.Args[1] == "extract" {
		err = extract(os.Args[2], os.Args[3])
	} else {
		err = write(os.Args[2], os.Args[3])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sstfloor:", err)
		os.Exit(1)
	}
}

func extract(snap, pairs string) error {
	if err := os.MkdirAll(pairs, 0o755); err != nil {
		return err
	}
	dirs, err := filepath.Glob(filepath.Join(snap, "*", "CURRENT"))
	if err != nil {
		return err
	}
	var n int64
	for _, current := range dirs {
		k, err := extractSubtask(filepath.Dir(current), filepath.Join(pairs, filepath.Base(filepath.Dir(current))))
		if err != nil {
			return err
		}
		n += k
	}
	fmt.Printf("%d pairs\n", n)
	return nil
}

// extractSubtask writes the pairs of the database at dir to the file out.
func extractSubtask(dir, out string) (int64, error) {
	lz4, err := usesLZ4(dir)
	if err != nil {
		return 0, err
	}
	f, err := os.Create(out)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 4<<20)
	db, err := rocksdb.OpenReadOnly(dir, rocksdb.ReadOnlyOptions{})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int64
	for i, cf := range db.ColumnFamilies() {
		fmt.Fprintf(w, "%s-%d %t\x00", filepath.Base(dir), i, lz4)
		it := db.NewIterator(cf, nil, nil)
		for ; it.Valid(); it.Next() {
			putPair(w, it.Key(), it.Value())
			n++
		}
		err := it.Err()
		it.Close()
		if err != nil {
			return 0, err
		}
		putPair(w, nil, nil)
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	return n, f.Close()
}

// usesLZ4 reports whether the SST files of the database at dir are
// LZ4-compressed (the writer chooses by a sample of the state), as
// sst_dump tells; a database of no SST file is not.
func usesLZ4(dir string) (bool, error) {
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil || len(ssts) == 0 {
		return false, err
	}
	props, err := exec.Command("sst_dump", "--file="+ssts[0], "--show_properties").Output()
	if err != nil {
		return false, fmt.Errorf("sst_dump %s: %w", ssts[0], err)
	}
	return strings.Contains(string(props), "compression algo: LZ4"), nil
}

func putPair(w *bufio.Writer, k, v []byte) {
	var head [8]byte
	binary.LittleEndian.PutUint32(head[:4], uint32(len(k)))
	binary.LittleEndian.PutUint32(head[4:], uint32(len(v)))
	w.Write(head[:])
	w.Write(k)
	w.Write(v)
}

func write(pairs, outDir string) error {
	subtasks, err := filepath.Glob(filepath.Join(pairs, "*"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	errs := make([]error, len(subtasks))
	next := make(chan int)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for i := range next {
				errs[i] = writeSubtask(subtasks[i], outDir)
			}
		})
	}
	for i := range subtasks {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return rocksdb.SyncPath(outDir)
}

// writeSubtask writes the states of one subtask's pairs file into SST
// files in outDir and syncs them.
func writeSubtask(pairs, outDir string) error {
	in, err := os.Open(pairs)
	if err != nil {
		return err
	}
	defer in.Close()
	r := bufio.NewReaderSize(in, 4<<20)
	var files []string
	for {
		header, err := r.ReadString(0)
		if err == io.EOF && header == "" {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", pairs, err)
		}
		name, lz4s, _ := strings.Cut(strings.TrimSuffix(header, "\x00"), " ")
		lz4, err := strconv.ParseBool(lz4s)
		if err != nil {
			return fmt.Errorf("%s: header %q", pairs, header)
		}
		written, err := writeState(r, filepath.Join(outDir, name), lz4)
		if err != nil {
			return err
		}
		files = append(files, written...)
	}
	for _, f := range files {
		if err := rocksdb.SyncPath(f); err != nil {
			return err
		}
	}
	return nil
}

// writeState writes one state's pairs from r into SST files named from
// base, a new one past fileTarget bytes, each batch of pairs in one call
// (AddRecords), as the rocksdb writer does.
func writeState(r *bufio.Reader, base string, lz4 bool) ([]string, error) {
	var files []string
	var sst *rocksdb.SSTWriter
	buf := make([]byte, 0, 1<<20)
	var recs []rocksdb.Record
	flush := func() error {
		if len(recs) == 0 {
			return nil
		}
		if sst == nil {
			w, err := rocksdb.NewSSTWriter(base+"-"+strconv.Itoa(len(files)+1)+".sst", lz4)
			if err != nil {
				return err
			}
			sst = w
			files = append(files, w.Path())
		}
		if err := sst.AddRecords(buf, recs); err != nil {
			return err
		}
		buf, recs = buf[:0], recs[:0]
		if sst.Bytes() >= fileTarget {
			return finish(&sst)
		}
		return nil
	}
	var head [8]byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return nil, fmt.Errorf("pairs of %s: %w", base, err)
		}
		kl, vl := int(binary.LittleEndian.Uint32(head[:4])), int(binary.LittleEndian.Uint32(head[4:]))
		if kl == 0 {
			break
		}
		off := len(buf)
		buf = slices.Grow(buf, kl+vl)[:off+kl+vl]
		if _, err := io.ReadFull(r, buf[off:]); err != nil {
			return nil, fmt.Errorf("pairs of %s: %w", base, err)
		}
		recs = append(recs, rocksdb.Record{Off: off, KeyLen: kl, ValueLen: vl})
		if len(buf) >= 1<<20 {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if sst != nil {
		if err := finish(&sst); err != nil {
			return nil, err
		}
	}
	return files, nil
}

func finish(sst **rocksdb.SSTWriter) error {
	w := *sst
	*sst = nil
	defer w.Close()
	if _, err := w.Finish(); err != nil {
		return fmt.Errorf("%s: %w", w.Path(), err)
	}
	return nil
}
